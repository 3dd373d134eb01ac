"""promtool and amtool against the generated rules, their unit tests and the routing example."""
import shutil
import subprocess
import sys

import pytest
import yaml

from exporter.alerts import check
from exporter.alerts.alertmanager import config, loopback, yaml_text as am_yaml
from exporter.alerts.render import render, yaml_text
from exporter.alerts.paths import AM_FILE
from exporter.alerts.testcases import write_test_files
from exporter import rules as shipped

pytestmark = pytest.mark.integration
ALERTS_DIR = check.HERE
RULES_FILE = shipped.RULES_FILE


@pytest.fixture(scope="module", autouse=True)
def promtool_test_files():
    """The promtool unit tests are generated from exporter/alerts/testcases.py and exporter/alerts/cadence.py
    (not committed): written fresh for this run."""
    return write_test_files()
PROMTOOL = shutil.which("promtool")
AMTOOL = shutil.which("amtool")
need_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt install prometheus)")
need_amtool = pytest.mark.skipif(AMTOOL is None, reason="amtool not installed (apt install prometheus-alertmanager)")


def run(*cmd, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=120)


@need_promtool
def test_promtool_check_rules_lint_clean():
    p = run(PROMTOOL, "check", "rules", "--lint=all", str(RULES_FILE))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout and "warning" not in (p.stdout + p.stderr).lower()


def promtool_test_parallel(name: str, parts: int = 2) -> list[subprocess.CompletedProcess]:
    """`promtool test rules` on a test file split into `parts` files run side by side: promtool
    evaluates every rule at every tick of each test group, one group after another on one core
    (about 200 groups x 1.3 s here), so the groups are dealt round-robin to one process each."""
    here = ALERTS_DIR / "tests"
    doc = yaml.safe_load((here / name).read_text())
    files = []
    for i in range(parts):
        f = here / name.replace(".test.yaml", f".part{i}.test.yaml")
        f.write_text(yaml.safe_dump(dict(doc, tests=doc["tests"][i::parts]), sort_keys=False))
        files.append(f)
    procs = [subprocess.Popen([PROMTOOL, "test", "rules", f.name], cwd=here, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for f in files]
    out = []
    try:
        for p in procs:
            stdout, _ = p.communicate(timeout=600)
            out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, ""))
    finally:
        for p in procs:
            p.kill()
        for f in files:
            f.unlink(missing_ok=True)
    return out


@need_promtool
def test_promtool_unit_tests_every_alert_fires_and_stays_silent():
    groups = len(yaml.safe_load((ALERTS_DIR / "tests" / "rl-exporter.test.yaml").read_text())["tests"])
    results = promtool_test_parallel("rl-exporter.test.yaml")
    for p in results:
        assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout[-6000:]
    assert groups > 150  # every alert's cases and the recording rules' groups ran, split or not


@need_promtool
def test_promtool_cadence_matrix():
    """Healthy runs at 30 s, 2 min and 10 min steps fire nothing; each warning/critical pathology
    fires after exactly its measured number of steps (exporter/alerts/tests/cadence-steps.json)."""
    files = sorted(p.name for p in (ALERTS_DIR / "tests").glob("cadence-*.test.yaml"))
    assert files == ["cadence-10m.test.yaml", "cadence-2m.test.yaml", "cadence-30s.test.yaml"]
    p = subprocess.run([PROMTOOL, "test", "rules", *files], capture_output=True, text=True,
                       cwd=ALERTS_DIR / "tests", timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]


@need_promtool
def test_cadence_healthy_run_catches_the_nvml_only_memory_rule(tmp_path):
    """The healthy run pre-allocates its KV cache (NVML at 96 %): the old NVML-only rule must page
    on it, so the matrix would have caught the false page."""
    doc = yaml.safe_load((ALERTS_DIR / "tests" / "cadence-30s.test.yaml").read_text())
    doc["tests"] = doc["tests"][:1]
    rules = yaml.safe_load(RULES_FILE.read_text())
    for r in rules["groups"][0]["rules"]:
        if r.get("alert") == "RLGPUMemoryNearFull":
            r["expr"] = ("max by (run, instance, gpu) (hw_gpu_memory_usage_bytes)\n"
                         "/ max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > 0.95")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    doc["rule_files"] = [str(tmp_path / "rules.yaml")]
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(doc))
    p = run(PROMTOOL, "test", "rules", str(tmp_path / "t.yaml"))
    assert p.returncode == 1 and 'alertname="RLGPUMemoryNearFull"' in p.stdout + p.stderr, p.stdout[-2000:]


@need_promtool
def test_promtool_catches_a_wrong_expectation(tmp_path):
    # The harness can fail: flip one expected description and promtool must say so.
    doc = yaml.safe_load((ALERTS_DIR / "tests" / "rl-exporter.test.yaml").read_text())
    doc["rule_files"] = [str(RULES_FILE)]
    doc["tests"] = doc["tests"][:2]
    doc["tests"][0]["alert_rule_test"][0]["exp_alerts"][0]["exp_annotations"]["description"] = "wrong"
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = run(PROMTOOL, "test", "rules", str(f))
    assert p.returncode == 1 and "FAILED" in p.stdout + p.stderr


@need_promtool
@pytest.mark.parametrize("scale", [1 / 120, 1 / 60])
def test_promtool_accepts_overridden_and_time_scaled_rules(tmp_path, scale):
    f = tmp_path / "r.yaml"
    f.write_text(yaml_text(render({"thresholds": {"mfu_low": 0.2}, "alerts": {"RLMFULow": {"for": "2h"}}},
                                  time_scale=scale)))
    p = run(PROMTOOL, "check", "rules", str(f))
    assert p.returncode == 0, p.stdout + p.stderr


@need_amtool
def test_amtool_check_config_example_and_loopback(tmp_path):
    p = run(AMTOOL, "check-config", str(AM_FILE))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3 receivers" in p.stdout and f"{len(config()['inhibit_rules'])} inhibit rules" in p.stdout
    f = tmp_path / "am.yml"
    f.write_text(am_yaml(loopback("http://127.0.0.1:9")))
    p = run(AMTOOL, "check-config", str(f))
    assert p.returncode == 0, p.stdout + p.stderr


@need_amtool
@pytest.mark.parametrize("labels, receiver", [
    (["severity=critical", "run=r1", "alertname=RLRunStalled"], "pagerduty"),
    (["severity=warning", "run=r1", "alertname=RLEntropyCollapse"], "tickets"),
    (["severity=info", "run=r1", "alertname=RLMFULow"], "null"),
    (["run=r1", "alertname=Unlabelled"], "null"),
])
def test_amtool_routes(labels, receiver):
    p = run(AMTOOL, "config", "routes", "test",
            "--config.file=" + str(AM_FILE),
            "--verify.receivers=" + receiver, *labels)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == receiver


@need_amtool
def test_amtool_route_verification_can_fail():
    p = run(AMTOOL, "config", "routes", "test",
            "--config.file=" + str(AM_FILE),
            "--verify.receivers=pagerduty", "severity=warning", "run=r1")
    assert p.returncode != 0


def test_check_cli():
    p = run(sys.executable, "-m", "exporter.alerts", "--check", cwd=ALERTS_DIR.parents[2])
    assert p.returncode == 0, p.stderr
