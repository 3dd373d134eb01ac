"""doctor's reader of `<spool>.stacks` (exporter/postmortem/stacks.py): the hook's own dump
format and py-spy's, read back and put on the finding of the same kind, nearest in time."""
from __future__ import annotations

import threading

from exporter.postmortem.evaluate import Finding
from exporter.postmortem.stacks import attach, read, text
from exporter.stacks import dump_stacks

PYSPY = """Process 4242: python3 train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    Condition.wait (threading.py:327)
    Event.wait (threading.py:629)
    all_reduce (distributed_c10d.py:2050)
    update_actor (trainer.py:88)
    fit (trainer.py:40)
    train_step (trainer.py:31)
    run (trainer.py:20)
    <module> (train.py:5)
Thread 4250 (idle): "rl-exporter-worker"
    wait (threading.py:331)
"""


def blocked_here(started, release):
    started.set()
    release.wait()


def finding(alert, start, **labels):
    return Finding(alert, "critical", {"run": "r", **labels}, start, start + 600, 1.0, 4, "s",
                   "n", 0)


def test_both_formats_read_and_attached_by_kind_and_time(tmp_path):
    started, release = threading.Event(), threading.Event()
    t = threading.Thread(target=blocked_here, args=(started, release), name="trainer-loop")
    t.start()
    started.wait(5)
    try:
        ours = dump_stacks("# rl-exporter hang dump: run r, pid 11, 2026-01-01T00:10:00Z: phase "
                           "'update_actor' open 700.2 s (threshold 600.0 s)\n")
    finally:
        release.set()
        t.join(5)
    spy = ("# rl-exporter hang dump: run r, pid 4242, 2026-01-01T01:00:00Z: no step for 1900.0 s "
           "(threshold 1800.0 s) [py-spy]\n" + PYSPY)
    other = spy.replace("run r,", "run other,")
    path = tmp_path / "run.jsonl.stacks"
    path.write_text(ours + "\n" + spy + "\n" + other + "\n")
    caps = read(str(path))
    assert [(c["run"], c["reason"], c["tool"], c["phase"]) for c in caps] == [
        ("r", "phase_hung", "python", "update_actor"), ("r", "no_step", "py-spy", None),
        ("other", "no_step", "py-spy", None)]
    (loop,) = [th for th in caps[0]["threads"] if th["name"] == "trainer-loop"]
    assert loop["frames"][0].startswith("wait (threading.py:")
    assert any(f.startswith("blocked_here (test_stacks.py:") for f in loop["frames"])
    # the dump-taking thread (this one, here) is left out of the hook's format
    assert all(th["name"] != threading.current_thread().name for th in caps[0]["threads"])
    main = caps[1]["threads"][0]
    assert main["name"] == "MainThread" and main["state"] == "idle" and main["depth"] == 8
    assert main["frames"] == ["Condition.wait (threading.py:327)", "Event.wait (threading.py:629)",
                              "all_reduce (distributed_c10d.py:2050)", "update_actor (trainer.py:88)",
                              "fit (trainer.py:40)", "train_step (trainer.py:31)"]
    assert caps[1]["threads"][-1]["name"] == "rl-exporter-worker"  # ours last
    t0 = caps[0]["captured_at"]
    hung, stalled, other_alert = (finding("RLPhaseHung", t0 + 2900, phase="update_actor"),
                                  finding("RLRunStalled", t0 + 200), finding("RLRewardCollapse", t0))
    assert attach([hung, stalled, other_alert], caps, "r") == 2
    # each gets the dump of its own kind, though the other kind's is nearer in time
    assert hung.stacks is caps[0]      # its phase
    assert stalled.stacks is caps[1]   # this run's (not run other's)
    assert other_alert.stacks is None
    lines = text(caps[1])
    assert "stack dump (py-spy, pid 4242)" in lines[0]
    assert lines[1].startswith("          thread MainThread (idle): Condition.wait (threading.py:327)")
    assert lines[1].endswith("... 2 more") and "1 rl-exporter threads" in lines[-1]
