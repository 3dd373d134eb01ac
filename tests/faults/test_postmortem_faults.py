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


# ------------------------------------------------------------------ hostile lines
NESTED = '{"spool":1,"ts":1700000931,"run":"h","framework":"verl","step":31,"data":{"x":' + \
    "[" * 100000 + "]" * 100000 + "}}\n"


def sp_line(n: int) -> str:
    return json.dumps({"spool": 1, "ts": 1.7e9 + 30 * n, "run": "h", "framework": "verl",
                       "step": n, "data": {"actor/entropy": 0.5}}) + "\n"


def jsonl_line(n: int) -> str:
    return json.dumps({"step": n, "data": {"actor/entropy": 0.5}}) + "\n"


def read_all(path, fmt):
    from exporter.postmortem import logs
    stats = logs.LogStats(str(path))
    steps = [fr.step for fr, _, _ in logs.frames(str(path), fmt, stats)]
    return steps, stats


@pytest.mark.parametrize("fmt,line", [("spool", sp_line), ("verl_jsonl", jsonl_line)])
def test_a_line_nested_too_deep_is_one_counted_rejection(tmp_path, fmt, line):
    """A JSON line nesting 10^5 deep raised RecursionError out of the line parser: doctor and
    backfill ended in a traceback for the whole log (the review's nested.spool)."""
    p = tmp_path / "nested.log"
    p.write_text("".join(line(n) for n in range(1, 31)) + NESTED +
                 "".join(line(n) for n in range(32, 61)))
    steps, stats = read_all(p, fmt)
    assert steps == [n for n in range(1, 61) if n != 31]
    assert stats.rejected.get("bad_json") == 1, stats.rejected


def test_an_over_long_line_is_one_counted_rejection_never_held_whole(tmp_path):
    """60 frames, then 200 MB without a newline: doctor peaked at 1.29 GB (the reader held
    the line whole, several times over). Post-mortem reading now has serve's line cap: the
    line is skipped in bounded memory and counted; the frames around it are kept."""
    import tracemalloc
    from exporter.logs.read import MAX_LINE_BYTES
    p = tmp_path / "nonl.log"
    frame = "step:{} - actor/entropy:0.5 - actor/pg_loss:0.1\n"
    with open(p, "w") as f:
        f.write("".join(frame.format(n) for n in range(1, 31)))
        f.write("Z" * (8 * MAX_LINE_BYTES) + "\n")     # over the cap, with its newline
        f.write("".join(frame.format(n) for n in range(31, 61)))
        f.write("Y" * (16 * MAX_LINE_BYTES))           # over the cap, never ended
    tracemalloc.start()
    try:
        steps, stats = read_all(p, "verl_console")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert steps == list(range(1, 61))
    assert stats.rejected.get("line_too_long") == 2, stats.rejected
    assert peak < 4 * MAX_LINE_BYTES, f"peak {peak / 2**20:.1f} MiB"


def test_how_the_log_ends_is_read_under_the_line_cap_too(tmp_path):
    """The review's attack on doctor as a whole: 200 MB without a newline at the end took
    1.26 GB and 19 s after the parse was fixed, in reading how the log ends (its last lines were
    read backwards until enough newlines, the over-long line whole and copied at every block;
    its head by readline() without a limit). Both ends now read in bounded memory, and the
    lines that matter are still there."""
    import tracemalloc
    from exporter.logs.read import MAX_LINE_BYTES
    from exporter.postmortem.ending import head_and_tail
    p = tmp_path / "nonl.log"
    frame = "step:{} - actor/entropy:0.5 - actor/pg_loss:0.1\n"
    with open(p, "w") as f:
        f.write("X" * (8 * MAX_LINE_BYTES) + "\n")     # an over-long first line
        f.write("Total training steps: 60\n")
        f.write("".join(frame.format(n) for n in range(1, 61)))
        f.write("Y" * (24 * MAX_LINE_BYTES))           # over the cap, never ended
    tracemalloc.start()
    try:
        lines = head_and_tail(str(p))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "Total training steps: 60" in lines
    assert frame.format(60).rstrip("\n") in lines[-3:]  # the last line before the cut one
    assert all(len(line) <= MAX_LINE_BYTES for line in lines)
    assert peak < 12 * MAX_LINE_BYTES, f"peak {peak / 2**20:.1f} MiB"


def test_a_line_a_parser_fails_on_costs_that_line_only(monkeypatch):
    """Whatever a parser raises on one line is that line's rejection (`malformed`), said
    once: the lines after it are read, and nothing propagates."""
    from exporter.logs import verl_console
    from exporter.logs.read import Reader
    real = verl_console.VerlConsoleParser.feed

    def feed(self, line):
        if "boom" in line:
            raise IndexError("a parser bug")
        return real(self, line)
    monkeypatch.setattr(verl_console.VerlConsoleParser, "feed", feed)
    r = Reader("verl_console")
    got = []
    for line in ["step:1 - a/b:1.0", "step:2 - boom:1", "step:3 - a/b:1.0"]:
        got += r.feed(line)
    got += r.flush()
    assert [x.frame.step for x in got] == [1, 3]
    assert r.rejected["malformed"] == 1


@needs_promtool
def test_backfill_reads_past_a_nested_line_and_an_unterminated_huge_line(tmp_path):
    p = tmp_path / "h.spool"
    p.write_text("".join(sp_line(n) for n in range(1, 31)) + NESTED +
                 "".join(sp_line(n) for n in range(32, 61)) + "Z" * (3 << 20))
    r = cli("backfill", str(p), "--run", "h", "--out", str(tmp_path / "blocks"), "--json",
            timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert json.loads(r.stdout)["frames"] == 59
