"""doctor's goodput table and its hang stack dumps, with the real engine.

- the goodput table (text, and `goodput` on every --json line) splits the accounted wall time
  of a whole public run (tests/data/runs/) and of a demo spool into buckets that sum to it, and
  each bucket is the value `backfill` wrote for rl_goodput_seconds_total{bucket} (read back
  from the blocks by a real Prometheus);
- the demo's `hang` scenario, spooled, leaves `<spool>.stacks` (the hang watch's captures);
  doctor on that spool puts the capture on the RLRunStalled finding, naming the blocked call.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from exporter.core.goodput import BUCKETS
from exporter.postmortem import tools
from exporter.postmortem.backfill import parse_time
from tests.integration.test_doctor import REPO, cli, doctor_json, needs_engine, spool

pytestmark = [pytest.mark.integration, needs_engine]

REAL_RUN = REPO / "tests" / "data" / "runs" / "verl" / "bihan_dstack-configs_verl_demo_resume.log"


def backfilled_goodput(tmp, log, run) -> tuple[dict, dict]:
    """rl_goodput_seconds_total{bucket} as `backfill` wrote it, queried at the log's end
    (and backfill's summary)."""
    out = tmp / "blocks"
    summary = json.loads(cli("backfill", str(log), "--run", run, "--out", str(out),
                             "--json").stdout)
    end = parse_time(summary["end"]) + 60  # past the last sample (`end` is whole seconds)
    (tmp / "prom").mkdir()
    prom = tools.Prometheus(str(out), str(tmp / "prom")).start()
    try:
        data = prom.api("/api/v1/query", {"query": f'last_over_time(rl_goodput_seconds_total{{run="{run}"}}[1d])',
                                  "time": end})
    finally:
        prom.stop()
    return {r["metric"]["bucket"]: float(r["value"][1]) for r in data["result"]}, summary


def check_table(gp: dict, exported: dict) -> None:
    b = gp["buckets"]
    assert set(b) == set(BUCKETS)
    assert sum(b.values()) == pytest.approx(gp["accounted_seconds"], abs=0.01)
    assert gp["ratio"] == pytest.approx(b["step"] / gp["accounted_seconds"], abs=1e-4)
    assert sum(v for v in gp["share"].values()) == pytest.approx(1.0, abs=1e-3)
    # exactly the backfilled counters: a bucket with time has its series, one without has none
    assert set(exported) == {k for k, v in b.items() if v}
    for k, v in exported.items():
        assert b[k] == pytest.approx(v, abs=0.001), k


def test_goodput_of_a_real_run_is_what_backfill_exports(tmp_path):
    rows = doctor_json(str(REAL_RUN))
    gp = rows[0]["goodput"]
    assert all(r["goodput"] == gp for r in rows)
    exported, summary = backfilled_goodput(tmp_path, REAL_RUN, rows[0]["run"])
    check_table(gp, exported)
    # a veRL run that saves and validates: those buckets have time, the step most of it
    assert gp["buckets"]["checkpoint"] > 0 and gp["buckets"]["validation"] > 0
    assert 0.5 < gp["ratio"] < 0.95
    # one frame per step, the first a step: the accounted time is the span from the first
    # frame to the last (backfill's start and end, whole seconds)
    span = parse_time(summary["end"]) - parse_time(summary["start"])
    assert gp["accounted_seconds"] == pytest.approx(span, abs=1.5)
    text = cli("doctor", str(REAL_RUN)).stdout
    assert f"goodput: {gp['ratio']:.1%} of" in text
    row = next(line.split() for line in text.splitlines() if line.split()[:1] == ["checkpoint"])
    assert row == ["checkpoint", "overhead", f"{gp['buckets']['checkpoint']:.1f}",
                   f"{gp['buckets']['checkpoint'] / gp['accounted_seconds']:.1%}"], row


def test_goodput_of_a_demo_spool_is_what_backfill_exports(tmp_path):
    path = spool(tmp_path, "healthy")
    rows = doctor_json(str(path))
    assert rows[0]["alert"] is None
    gp = rows[0]["goodput"]
    check_table(gp, backfilled_goodput(tmp_path, path, rows[0]["run"])[0])
    # the demo's phases: old_log_prob 8 s (the pi_old pass) and ref 6 s (the reference pass)
    # of ~77 s steps, update_weights 1.2 s: required overhead, none of it waste
    wall = gp["accounted_seconds"]
    assert gp["buckets"]["logprob_recompute"] / wall == pytest.approx(8 / 77, rel=0.1)
    assert gp["buckets"]["reference_logprob"] / wall == pytest.approx(6 / 77, rel=0.1)
    assert gp["buckets"]["weight_sync"] / wall == pytest.approx(1.2 / 77, rel=0.15)


def hang_spool(tmp) -> tuple:
    """`rl-exporter demo --scenario hang --spool`, stopped (SIGINT) once both of the hang
    watch's captures (the stuck phase at 5 s, the stalled run at 10 s) are in `.stacks`."""
    path = tmp / "hang.jsonl"
    stacks = tmp / "hang.jsonl.stacks"
    p = subprocess.Popen([sys.executable, "-m", "exporter.cli", "demo", "--scenario", "hang",
                          "--interval", "0.05", "--onset", "5", "--port", "0", "--spool", str(path)],
                         cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
                         # a Ctrl-C must reach it: a test run started in the background by a
                         # shell has SIGINT ignored, and a child keeps an ignored signal ignored
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 40
        while time.time() < deadline:
            if stacks.exists() and stacks.read_text().count("# rl-exporter hang dump") >= 2:
                break
            time.sleep(0.25)
        p.send_signal(signal.SIGINT)  # the demo closes its exporter: the spool is complete
        p.wait(15)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert stacks.exists(), "the hang watch wrote no stack dump beside the spool"
    return path, stacks


def test_doctor_shows_the_spooled_stack_dump_beside_the_stall(tmp_path):
    path, stacks = hang_spool(tmp_path)
    rows = doctor_json(str(path), "--until", "+2h")
    stalled = [r for r in rows if r["alert"] == "RLRunStalled"]
    assert stalled, [r["alert"] for r in rows]
    dump = stalled[0]["stacks"]
    assert dump["reason"] == "no_step" and dump["file"] == str(stacks) and dump["tool"] == "python"
    main = [t for t in dump["threads"] if t["name"] == "MainThread"]
    assert main, dump["threads"]
    # innermost first, trimmed: the Event.wait, then the collective the trainer is stuck in
    assert any(f.startswith("all_reduce_that_one_rank_never_joins (scenarios.py:")
               for f in main[0]["frames"])
    assert main[0]["frames"][0].startswith("wait (threading.py:")
    assert len(main[0]["frames"]) <= 6 < main[0]["depth"]
    # the dump-taking thread (the hang watch itself) is left out
    assert "rl-exporter-hangwatch" not in {t["name"] for t in dump["threads"]}
    assert all("stacks" not in r for r in rows if r["alert"] not in ("RLRunStalled", "RLPhaseHung"))
    text = cli("doctor", str(path), "--until", "+2h").stdout
    block = text[text.index("RLRunStalled"):]
    assert "stack dump (python, pid" in block and "thread MainThread: wait (threading.py:" in block
    assert "all_reduce_that_one_rank_never_joins" in block
    # --stacks names the file explicitly; a missing one is a clear error
    assert doctor_json(str(path), "--until", "+2h", "--stacks", str(stacks))[0] == rows[0]
    p = cli("doctor", str(path), "--stacks", str(tmp_path / "none.stacks"), check=False)
    assert p.returncode == 1 and "none.stacks" in p.stderr
