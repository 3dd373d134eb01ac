"""`rl-exporter baseline` and `doctor --baseline/--compare` end to end: real veRL runs, doctor's
real Prometheus, and a real Prometheus serving a backfilled run for `--prometheus`."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.prom import Prometheus

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
HEALTHY = DATA / "runs" / "verl" / "jianghoucheng_agent_on_policy_distillation_ry3hgbx5.log"
FAILED = DATA / "runs" / "verl" / "jianghoucheng_agent_on_policy_distillation_gjvwlq13_collapse.log"
needs_engine = pytest.mark.skipif(
    not (shutil.which("prometheus") and shutil.which("promtool")),
    reason="needs Debian prometheus (promtool ships with it): apt install prometheus")


def cli(*args, check=True):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "exporter.cli", *map(str, args)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, f"{args}: exit {p.returncode}\n{p.stderr[-3000:]}"
    return p


@needs_engine
def test_doctor_baseline_and_compare_report_where_the_failed_run_left(tmp_path):
    base = tmp_path / "opd.yaml"
    out = cli("baseline", HEALTHY, "--out", base, "--recipe", "opd")
    assert "series banded from 1 run(s)" in out.stdout
    rows = [json.loads(x) for x in cli("doctor", FAILED, "--baseline", base, "--json").stdout.splitlines()]
    own = [r for r in rows if r["alert"] != "RLOutsideBaseline"]
    ours = [r for r in rows if r["alert"] == "RLOutsideBaseline"]
    # doctor's own findings first, exactly as without a baseline (among them the corpus'
    # RLRewardCollapse@45 and RLGradNormExplosion@45), then the baseline's, by first step
    plain = [json.loads(x) for x in cli("doctor", FAILED, "--json").stdout.splitlines()]
    assert [(r["alert"], r["step"]) for r in own] == [(r["alert"], r["step"]) for r in plain]
    assert {("RLRewardCollapse", 45), ("RLGradNormExplosion", 45)} <= {(r["alert"], r["step"]) for r in own}
    assert rows.index(ours[0]) > rows.index(own[-1])
    assert [r["step"] for r in ours] == sorted(r["step"] for r in ours)
    for r in ours:
        assert r["severity"] == "warning" and r["metric"].startswith("rl_") and r["baseline"] == "opd"
        assert len(r["band"]) == 2 and not r["band"][0] <= r["value"] <= r["band"][1]
    # the failed run was a 100x KL coefficient (0.05 against the healthy run's 0.0005): at step 1
    kl = next(r for r in ours if r["metric"] == "rl_kl_coefficient")
    assert kl["step"] == 1 and kl["value"] == pytest.approx(0.05)
    entropy = next(r for r in ours if r["metric"] == "rl_entropy")
    assert 35 <= entropy["step"] <= 45  # measured: 40, as the run's response length collapses
    # --compare: the same findings against the one reference log, in doctor's text style
    text = cli("doctor", FAILED, "--compare", HEALTHY).stdout
    assert "against baseline" in text and f"timeline: {ours[0]['metric']} left its band at step 1" in text
    assert text.count("RLOutsideBaseline") == len(ours)


@needs_engine
def test_doctor_does_not_judge_a_run_against_another_frameworks_recipe():
    """A TRL run --compare'd with a veRL run: doctor's own findings as ever, then one line saying
    the baseline was not compared and why; --force-baseline compares it anyway."""
    trl = DATA / "trl" / "entropy_collapse.spool"
    rows = [json.loads(x) for x in cli("doctor", trl, "--compare", HEALTHY, "--json").stdout.splitlines()]
    plain = [json.loads(x) for x in cli("doctor", trl, "--json").stdout.splitlines()]
    assert rows[:-1] == plain and "baseline" not in plain[-1]
    assert rows[-1]["compared"] is False and rows[-1]["alert"] is None
    assert rows[-1]["baseline_mismatch"] == [{"field": "framework", "recipe": "verl", "run": "trl",
                                              "blocking": True}]
    forced = cli("doctor", trl, "--compare", HEALTHY, "--force-baseline").stdout
    assert "not the recipe's identity (compared: --force-baseline): framework: the run's trl" in forced
    assert "RLOutsideBaseline" in forced


def test_bad_baseline_file_fails_before_doctor_runs(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("groups: []\n")
    r = cli("doctor", FAILED, "--baseline", p, check=False)
    assert r.returncode == 1 and "not an rl-exporter baseline" in r.stderr


@needs_engine
def test_baseline_from_a_real_prometheus_equals_the_one_from_the_log(tmp_path):
    spool = DATA / "trl" / "healthy.spool"
    cli("backfill", spool, "--run", "trl-healthy", "--out", tmp_path / "data", "--clock", "fixed",
        "--step-seconds", "60")
    prom = Prometheus(tmp_path, targets=[], args=["--storage.tsdb.retention.time=100y"])
    try:
        cli("baseline", "--prometheus", prom.url, "--run", "trl-healthy", "--lookback", "3650d",
            "--out", tmp_path / "prom.yaml")
        missing = cli("baseline", "--prometheus", prom.url, "--run", "nope", "--lookback", "3650d",
                      "--out", tmp_path / "x.yaml", check=False)
    finally:
        prom.stop()
    assert missing.returncode == 1 and "no rl_training_step for run 'nope'" in missing.stderr
    cli("baseline", spool, "--out", tmp_path / "file.yaml")
    a = yaml.safe_load((tmp_path / "prom.yaml").read_text())
    b = yaml.safe_load((tmp_path / "file.yaml").read_text())
    assert a["bands"] and "rl_entropy" in a["bands"]
    assert a["bands"] == b["bands"] and a["identity"] == b["identity"]
    assert a["runs"][0]["steps"] == [1, 300]
