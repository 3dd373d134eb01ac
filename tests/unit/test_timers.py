"""Phase timers: per-step sums, nesting, decorator, per-token time, and the CUDA
path with a fake event object (no GPU needed): the caller never synchronizes and
a step is published only once its device work completed."""
import threading
import time

import pytest

from exporter import Exporter
from exporter.testing import scrape
from exporter.device_resolver import DeviceResolver
from exporter.timers import PhaseTimers


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def advance(self, dt):
        self.t += dt


class FakeEvent:
    """A CUDA event stand-in: completes when the test says so; synchronizing is an error."""
    made = []

    def __init__(self):
        self.t = None
        self.done = False
        self.queries = 0
        FakeEvent.made.append(self)

    def record(self):
        self.t = FakeEvent.now

    def query(self):
        self.queries += 1
        return self.done

    def elapsed_time(self, end):
        assert self.done and end.done, "elapsed_time before completion would block"
        return (end.t - self.t) * 1000.0

    def synchronize(self):
        raise AssertionError("the timer synchronized on the device")


FakeEvent.now = 0.0


@pytest.fixture
def ex():
    e = Exporter(run="t", framework="verl", serve=False)
    yield e
    e.close()


def make(ex, **kw):
    res = DeviceResolver(ex, autostart=False)
    return PhaseTimers(ex, resolver=res, **kw), res


def gauge(ex, phase, metric="rl_phase_duration_seconds"):
    return ex.store.get(metric, {"phase": phase})


def hist_count(ex, phase):
    return scrape(ex).get(("rl_phase_timing_seconds_count", (("phase", phase),)))


def test_repeated_and_nested_phases_sum_per_step(ex):
    clock = Clock()
    t, res = make(ex, clock=clock)
    with t.timer("step"):
        with t.timer("gen"):
            clock.advance(2.0)
        with t.timer("gen"):            # repeated within the step: sums
            clock.advance(1.0)
        with t.timer("train"):
            clock.advance(4.0)
    res.run_once()
    assert gauge(ex, "gen") is None     # the step is not over until log()
    ex.log({"actor/pg_loss": 1.0}, step=1)
    res.run_once()
    assert gauge(ex, "gen") == 3.0
    assert gauge(ex, "train") == 4.0
    assert gauge(ex, "step") == 7.0
    assert hist_count(ex, "gen") == 1.0  # one observation per phase per step
    # next step replaces the gauge, the histogram gets a second observation
    with t.timer("gen"):
        clock.advance(0.5)
    ex.log({}, step=2)
    res.run_once()
    assert gauge(ex, "gen") == 0.5
    assert hist_count(ex, "gen") == 2.0
    assert scrape(ex)[("rl_phase_timing_seconds_sum", (("phase", "gen"),))] == 3.5


def test_same_phase_nested_counts_once_and_decorator(ex):
    clock = Clock()
    t, res = make(ex, clock=clock)

    @t.timer("fib")
    def fib(n):
        clock.advance(1.0)
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert fib(4) == 3                   # 9 calls, 9 s of fake time
    ex.log({}, step=1)
    res.run_once()
    assert gauge(ex, "fib") == 9.0       # not the sum over every recursion level


def test_outer_step_timer_around_log_stays_in_its_step(ex):
    clock = Clock()
    t, res = make(ex, clock=clock)
    with t.timer("step"):
        with t.timer("gen"):
            clock.advance(1.0)
        ex.log({}, step=1)
        clock.advance(0.25)
    res.run_once()
    assert gauge(ex, "step") == 1.25 and gauge(ex, "gen") == 1.0


def test_per_token_time(ex):
    clock = Clock()
    t, res = make(ex, clock=clock)
    with t.timer("gen") as h:
        clock.advance(2.0)
        h.tokens = 1000                  # known only after generation
    with t.timer("train", tokens=4000):
        clock.advance(1.0)
    with t.timer("ref"):
        clock.advance(1.0)
    ex.log({}, step=1)
    res.run_once()
    assert gauge(ex, "gen", "rl_phase_time_per_token_seconds") == pytest.approx(2.0 / 1000)
    assert gauge(ex, "train", "rl_phase_time_per_token_seconds") == pytest.approx(1.0 / 4000)
    assert gauge(ex, "ref", "rl_phase_time_per_token_seconds") is None


def test_end_step_without_log(ex):
    clock = Clock()
    t, res = make(ex, clock=clock)
    with t.timer("gen"):
        clock.advance(1.0)
    t.end_step()
    res.run_once()
    assert gauge(ex, "gen") == 1.0


def test_cuda_path_never_synchronizes_and_waits_for_completion(ex):
    FakeEvent.made.clear()
    t, res = make(ex, event_factory=FakeEvent)
    FakeEvent.now = 10.0
    with t.timer("gen"):
        FakeEvent.now = 12.5
    with t.timer("train"):
        FakeEvent.now = 13.0
    ex.log({}, step=1)
    FakeEvent.now = 20.0
    with t.timer("gen"):                 # step 2 starts before step 1's events completed
        FakeEvent.now = 21.0
    ex.log({}, step=2)
    assert len(FakeEvent.made) == 6
    for _ in range(3):
        res.run_once()
    assert gauge(ex, "gen") is None      # not complete: nothing published, nothing blocked
    assert all(e.queries > 0 for e in FakeEvent.made[1::2])  # end events polled
    for e in FakeEvent.made[2:4]:        # step 1's train completes first: still waits for gen
        e.done = True
    res.run_once()
    assert gauge(ex, "gen") is None
    for e in FakeEvent.made[:2]:
        e.done = True
    res.run_once()
    assert gauge(ex, "gen") == pytest.approx(2.5)
    assert gauge(ex, "train") == pytest.approx(0.5)
    for e in FakeEvent.made[4:]:
        e.done = True
    res.run_once()
    assert gauge(ex, "gen") == pytest.approx(1.0)  # steps published in order
    assert t.published == 2


def test_caller_cost_is_small_with_events(ex):
    t, res = make(ex, event_factory=FakeEvent)
    t0 = time.perf_counter()
    for _ in range(2000):
        with t.timer("gen"):
            pass
    per = (time.perf_counter() - t0) / 2000
    assert per < 200e-6                  # microseconds: no waiting on the device


def test_threads_sum_into_the_step(ex):
    t, res = make(ex)
    barrier = threading.Barrier(2)

    def work():
        barrier.wait()
        with t.timer("reward"):
            time.sleep(0.05)

    th = [threading.Thread(target=work) for _ in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    ex.log({}, step=1)
    res.run_once()
    assert gauge(ex, "reward") >= 0.099


def test_errors_never_reach_the_caller(ex):
    class Broken:
        def record(self):
            raise RuntimeError("no device")

    t, res = make(ex, event_factory=Broken)
    with t.timer("gen"):
        x = 1
    assert x == 1
    assert ex.stats()["errors"].get("timer", 0) >= 1


def test_exporter_timer_method_end_to_end(ex):
    with ex.timer("gen"):
        time.sleep(0.02)

    @ex.timer("train")
    def train():
        time.sleep(0.01)

    train()
    ex.log({"actor/pg_loss": 0.5}, step=1)
    deadline = time.monotonic() + 5
    while gauge(ex, "train") is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert 0.02 <= gauge(ex, "gen") < 1.0
    assert 0.01 <= gauge(ex, "train") < 1.0
    assert hist_count(ex, "train") == 1.0
