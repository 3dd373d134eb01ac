"""serve's py-spy capture: each way a dump cannot be taken is counted under its reason and
said once, never raised (the real py-spy where it is installed); the trainer's pid is the
process writing the log, found in /proc."""
from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys

import pytest

from exporter.core.self_metrics import Counts
from exporter.sidecar.pyspy import PySpy, find_writer


def header(pid, tool=""):
    return f"# rl-exporter hang dump: run r, pid {pid}, 2026-01-01T00:00:00Z: no step for 9.0 s (threshold 5.0 s){tool}\n"


@pytest.fixture
def child(tmp_path):
    log = tmp_path / "train.log"
    p = subprocess.Popen([sys.executable, "-c",
                          "import sys, time\nf = open(sys.argv[1], 'a')\nprint('ready', flush=True)\n"
                          "time.sleep(600)\n", str(log)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    yield p, log
    p.kill()
    p.wait(10)


def test_the_trainer_is_the_process_writing_the_log(child, tmp_path):
    p, log = child
    reader = open(log)  # this process reads it (as the sidecar does): not the trainer
    try:
        assert find_writer([str(log)]) == p.pid
        assert find_writer([str(tmp_path / "other.log")]) is None
        assert find_writer([]) is None
    finally:
        reader.close()


def test_no_pyspy_no_pid_counted_and_said_once(tmp_path, caplog, child):
    caplog.set_level(logging.WARNING, logger="rl_exporter.sidecar")
    counts = Counts()
    spy = PySpy(binary=str(tmp_path / "no-such-py-spy"))
    assert spy.dump(counts, header, [str(child[1])]) is None
    assert spy.dump(counts, header, [str(child[1])]) is None
    assert dict(counts.stack_dumps_failed) == {"no_pyspy": 2}
    assert sum("no_pyspy" in r.getMessage() for r in caplog.records) == 1
    real = shutil.which("py-spy") or sys.executable  # the pid checks come before py-spy runs
    # no --pid and nobody writing the log; then a --pid that is gone
    assert PySpy(binary=real).dump(counts, header, [str(tmp_path / "nobody.log")]) is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert PySpy(pid=dead.pid, binary=real).dump(counts, header) is None
    assert counts.stack_dumps_failed["no_pid"] == 2
    names = {s[1] for s in counts.series(None, 0, 0.0)}
    assert "rl_exporter_stack_dumps_failed_total" in names
    assert Counts().snapshot()["stack_dumps_failed"] == {}
    assert "rl_exporter_stack_dumps_failed_total" not in {s[1] for s in Counts().series(None, 0, 0.0)}


needs_pyspy = pytest.mark.skipif(shutil.which("py-spy") is None, reason="py-spy not installed")


@needs_pyspy
def test_timeout_kills_py_spy_and_counts(child):
    counts = Counts()
    # the real py-spy needs tens of milliseconds to attach: a millisecond is past its time
    assert PySpy(pid=child[0].pid, timeout=0.001).dump(counts, header) is None
    assert dict(counts.stack_dumps_failed) == {"timeout": 1}


@needs_pyspy
def test_a_stopped_process_is_an_error_not_a_crash(child):
    p = child[0]
    counts = Counts()
    os.kill(p.pid, signal.SIGSTOP)
    try:
        out = PySpy(pid=p.pid).dump(counts, header)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    # py-spy cannot read a stopped interpreter's version: counted, nothing raised
    assert out is None and sum(counts.stack_dumps_failed.values()) == 1


@needs_pyspy
def test_a_dump_is_capped_and_headed(child):
    p = child[0]
    counts = Counts()
    out = PySpy(pid=p.pid, max_bytes=300).dump(counts, header)
    if out is None and counts.stack_dumps_failed.get("not_permitted"):
        pytest.skip("ptrace is not permitted in this sandbox")
    assert out.startswith(header(p.pid, " [py-spy]"))
    assert out.endswith("... truncated at 300 bytes\n") and not counts.stack_dumps_failed


def test_a_finished_run_is_not_dumped(tmp_path):
    """RLRunStalled's `unless`: a run at its declared total steps that stopped stepping is done;
    one short of it, silent as long, is hung (here: no py-spy, so counted no_pyspy)."""
    from exporter.core.pipeline import Pipeline
    from exporter.core.run import ServedRun
    from exporter.core.thresholds import HangThresholds
    from exporter.sidecar.pyspy import SidecarWatch
    import time
    spy = PySpy(binary=str(tmp_path / "no-such-py-spy"))
    got = {}
    for name, last in (("done", 10), ("hung", 9)):
        p = ServedRun(Pipeline(name))
        watch = SidecarWatch(p, spy, lambda: [], None, thresholds=HangThresholds(stall_floor_s=5.0))
        watch.stop()  # driven by hand below
        p.store.set("rl_config_value", 10.0, {"parameter": "total_training_steps"})
        t0 = time.time()
        for step in range(1, last + 1):
            p.pipeline.process_now({"actor/entropy": 0.5}, step, t0 + step * 0.01)
        assert watch.check(p, now=t0 + 60) == []
        got[name] = dict(p.counts.stack_dumps_failed)
        p.close(timeout=1.0)
    assert got == {"done": {}, "hung": {"no_pyspy": 1}}
