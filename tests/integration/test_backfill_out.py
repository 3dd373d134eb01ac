"""`rl-exporter backfill --out` as a dashboard reads it, with the real engine: the recording
rules and the alert history (ALERTS, ALERTS_FOR_STATE) are in the blocks at the run's times;
the output is atomic (an interrupted backfill leaves --out as it was, a rerun never doubles a
run); SIGTERM leaves no scratch directory behind; a terminal sees every phase."""
from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.test_doctor import REPO, cli, doctor_json, needs_engine

pytestmark = [pytest.mark.integration, pytest.mark.slow, needs_engine]


@pytest.fixture(scope="module")
def nan_spool(tmp_path_factory) -> Path:
    """A run whose loss goes NaN at step 60 (three alerts fire)."""
    path = tmp_path_factory.mktemp("spool") / "nan.jsonl"
    cli("demo", "--scenario", "nan-loss", "--steps", "120", "--onset", "60", "--interval", "0",
        "--port", "0", "--exit-after", "--spool", str(path))
    return path


@pytest.fixture(scope="module")
def long_log(tmp_path_factory) -> Path:
    """A veRL console log long enough to interrupt mid-way (a few seconds of backfill)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_doctor
    path = tmp_path_factory.mktemp("long") / "verl.log"
    bench_doctor.write_log(str(path), 1500, 60)
    return path


def listing(d: Path) -> dict:
    """Every file under d with its size: what a change to d would change."""
    if not d.exists():
        return {}
    return {str(p.relative_to(d)): p.stat().st_size for p in sorted(d.rglob("*"))}


def scratch_left(*dirs: Path) -> list[str]:
    """Scratch directories left in `dirs`, and servers (prometheus, promtool) still running on
    paths under them."""
    left = [str(p) for d in dirs if d.exists() for p in d.iterdir()
            if p.name.startswith((".rlx-", "rlx-"))]
    time.sleep(0.2)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ("prometheus" in cmd or "promtool" in cmd) and any(str(d) in cmd for d in dirs):
            left.append(f"pid {proc.name}: {cmd[:200]}")
    return left


def test_recordings_and_alert_history_answer_at_the_runs_times(tmp_path, nan_spool):
    from exporter.postmortem.backfill import parse_time
    from exporter.postmortem.tools import Prometheus
    rows = doctor_json(str(nan_spool), "--run", "demo-nan")
    fired: dict = {}
    for r in rows:  # each alert's first finding
        if r["alert"] and r["confirmed"] and r["alert"] != "RLRunCrashed":
            fired.setdefault(r["alert"], r)
    assert "RLNonFiniteLoss" in fired, rows
    out = tmp_path / "out"
    s = json.loads(cli("backfill", str(nan_spool), "--run", "demo-nan", "--out", str(out),
                       "--json").stdout)
    assert s["rules"]["recording_rules"] >= 10 and s["rules"]["alert_series"] >= 2, s
    assert set(fired) <= set(s["rules"]["fired"]), (fired, s["rules"])
    start, end = parse_time(s["start"]), parse_time(s["end"])
    with Prometheus(str(out), str(tmp_path)) as prom:
        def instant(q, t):
            return prom.api("/api/v1/query", {"query": q, "time": f"{t:.3f}"})["result"]
        mid = start + (end - start) / 2
        got = instant('run:rl_entropy:avg_recent{run="demo-nan"}', mid)
        assert len(got) == 1 and float(got[0]["value"][1]) > 0, got
        assert instant("run:rl_training_step:changes_w2", mid)
        for name, r in fired.items():
            t = parse_time(r["time"])
            firing = instant(f'ALERTS{{alertname="{name}", alertstate="firing"}}', t)
            assert firing and firing[0]["metric"]["severity"] == r["severity"], (name, firing)
            assert firing[0]["metric"]["run"] == "demo-nan"
            # the history: pending before it fired (for: > 0), active since ALERTS_FOR_STATE
            since = instant(f'ALERTS_FOR_STATE{{alertname="{name}"}}', t)
            active_at = float(since[0]["value"][1])
            assert active_at <= t
            until = parse_time(r["until"])
            assert instant(f'ALERTS{{alertname="{name}", alertstate="firing"}}', until)
            # before it became active there is no ALERTS series for it (lookback aside)
            assert not instant(f'ALERTS{{alertname="{name}"}}', active_at - 600)
        # the recordings that read ALERTS: the overview's alert row
        count = instant('run_severity:alerts_firing:count{severity="critical"}',
                        parse_time(fired["RLNonFiniteLoss"]["time"]) + 60)
        assert count and float(count[0]["value"][1]) >= 1, count


def test_a_rerun_refuses_or_replaces_never_doubles(tmp_path, nan_spool):
    from exporter.postmortem.backfill import blocks_of
    out = tmp_path / "out"
    cli("backfill", str(nan_spool), "--run", "demo-nan", "--out", str(out))
    other = cli("backfill", str(nan_spool), "--run", "other-run", "--out", str(out), "--no-rules")
    before = listing(out)
    n = len(blocks_of(str(out), "demo-nan"))
    p = cli("backfill", str(nan_spool), "--run", "demo-nan", "--out", str(out), check=False)
    assert p.returncode == 1 and "--replace" in p.stderr and "demo-nan" in p.stderr, p.stderr
    assert listing(out) == before
    cli("backfill", str(nan_spool), "--run", "demo-nan", "--out", str(out), "--replace")
    assert len(blocks_of(str(out), "demo-nan")) == n  # replaced, not added beside
    assert len(blocks_of(str(out), "other-run")) >= 1 and other.returncode == 0
    assert not scratch_left(tmp_path)


def _start(args, env=None, **kw):
    e = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "exporter.cli", *args], cwd=REPO, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _when(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("before", ["absent", "other blocks"])
def test_sigint_mid_backfill_leaves_out_unchanged(tmp_path, nan_spool, long_log, before):
    out = tmp_path / "out"
    if before == "other blocks":
        cli("backfill", str(nan_spool), "--run", "demo-nan", "--out", str(out), "--no-rules")
    was = listing(out)
    # interrupted at three moments: parsing, evaluating the rules, a second later
    for wait_for, after in (("om", 0.0), ("data/wal", 0.0), ("data/wal", 1.0)):
        p = _start(["backfill", str(long_log), "--run", "long", "--out", str(out)])

        def reached(wait_for=wait_for):
            return any((w / wait_for).exists() for w in tmp_path.glob(".rlx-backfill-*"))
        assert _when(reached), wait_for
        time.sleep(after)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
        assert p.returncode != 0, wait_for  # it was stopped, not finished
        assert listing(out) == was, wait_for
        assert not scratch_left(tmp_path), wait_for


def test_sigterm_leaves_no_scratch_directory(tmp_path, long_log):
    """doctor and backfill stopped by SIGTERM at many moments (a `timeout`, a pod stopping)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    for delay in (0.3, 0.8, 1.5, 2.5, 4.0, 6.0):
        for args in (["doctor", str(long_log), "--run", "long"],
                     ["backfill", str(long_log), "--run", "long", "--out",
                      str(tmp_path / f"out-{delay}")]):
            p = _start(args, env=env)
            time.sleep(delay)
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=120)
            assert not scratch_left(tmp, tmp_path), (args[0], delay, p.returncode)


def test_every_phase_shows_on_a_terminal(tmp_path, nan_spool):
    """On a terminal (a pty as stderr) doctor and backfill say each phase as it runs; to a
    pipe they say nothing."""
    for args, phases in (
            (["doctor", str(nan_spool), "--run", "demo-nan", "--keep", str(tmp_path / "kept")],
             ["parsing the log", "writing the log's blocks", "starting Prometheus",
              "recording rules", "alerts", "alert history", "findings"]),
            (["backfill", str(nan_spool), "--run", "demo-nan", "--out", str(tmp_path / "out")],
             ["parsing the log", "writing the log's blocks", "starting Prometheus",
              "recording rules", "alerts", "alert history", "moving the blocks into --out"])):
        master, slave = pty.openpty()
        e = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.Popen([sys.executable, "-m", "exporter.cli", *args], cwd=REPO, env=e,
                             stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        seen = b""
        while True:
            r, _, _ = select.select([master], [], [], 1.0)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            elif p.poll() is not None:
                break
        p.communicate(timeout=120)
        os.close(master)
        assert p.returncode == 0, seen.decode(errors="replace")[-2000:]
        text = seen.decode(errors="replace").replace("\x1b[K", "")
        done = [line for line in text.replace("\r", "\n").splitlines() if line.endswith("done")]
        for label in phases:
            assert any(line.startswith(label) for line in done), (label, text[-3000:])
    piped = cli("backfill", str(nan_spool), "--run", "demo-nan", "--out", str(tmp_path / "o2"))
    assert "parsing the log" not in piped.stderr and "\r" not in piped.stderr
