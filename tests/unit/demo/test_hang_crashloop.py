"""The demo's `hang` scenario shows the stacks (a real `rl-exporter demo` process, real HTTP);
`crash-loop` never gets past its checkpoint's step and its time goes to the restart bucket."""
import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from exporter import Exporter
from exporter.demo import SimulatedRun
from exporter.demo.scenarios import CRASH_EVERY

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def test_hang_demo_serves_the_stacks_of_the_stuck_phase():
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, "-m", "exporter.cli", "demo", "--scenario", "hang",
                          "--interval", "0.05", "--onset", "5", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        url = None
        for line in p.stdout:
            if "scrape http" in line:
                url = line.rsplit(" ", 1)[1].strip()[: -len("/metrics")]
                break
        assert url, "the demo printed no URL"
        deadline = time.time() + 30
        st = {}
        while time.time() < deadline:
            st = json.loads(get(url + "/status"))
            if st.get("last_hang"):
                break
            time.sleep(0.25)
        assert st["last_hang"]["reason"] == "phase_hung" and st["last_hang"]["phase"] == "update_actor"
        assert st["state"] == "hung" and st["step"] == 4
        stacks = get(url + "/debug/stacks")
        assert "all_reduce_that_one_rank_never_joins" in stacks and "# last hang capture" in stacks
    finally:
        p.kill()
        p.wait(10)


def run_sim(scenario, steps=40, onset=10):
    """The demo's frames at their simulated pace (each step's own timing_s/step)."""
    sim = SimulatedRun(scenario, onset=onset)
    with Exporter(run=f"demo-{scenario}", framework="auto", serve=False, gpu=False) as ex:
        ts = ex.goodput.start = 1_700_000_000.0
        ts += 120.0  # start-up: model load, engine warm-up
        steps_seen = []
        for step in range(1, steps + 1):
            f = sim.frame(step)
            ts += f["timing_s/step"] + (f.get("timing_s/save_checkpoint") or 0.0) + 0.5
            steps_seen.append(f["training/global_step"])
            for metric, value, labels in sim.side_series(step):  # as the demo writes them
                ex.store.set(metric, value, labels)
            ex.process_now(f, f["training/global_step"], ts)
        snap = ex.goodput.snapshot(now=ts)
    return snap, steps_seen


def test_crash_loop_never_passes_the_checkpoint_and_burns_restart_time():
    snap, steps = run_sim("crash-loop")
    assert max(steps) == 10 + CRASH_EVERY
    assert steps[9:15] == [10, 11, 12, 13, 14, 11]  # saved at 10, resumed at 11 after 14
    b = snap["buckets"]
    assert b["checkpoint"] == pytest.approx(30.0, abs=5)
    # of the 30 steps after the checkpoint, all but the first CRASH_EVERY were redone
    per_step = b["restart"] / (30 - CRASH_EVERY)
    assert 70 < per_step < 90
    assert b["restart"] > b["step"]


def test_healthy_demo_goodput_breakdown():
    snap, _ = run_sim("healthy")
    b = snap["buckets"]
    wall = snap["accounted_seconds"]
    # the demo's phases: old_log_prob 8 s + ref 6 s of ~77 s steps, update_weights 1.2 s
    assert b["logprob_recompute"] / wall == pytest.approx(8 / 77.8, rel=0.1)
    assert b["reference_logprob"] / wall == pytest.approx(6 / 77.8, rel=0.1)
    # the demo is veRL's synchronous trainer (its side series say so): gen is the step, nothing
    # is unclassified or wasted
    assert b["rollout_unclassified"] == b["rollout_wait"] == 0.0 and snap["comparable"]
    assert b["weight_sync"] / wall == pytest.approx(1.2 / 77.8, rel=0.15)
    assert b["startup"] == pytest.approx(120.5, abs=0.01)  # 120 s + 0.5 s gap; the step is step
    assert b["restart"] == b["stalled"] == 0.0
    assert 0.7 < snap["ratio"] < 0.85


def test_start_on_scrape_holds_step_one_until_metrics_is_scraped():
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, "-m", "exporter.cli", "demo", "--interval", "0.05",
                          "--port", "0", "--start-on-scrape"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        line = p.stdout.readline()
        assert "scrape http" in line, line
        url = line.rsplit(" ", 1)[1].strip()
        base = url[: -len("/metrics")]
        time.sleep(1.0)  # 20 steps' worth of time, yet no step may have been logged
        assert json.loads(get(base + "/status")).get("step") in (None, 0)

        def step():
            for ln in get(url).splitlines():
                if ln.startswith("rl_training_step{"):
                    return float(ln.rsplit(" ", 1)[1])
            return None
        assert step() is None, "a step was exported before the first scrape"
        deadline = time.time() + 20
        while time.time() < deadline and not step():
            time.sleep(0.2)
        assert step() and step() >= 1
    finally:
        p.terminate()
        p.wait(timeout=20)
