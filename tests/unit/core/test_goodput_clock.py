"""The goodput ledger against a wall clock that jumps and steps that jump: intervals are
monotonic time, and a step absurdly far past the last one is a counted rejection, not a
restart booked for the rest of the run (the reliability review's goodput_clock.py and
goodput_poison.py)."""
import time

import pytest

from exporter import Exporter
from exporter.core.goodput import Goodput
from exporter.core.store import Store


class Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def test_a_wall_clock_step_is_not_time_spent():
    """NTP +1 h, then -2 h, then +1 h back to true time, while steps come every 10 s: the
    wall clock booked 7,200 s as stalled; the monotonic stamps book 60 s, all step time."""
    wall, mono = Clock(1.7e9), Clock(500.0)
    gp = Goodput(Store("c"), wall=wall, mono=mono)
    jumps = {2: 3600.0, 4: -7200.0, 6: 3600.0}
    for step in range(1, 8):
        wall.t += 10.0 + jumps.get(step, 0.0)
        mono.t += 10.0
        gp.on_step(step, wall.t, None, mono.t)
    assert gp.totals["stalled"] == 0.0
    assert sum(gp.totals.values()) == pytest.approx(70.0)   # startup 10 s + 6 steps
    assert gp.totals["step"] == pytest.approx(60.0)
    wall.t += 3600.0                                        # and nothing open is inflated
    mono.t += 5.0
    assert gp.snapshot()["unaccounted_seconds"] == pytest.approx(5.0)


def test_recorded_frames_and_a_restored_step_use_their_wall_times():
    """Replays carry recorded times and no monotonic stamp; the first interval after a
    restart spans two processes: both are measured on the wall clock."""
    wall, mono = Clock(2e9), Clock(10.0)
    gp = Goodput(Store("r"), wall=wall, mono=mono)
    gp.restore(7, 1.7e9)
    gp.on_step(8, 1.7e9 + 40.0, None, 11.0)                 # restart downtime: 40 s of wall
    gp.on_step(9, 1.7e9 + 1e6, None, 21.0)                  # then monotonic: 10 s
    gp.on_step(10, 1.7e9 + 1e6 + 30.0)                      # no stamp: wall again, 30 s
    assert sum(gp.totals.values()) == pytest.approx(80.0)


def test_the_hook_books_a_shifted_wall_clock_as_nothing(monkeypatch):
    """The review's script, through Exporter.log(): time.time() shifted in-process."""
    import exporter.hook
    real = time.time
    off = [0.0]
    monkeypatch.setattr(exporter.hook.time, "time", lambda: real() + off[0])
    t0 = time.monotonic()
    with Exporter(run="gpc", framework="verl", serve=False, gpu=False) as ex:
        for step, shift in enumerate([0, 0, 3600, 0, -7200, 0, 3600, 0], 1):
            off[0] += shift
            ex.log({"actor/entropy": 0.5}, step=step)
            time.sleep(0.01)
        assert ex.flush(5)
        totals = dict(ex.goodput.totals)
    elapsed = time.monotonic() - t0
    assert totals["stalled"] == 0.0
    assert sum(totals.values()) <= elapsed                  # was 7,200 s in under a second


@pytest.mark.parametrize("stray", [1e30, 1_764_000_000, 99_999_999_999])
def test_a_stray_step_is_rejected_and_books_nothing(stray):
    """20 steps, one frame whose step is 1e30 (or a unix time, or a log's step:99999999999),
    then 40 more: every later interval was booked restart, for the life of the process,
    uncounted. The stray step is now rejected (implausible_step); its frame is kept."""
    t0 = 1_700_000_000.0
    with Exporter(run="gps", framework="verl", serve=False, gpu=False) as ex:
        ex.goodput.start = t0
        for s in range(1, 21):
            ex.process_now({"actor/entropy": 0.5}, s, t0 + 10.0 * s)
        ex.process_now({"actor/entropy": 0.25}, stray, t0 + 205.0)
        assert ex.store.get("rl_training_step") == 20
        assert ex.store.get("rl_entropy") == 0.25   # the frame's values are exported
        for s in range(21, 61):
            ex.process_now({"actor/entropy": 0.5}, s, t0 + 10.0 * s)
        totals = dict(ex.goodput.totals)
        st = ex.stats()
    assert totals["restart"] == 0.0
    assert totals["step"] == pytest.approx(590.0)
    assert st["values_rejected"]["implausible_step"] == 1
    assert ex.store.get("rl_training_step") == 60


def test_a_new_numbering_is_taken_after_three_steps_in_a_row():
    """Steps counted in samples from some point on (each far past the last): the first two
    are rejected, the third starts the new numbering, and it goes on from there."""
    t0 = 1_700_000_000.0
    with Exporter(run="gpn", framework="verl", serve=False, gpu=False) as ex:
        for s in range(1, 11):
            ex.process_now({"actor/entropy": 0.5}, s, t0 + s)
        for i, s in enumerate(range(10_000_000, 10_000_000 + 6 * 256, 256)):
            ex.process_now({"actor/entropy": 0.5}, s, t0 + 11 + i)
        assert ex.stats()["values_rejected"]["implausible_step"] == 2
        assert ex.store.get("rl_training_step") == 10_000_000 + 5 * 256
        assert ex.goodput.totals["restart"] == 0.0
