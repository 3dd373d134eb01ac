"""The alert and dashboard tools from a wheel installed outside the checkout: `rl-exporter alerts
render --overrides ... --out ...` works and writes nothing into site-packages, the source-tree
generators say they need a checkout, and `rl-exporter dashboards --check` gives its result (or,
without the dashboards extra, its one-line hint: tests/unit/test_dockerfile.py's isolated venv)."""
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _files(site) -> dict[str, float]:
    base = site / "exporter"
    return {str(p.relative_to(base)): p.stat().st_mtime_ns for p in base.rglob("*")
            if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    # the package as the checkout has it (uncommitted files too, ignored ones not)
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "exporter",
                              "pyproject.toml", "README.md"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    for rel in (r for r in tracked if (ROOT / r).is_file()):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    wheels = tmp / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "--wheel-dir", str(wheels), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    env_dir = tmp / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed",
                        str(next(wheels.glob("rl_exporter-*.whl")))], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    work = tmp / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(*argv):
        return subprocess.run([str(env_dir / "bin" / "rl-exporter"), *argv], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
    where = subprocess.run([str(py), "-c", "import exporter; print(exporter.__file__)"], cwd=work,
                           env=env, capture_output=True, text=True)
    assert where.stdout.startswith(site), where.stdout + where.stderr
    return run, work, Path(site)


def test_render_with_overrides_from_the_wheel(installed):
    run, work, site = installed
    before = _files(site)
    (work / "ov.yaml").write_text("thresholds:\n  mfu_low: 0.25\nalerts:\n  RLMFULow: {for: 3h}\n")
    r = run("alerts", "render", "--overrides", "ov.yaml", "--out", "rules.yaml")
    assert r.returncode == 0, r.stderr
    rules = {x["alert"]: x for x in yaml.safe_load((work / "rules.yaml").read_text())["groups"][0]["rules"]
             if "alert" in x}
    assert "< 0.25" in rules["RLMFULow"]["expr"] and rules["RLMFULow"]["for"] == "3h"
    shipped = yaml.safe_load((ROOT / "exporter/rules/rl-exporter.rules.yaml").read_text())["groups"][0]["rules"]
    assert set(rules) == {x["alert"] for x in shipped if "alert" in x}
    # the generators that write into the source tree refuse, with a clear message
    for argv in (("alerts", "render"), ("alerts", "generate"), ("alerts", "check"), ("dashboards",)):
        r = run(*argv)
        assert r.returncode == 2, (argv, r.stdout, r.stderr)
        assert "installed package" in r.stderr and "Traceback" not in r.stderr, (argv, r.stderr)
    assert _files(site) == before, "a tool wrote into site-packages"


def test_dashboards_check_from_the_wheel(installed):
    run, work, site = installed
    r = run("dashboards", "--check")
    try:
        import grafana_foundation_sdk  # noqa: F401
    except ImportError:
        assert r.returncode == 1 and r.stderr.strip().endswith("pip install 'rl-exporter[dashboards]'")
        return
    assert r.returncode == 0, r.stderr
    assert "ok: 6 dashboards" in r.stderr and "names only" in r.stderr
    r = run("dashboards", "--out", "dash", "--configmaps", "cm")
    assert r.returncode == 0, r.stderr
    assert (work / "dash" / "json" / "rl-overview.json").exists()
    assert (work / "cm" / "rl-overview.yaml").exists()
