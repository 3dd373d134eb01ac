"""The served run (exporter/core/run.py): one object the hook and the sidecar build, whose
companions are made once, on first use, and closed in one order."""
import threading
import time

from exporter import Exporter
from exporter.core.pipeline import Pipeline
from exporter.core.run import ServedRun
from exporter.status import build


def device_threads() -> int:
    return sum(t.name == "rl-exporter-device" for t in threading.enumerate())


def test_companions_are_made_once_whoever_asks_first():
    run = ServedRun(Pipeline("r"))
    start = threading.Barrier(16)
    seen = []

    def ask():
        start.wait()
        seen.append((run.timers, run.live_phases, run.resolver, run.distributions))

    threads = [threading.Thread(target=ask) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(seen) == 16 and len({tuple(map(id, s)) for s in seen}) == 1
    timers, live, resolver, _ = seen[0]
    assert timers.live is live and timers.resolver is resolver  # one of each per run
    run.close(timeout=1.0)


def test_a_run_that_times_nothing_makes_nothing():
    before = device_threads()
    run = ServedRun(Pipeline("r"))
    run.pipeline.start()
    assert run.open_phases() == []
    run.end_timer_window()
    run.close(timeout=1.0)
    assert run.closed and device_threads() == before


def test_close_publishes_the_last_timer_window_then_stops_the_pipeline():
    run = ServedRun(Pipeline("r"))
    run.pipeline.start()
    with run.timers.timer("gen"):
        time.sleep(0.01)
    assert run.store.get("rl_phase_duration_seconds", {"phase": "gen"}) is None  # window open
    run.close(timeout=2.0)
    assert run.store.get("rl_phase_duration_seconds", {"phase": "gen"}) >= 0.01
    assert not run.pipeline.alive and run.stats()["errors"] == {}


def test_status_of_a_bare_served_run_and_of_the_hook_read_the_same_fields():
    bare = ServedRun(Pipeline("r", framework="verl"))
    with Exporter(run="r", framework="verl", serve=False, gpu=False) as ex:
        for run in (bare, ex):
            run.pipeline.process_now({"actor/entropy": 0.5}, 3, time.time())
        a, b = build(bare), build(ex)
    assert a["last_hang"] is None and b["last_hang"] is None
    # each run's own clock readings: state_since is when that run's state began (the two runs
    # began a millisecond or so apart, so equal values were a race: 1 of 2 full runs differed)
    drop = {"time", "seconds_since_last_step", "last_step_timestamp", "rank", "goodput",
            "state_since"}
    assert {k: v for k, v in a.items() if k not in drop} == \
        {k: v for k, v in b.items() if k not in drop}
    assert abs(a["state_since"] - b["state_since"]) < 5, (a["state_since"], b["state_since"])
    assert a["step"] == 3 and a["state"] == "running" and a["goodput"] is not None
    bare.close(timeout=1.0)
