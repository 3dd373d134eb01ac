"""doctor says how the run ended, with a real Prometheus evaluating the shipped rules: a demo
trainer that raises (its spool's crashed event) is one RLRunCrashed naming the exception; one that
closes cleanly is finished; a public log cut short at step 202 of 5,100 is never plain "healthy";
a public veRL log that dies saving its last checkpoint is RLRunCrashed after step 699 of 700.

Run: python -m pytest -q tests/integration/test_doctor_endings.py   (about 30 s)
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("promtool")),
                                 reason="needs prometheus and promtool")]

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tests" / "data" / "runs"


def cli(*args, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "exporter.cli", *args], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, f"{args}: exit {p.returncode}\n{p.stderr[-3000:]}"
    return p


def doctor(path, *extra) -> tuple[str, list[dict]]:
    text = cli("doctor", str(path), *extra).stdout
    rows = [json.loads(line) for line in cli("doctor", str(path), "--json", *extra).stdout.splitlines()]
    return text, rows


def demo_spool(tmp: Path, scenario: str, *args) -> Path:
    path = tmp / f"{scenario}.jsonl"
    cli("demo", "--scenario", scenario, "--interval", "0", "--port", "0", "--spool", str(path),
        *args, check=False)
    return path


def test_a_trainer_that_raises_is_one_crash_naming_the_exception(tmp_path):
    # the demo's trainer dies of an uncaught exception at step 40: the hook writes the crash
    path = demo_spool(tmp_path, "crash", "--steps", "80", "--onset", "40")
    text, rows = doctor(path)
    assert "ended: crashed at step 39: RuntimeError: CUDA out of memory" in text, text
    crashes = [r for r in rows if r["alert"] == "RLRunCrashed"]
    assert len(crashes) == 1, rows
    c = crashes[0]
    assert c["severity"] == "critical" and c["step"] == 39
    assert c["labels"]["exception"] == "RuntimeError"
    assert c["summary"].startswith("the run crashed after step 39: RuntimeError: CUDA out of memory")
    assert c["ending"]["state"] == "crashed"
    # the runbook's own next checks for the live alert
    assert c["next"].startswith("first the exception and the frames above it")


def test_a_trainer_that_closes_is_finished_and_healthy(tmp_path):
    path = demo_spool(tmp_path, "healthy", "--steps", "60", "--exit-after")
    text, rows = doctor(path)
    assert "ended: finished at step 60 (the exporter's finished event)" in text, text
    assert "\nverdict: healthy: none of the " in text
    assert rows == [r for r in rows if r["alert"] is None] and rows[0]["ending"]["state"] == "finished"
    assert rows[0]["healthy"] is True and rows[0]["verdict"] == "healthy"


def test_a_log_cut_short_is_never_plain_healthy(tmp_path):
    log = RUNS / "llamafactory" / "hykun1989_360-LLaMA-Factory-grpo_dpo_grpo_loss_r1_32b.jsonl"
    text, rows = doctor(log)
    assert "ended: cut short: the log ends at step 202 of 5,100" in text, text
    assert "verdict: healthy: " not in text
    if rows[0]["alert"] is None:
        assert "\nverdict: healthy as far as the log goes (it is cut short): none of the " in text
        assert rows[0]["healthy"] is False and rows[0]["verdict"] == "healthy_so_far"
    assert {r["ending"]["state"] for r in rows} == {"cut short"}
    html = tmp_path / "report.html"
    p = cli("doctor", str(log), "--html", str(html), check=False)
    if p.returncode == 0:   # the report extra (matplotlib) is installed
        page = html.read_text()
        assert "cut short: the log ends at step 202 of 5,100" in page
        assert "verdict: healthy: " not in page


def test_a_public_verl_log_that_dies_saving_its_checkpoint(tmp_path):
    log = RUNS / "verl" / "uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-700step-ckpt-crash.log"
    text, rows = doctor(log)
    assert "ended: crashed at step 699 of 700: RuntimeError: [enforce fail" in text, text
    crashes = [r for r in rows if r["alert"] == "RLRunCrashed"]
    assert len(crashes) == 1 and crashes[0]["step"] == 699, crashes
