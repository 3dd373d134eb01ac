"""`serve`'s hang forensics for an unmodified trainer: a real child Python process writes its
veRL console log, then blocks in a known function; the sidecar follows the log, sees the run
stall (the RLRunStalled condition, scaled down to seconds) and takes the trainer's stacks
with the real py-spy (`pip install py-spy`), found by the log file the child has open.

Where ptrace is not permitted here, the dump test skips with that reason; the denial itself
is proven on every root sandbox by running the same py-spy as another user (setpriv): the
dump is counted as not_permitted, said once, and nothing breaks."""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from exporter.core.thresholds import HangThresholds
from exporter.postmortem import stacks as pm_stacks
from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec

pytestmark = [pytest.mark.integration]

CHILD = '''
import sys, threading
log = open(sys.argv[1], "a", buffering=1)
for step in (1, 2, 3):
    log.write(f"step:{step} - actor/entropy:0.5 - timing_s/step:0.1\\n")
def stuck_in_collective(event):
    event.wait()  # a collective a dead peer never joins
print("ready", flush=True)
stuck_in_collective(threading.Event())
'''
FAST = HangThresholds(stall_floor_s=2.0)  # the stall condition, in seconds instead of 30 min


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


@pytest.fixture
def trainer(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    log = tmp_path / "train.log"
    p = subprocess.Popen([sys.executable, str(script), str(log)], stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        yield p, log
    finally:
        p.kill()
        p.wait(10)


def serve(tmp_path, log, py_spy, **kw):
    sc = Sidecar([SourceSpec(f"verl_console:{log}", "trainer")], run="trainer", port=0,
                 gpu=False, spool_out=str(tmp_path / "spool.jsonl"),
                 stack_dumps={"pid": None, "py_spy": py_spy, "thresholds": FAST, **kw})
    t = threading.Thread(target=sc.run_forever, daemon=True)
    t.start()
    return sc, t


def wait_for(pred, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return False


def stop(sc, t):
    sc.stop()
    t.join(10)
    sc.close()


def test_serve_dumps_the_stalled_trainer_with_py_spy(tmp_path, trainer):
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        pytest.skip("py-spy not installed (pip install py-spy)")
    p, log = trainer
    probe = subprocess.run([py_spy, "dump", "--pid", str(p.pid)], capture_output=True, text=True,
                           timeout=30)
    if probe.returncode != 0 and "permission" in (probe.stderr + probe.stdout).lower():
        pytest.skip("ptrace is not permitted in this sandbox: " + probe.stderr.strip()[:200])
    sc, t = serve(tmp_path, log, py_spy)
    try:
        assert wait_for(lambda: any(q.hang_watch is not None and q.hang_watch.captured
                                    for q in sc.runs.values()))
        base = sc.url[: -len("/metrics")]
        body = get(base + "/debug/stacks")
        assert "# last hang capture of run trainer" in body and "[py-spy]" in body
        assert "stuck_in_collective (child.py:" in body
        # once per hang: another few checks of the same stall take no second dump
        time.sleep(2.5)
        (pipe,) = sc.runs.values()
        assert pipe.hang_watch.dumps == 1
        status = json.loads(get(base + "/status"))
        assert status["last_hang"]["reason"] == "no_step" and status["state"] == "stalled"
        assert "rl_exporter_stack_dumps_failed_total" not in get(sc.url)
    finally:
        stop(sc, t)
    # spooled beside the spool, read back by doctor's reader: the trainer's pid, innermost first
    (cap,) = pm_stacks.read(str(tmp_path / "spool.jsonl.stacks"))
    assert cap["tool"] == "py-spy" and cap["reason"] == "no_step" and cap["pid"] == p.pid
    assert cap["run"] == "trainer"
    (main,) = [th for th in cap["threads"] if th["name"] == "MainThread"]
    assert main["frames"][0].startswith("Condition.wait (threading.py:")
    assert any(f.startswith("stuck_in_collective (child.py:") for f in main["frames"])


def test_ptrace_denied_is_counted_not_permitted_once(tmp_path, trainer, caplog, monkeypatch):
    real = shutil.which("py-spy")
    if real is None:
        pytest.skip("py-spy not installed (pip install py-spy)")
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run py-spy as another user")
    # the real py-spy, as user nobody (who may not ptrace root's trainer); under /root nobody
    # cannot reach the binary, so a copy
    binary = tmp_path / "bin" / "py-spy-real"
    binary.parent.mkdir()
    shutil.copy(os.path.realpath(real), binary)
    binary.chmod(0o755)
    tmp_path.chmod(0o755)
    wrapper = tmp_path / "bin" / "py-spy"
    wrapper.write_text(f"#!/bin/sh\nexec setpriv --reuid 65534 --regid 65534 --clear-groups "
                       f"{binary} \"$@\"\n")
    wrapper.chmod(0o755)
    p, log = trainer
    caplog.set_level(logging.WARNING, logger="rl_exporter.sidecar")
    monkeypatch.setenv("RL_EXPORTER_DEBUG_TOKEN", "s3cret")  # then a bearer token, from anywhere
    sc, t = serve(tmp_path, log, str(wrapper))
    try:
        assert wait_for(lambda: any(q.counts.stack_dumps_failed for q in sc.runs.values()))
        time.sleep(2.5)  # the same stall: not tried again
        (pipe,) = sc.runs.values()
        assert dict(pipe.counts.stack_dumps_failed) == {"not_permitted": 1}
        assert not pipe.hang_watch.captured
        assert 'rl_exporter_stack_dumps_failed_total{reason="not_permitted",run="trainer"} 1.0' \
            in get(sc.url)
        route = sc.url[: -len("/metrics")] + "/debug/stacks"
        with pytest.raises(urllib.error.HTTPError) as e:
            get(route)
        assert e.value.code == 401
        req = urllib.request.Request(route, headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert "no hang captured yet" in r.read().decode()
    finally:
        stop(sc, t)
    said = [r for r in caplog.records if "stack_dumps_failed_total" in r.getMessage()]
    assert len(said) == 1 and "CAP_SYS_PTRACE" in said[0].getMessage()
    assert not (tmp_path / "spool.jsonl.stacks").exists()
