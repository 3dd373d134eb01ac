"""Phases in progress and GPU time by phase: real timers, the real NVML sampler code path
behind the fake pynvml (exporter/testing/nvml.py) whose utilisation follows the phase."""
from __future__ import annotations

import math
import sys
import time

import pytest

from exporter.hook import Exporter
from exporter.testing import phase_open, scrape
from exporter.testing.nvml import FakeNVML
from exporter.phases import LivePhases

START = "rl_phase_in_progress_start_timestamp_seconds"
MEDIAN = "rl_phase_recent_median_duration_seconds"


def _find(series, name, **want):
    out = {}
    for (n, labels), v in series.items():
        d = dict(labels)
        if n == name and all(d.get(k) == str(x) for k, x in want.items()):
            out[labels] = v
    return out


def test_open_phase_is_visible_with_its_start_and_median():
    ex = Exporter(run="r", serve=False, gpu="off", rank=3)
    try:
        for _ in range(3):
            with ex.timer("gen"):
                time.sleep(0.02)
            ex.log({"actor/pg_loss": 0.1}, step=1)
        s = scrape(ex)
        lab = (("phase", "gen"),)
        assert math.isnan(s[(START, lab)])                       # closed: not in progress
        assert 0.015 < s[(MEDIAN, lab)] < 0.5
        before = time.time()
        with ex.timer("step"):
            with ex.timer("gen"):
                s = scrape(ex)
                assert before - 0.01 <= s[(START, lab)] <= time.time()
                assert s[(START, (("phase", "step"),))] <= s[(START, lab)]
                assert ex.live_phases.current() == "gen"     # the innermost open phase
            assert ex.live_phases.current() == "step"
        assert ex.live_phases.current() == "none"
        assert math.isnan(scrape(ex)[(START, lab)])
    finally:
        ex.close()


def test_same_phase_on_two_threads_reports_the_oldest_start():
    from exporter.core.pipeline import Pipeline
    from exporter.core.run import ServedRun

    run = ServedRun(Pipeline("r"))  # never started: nothing but its store is used

    def v(name):
        return run.store.get(name, {"phase": "gen"})

    now = [100.0]
    live = LivePhases(run, clock=lambda: now[0], wall=lambda: 1000 + now[0])
    live.open("gen")
    now[0] = 110.0
    live.open("gen")                       # a second rollout worker
    assert v(START) == 1100.0
    now[0] = 130.0
    live.close("gen")                      # the newer one ends after 20 s
    assert v(START) == 1100.0              # the older one is still open
    assert v(MEDIAN) == 20.0
    live.close("gen")
    assert math.isnan(v(START))
    assert v(MEDIAN) == 25.0               # median of 20 and 30
    live.close("gen")                      # an unmatched close is ignored
    assert live.current() == "none"


def test_training_loop_splits_gpu_time_by_phase(monkeypatch):
    """A CPU loop: gen at 30 % utilisation and 40 GB, update_actor at 95 % and 70 GB; the
    sampler charges each sample to the phase in progress."""
    nv = FakeNVML(2)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    ex = Exporter(run="r", serve=False, gpu="on", gpu_interval=0.01, rank=0)
    profile = {"gen": (30, 40e9), "update_actor": (95, 70e9)}

    def set_gpu(util, mem):
        for g in nv.gpus:
            g["util_gpu"], g["mem_used"] = util, int(mem)

    try:
        set_gpu(0, 10e9)
        for step in range(1, 5):
            for phase, secs in (("gen", 0.2), ("update_actor", 0.1)):
                set_gpu(*profile[phase])
                with ex.timer(phase):
                    time.sleep(secs)
                set_gpu(0, 10e9)
            ex.log({"actor/pg_loss": 0.1}, step=step)
        ex.gpu_sampler.stop()
        s = scrape(ex)
    finally:
        ex.close()
    for gpu in ("0", "1"):
        totals = {}
        for phase, (util, mem) in profile.items():
            busy = sum(_find(s, "hw_gpu_phase_busy_seconds_total", gpu=gpu, phase=phase).values())
            idle = sum(_find(s, "hw_gpu_phase_idle_seconds_total", gpu=gpu, phase=phase).values())
            totals[phase] = busy + idle
            assert busy / (busy + idle) == pytest.approx(util / 100, abs=0.12), phase
            peak = _find(s, "hw_gpu_phase_memory_peak_bytes", gpu=gpu, phase=phase, rank=0)
            assert list(peak.values()) == [mem]
        # wall time per phase: 4 x 0.2 s of gen, 4 x 0.1 s of update (to a few sample intervals)
        assert totals["gen"] == pytest.approx(0.8, abs=0.25)
        assert totals["update_actor"] == pytest.approx(0.4, abs=0.2)
        assert totals["gen"] > totals["update_actor"]


def test_attribution_survives_a_broken_phase_source(monkeypatch):
    nv = FakeNVML(1)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    ex = Exporter(run="r", serve=False, gpu="on", gpu_interval=60)
    try:
        class Broken:
            def current(self):
                raise RuntimeError("boom")
        ex.gpu_sampler.phases = Broken()
        ex.gpu_sampler.sample()
        s = scrape(ex)
        assert s[("hw_gpu_utilization_ratio", tuple(sorted({"gpu": "0", "uuid": nv.gpus[0]["uuid"],
                  "gpu_model": nv.gpus[0]["name"], "task": "general"}.items())))] == 0.87
        assert _find(s, "rl_exporter_gpu_query_errors_total", query="phase", error="runtimeerror")
    finally:
        ex.close()


def test_phase_from_another_thread_is_attributed():
    """The sampler thread reads what the training thread opened."""
    ex = Exporter(run="r", serve=False, gpu="off")
    try:
        with phase_open(ex, "gen"):
            assert ex.live_phases.current() == "gen"
        assert ex.live_phases.current() == "none"
    finally:
        ex.close()


def test_verl_marked_timer_phases_show_while_open():
    """A timer shaped like veRL's marked_timer(name, timing_raw, color=None, domain=None,
    category=None) (verl/utils/profiler/performance.py: it adds the elapsed seconds to
    timing_raw[name]), imported by name into a trainer module as veRL's trainers do. (The
    installed verl 0.9.1 cannot import verl.utils.debug here: it needs codetiming.)"""
    import contextlib
    import types

    from exporter.integrations._phases import track_loaded_phase_timers

    @contextlib.contextmanager
    def marked_timer(name, timing_raw, color=None, domain=None, category=None):
        t0 = time.perf_counter()
        yield
        timing_raw[name] = timing_raw.get(name, 0.0) + time.perf_counter() - t0

    trainer_module = types.ModuleType("verl.trainer.fake_ray_trainer")
    trainer_module.marked_timer = marked_timer
    sys.modules["verl.trainer.fake_ray_trainer"] = trainer_module
    ex = Exporter(run="r", serve=False, gpu="off")
    try:
        assert track_loaded_phase_timers(ex) >= 1
        assert track_loaded_phase_timers(ex) == 0          # idempotent: wrapped once
        timing = {}
        with trainer_module.marked_timer("step", timing):
            with trainer_module.marked_timer("gen", timing, color="red"):
                assert ex.live_phases.current() == "gen"
                assert not math.isnan(scrape(ex)[(START, (("phase", "gen"),))])
                time.sleep(0.01)
        assert timing["gen"] >= 0.01 and "step" in timing  # veRL still times its phases
        s = scrape(ex)
        assert math.isnan(s[(START, (("phase", "gen"),))])
        assert s[(MEDIAN, (("phase", "gen"),))] >= 0.01
        with pytest.raises(ValueError):                    # the trainer's exception passes through
            with trainer_module.marked_timer("gen", timing):
                raise ValueError("boom")
        assert ex.live_phases.current() == "none"
    finally:
        sys.modules.pop("verl.trainer.fake_ray_trainer", None)
        ex.close()


@pytest.mark.slow  # importing areal costs about 8 s of CPU
def test_areal_record_timing_phases_show_while_open():
    """AReaL's own stats_tracker.record_timing (the installed package): the phase is in
    progress while open, and AReaL still records timeperf/<key>."""
    import logging
    ours = logging.getLogger("rl_exporter")
    stats_tracker = pytest.importorskip("areal.utils.stats_tracker")
    ours.disabled = False  # AReaL's logging dictConfig disables loggers created before it
    from exporter.integrations._phases import track_phase_timer
    orig = stats_tracker.record_timing
    ex = Exporter(run="r", serve=False, gpu="off")
    try:
        track_phase_timer(ex, stats_tracker, "record_timing")  # wraps, or retargets an earlier wrap
        with stats_tracker.record_timing("rollout"):
            assert ex.live_phases.current() == "rollout"
            assert not math.isnan(scrape(ex)[(START, (("phase", "rollout"),))])
        assert "timeperf/rollout" in stats_tracker.export()
        assert math.isnan(scrape(ex)[(START, (("phase", "rollout"),))])
    finally:
        stats_tracker.record_timing = orig
        ex.close()


def test_phase_call_wrapper_retargets_and_passes_results_and_errors():
    from exporter.integrations._phases import track_phase_call

    class Trainer:
        def _generate_and_score_completions(self, inputs):
            return ("generated", Trainer.seen())

        def boom(self):
            raise RuntimeError("x")

    ex1 = Exporter(run="a", serve=False, gpu="off")
    ex2 = Exporter(run="b", serve=False, gpu="off")
    try:
        Trainer.seen = staticmethod(lambda: ex2.live_phases.current())
        assert track_phase_call(ex1, Trainer, "_generate_and_score_completions", "generate")
        assert not track_phase_call(ex2, Trainer, "_generate_and_score_completions", "generate")
        assert track_phase_call(ex2, Trainer, "boom", "boom")
        assert Trainer()._generate_and_score_completions({}) == ("generated", "generate")
        assert scrape(ex2)[(MEDIAN, (("phase", "generate"),))] >= 0   # the newer exporter
        assert (MEDIAN, (("phase", "generate"),)) not in scrape(ex1)
        with pytest.raises(RuntimeError):
            Trainer().boom()
        assert ex2.live_phases.current() == "none"
    finally:
        ex1.close()
        ex2.close()


def test_slime_timer_start_end_phases_show_while_open():
    """A class with slime's Timer shape (slime/utils/timer.py: start(name)/end(name) on a
    singleton; context() and inverse_timer go through them)."""
    import contextlib

    from exporter.integrations._phases import track_start_end_timer

    class Timer:
        def __init__(self):
            self.timers, self.start_time = {}, {}

        def start(self, name):
            assert name not in self.start_time, f"Timer {name} already started."
            self.start_time[name] = time.time()

        def end(self, name):
            assert name in self.start_time, f"Timer {name} not started."
            self.timers[name] = self.timers.get(name, 0) + time.time() - self.start_time.pop(name)

        @contextlib.contextmanager
        def context(self, name):
            self.start(name)
            try:
                yield
            finally:
                self.end(name)

    ex = Exporter(run="r", serve=False, gpu="off")
    try:
        assert track_start_end_timer(ex, Timer)
        t = Timer()
        with t.context("train"):
            assert ex.live_phases.current() == "train"
            t.end("train")                                  # inverse_timer: paused
            assert ex.live_phases.current() == "none"
            t.start("train")
        assert "train" in t.timers and ex.live_phases.current() == "none"
        with pytest.raises(AssertionError):                 # slime's own checks still run
            t.end("never-started")
        assert ex.live_phases.current() == "none"
    finally:
        ex.close()
