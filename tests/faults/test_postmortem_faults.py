"""doctor and backfill under the reliability review's attacks: a log whose clock jumps
ten years, and SIGTERM mid-run (no temporary directory left behind)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")


def spool(path: Path, ts: list[float]) -> None:
    with open(path, "w") as f:
        for i, t in enumerate(ts, 1):
            f.write(json.dumps({"spool": 1, "ts": t, "run": "j", "framework": "verl", "step": i,
                                "data": {"actor/entropy": 0.5, "actor/pg_loss": 0.1}}) + "\n")


def cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "exporter.cli", *args], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})),
                          **kw)


@needs_promtool
@pytest.mark.parametrize("jump", [10 * 365 * 86400.0, 1e12])
def test_backfill_finishes_when_one_timestamp_jumps(tmp_path, jump):
    """One `ts` +10 years (or at 1e12) made 44,000 two-hour blocks: backfill never
    finished. The jump is closed up to one step and said in the output."""
    t0 = 1.7e9
    ts = [t0, t0 + 60, t0 + 120 + jump, t0 + 180 + jump] if jump < 1e11 else \
        [t0, t0 + 60, jump, jump + 60]
    spool(tmp_path / "jump.jsonl", ts)
    r = cli("backfill", str(tmp_path / "jump.jsonl"), "--run", "j", "--out",
            str(tmp_path / "blocks"), "--json", "--no-rules", timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(r.stdout)
    assert s["frames"] == 4 and s["blocks"] <= 2, s
    assert "jump" in s["clock_source"], s["clock_source"]
    span = (s["end"], s["start"])
    assert span[0][:4] == span[1][:4], span   # the run stays within its own year


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed")
@needs_promtool
@pytest.mark.parametrize("verb,sig", [("backfill", signal.SIGTERM), ("backfill", signal.SIGINT),
                                      ("doctor", signal.SIGTERM)])
def test_killed_backfill_leaves_no_temporary_directory(tmp_path, verb, sig):
    """SIGTERM (a `timeout`, a pod stopping) left 13-76 MB temporary directories behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with open(tmp_path / "train.log", "w") as f:
        for s in range(1, 40001):
            f.write(f"step:{s} - actor/entropy:0.5 - actor/pg_loss:0.1 - timing_s/step:60\n")
    out = ["--out", str(tmp_path / "blocks")] if verb == "backfill" else []
    p = subprocess.Popen([sys.executable, "-m", "exporter.cli", verb,
                          str(tmp_path / "train.log"), "--run", "k", *out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp)))
    # doctor's scratch directory is in TMPDIR, backfill's beside --out (same file system: the
    # blocks move into --out by rename)
    def scratch():
        return list(tmp.iterdir()) + list(tmp_path.glob(".rlx-backfill-*"))
    deadline = time.monotonic() + 60
    while not scratch() and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)                         # well inside the work
    assert p.poll() is None, "backfill ended before the signal"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0
    assert scratch() == [], (scratch(), err[-1000:])
    assert not (tmp_path / "blocks").exists()  # an interrupted backfill writes no --out
