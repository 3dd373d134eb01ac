"""A framework's own phase timers and phase methods, wrapped so their phases show as in
progress (exporter/phases.py) and GPU samples are charged to them, without timing anything twice
(veRL's marked_timer, AReaL's record_timing, TRL's generation, slime's Timer)."""
from __future__ import annotations

import contextlib
import functools
import sys


def track_phase_timer(exporter, owner, attr: str = "marked_timer") -> bool:
    """Wrap a framework's own phase timer, `owner.attr(name, ...)` used as `with attr(...)`
    (veRL's marked_timer(name, timing_raw), AReaL's stats_tracker.record_timing(key)), so
    the phases it times show as in progress and GPU samples are charged to them. The
    framework keeps timing and logging the phase itself (its timing_s/* keys), so nothing is
    counted twice. Wrapping again retargets the wrapper to the newer exporter (one process,
    successive runs); returns True when it wrapped, False when already wrapped or absent."""
    return _track(exporter, owner, attr, None)


def track_phase_call(exporter, owner, attr: str, phase: str) -> bool:
    """Wrap a method or function `owner.attr` so each call is phase `phase` while it runs
    (TRL's GRPOTrainer._generate_and_score_completions as "generate"). Same rules as
    track_phase_timer()."""
    return _track(exporter, owner, attr, phase)


def _retargeted(fn, exporter) -> bool:
    """Already our wrapper: point it at this exporter (a process's next run) and say so."""
    target = getattr(fn, "_rlx_exporter", None)
    if target is None:
        return False
    target[0] = exporter
    return True


def _track(exporter, owner, attr, fixed_phase) -> bool:
    orig = getattr(owner, attr, None)
    if orig is None or _retargeted(orig, exporter):
        return False
    holder = [exporter]

    def opened(args, kwargs):
        ex = holder[0]
        name = fixed_phase
        if name is None:
            name = args[0] if args else kwargs.get("name", kwargs.get("key"))
        if name is None or ex.closed:
            return ex, None
        try:
            phase = str(name)
            ex.live_phases.open(phase)
            return ex, phase
        except Exception as e:
            ex.counts.error("timer", e)
            return ex, None

    def closed(ex, phase):
        if phase is not None:
            try:
                ex.live_phases.close(phase)
            except Exception as e:
                ex.counts.error("timer", e)

    if fixed_phase is None:
        @functools.wraps(orig)
        @contextlib.contextmanager
        def tracked(*args, **kwargs):
            ex, phase = opened(args, kwargs)
            try:
                with orig(*args, **kwargs) as value:
                    yield value
            finally:
                closed(ex, phase)
    else:
        @functools.wraps(orig)
        def tracked(*args, **kwargs):
            ex, phase = opened((), {})
            try:
                return orig(*args, **kwargs)
            finally:
                closed(ex, phase)

    tracked._rlx_exporter = holder
    setattr(owner, attr, tracked)
    return True


def track_loaded_phase_timers(exporter, prefixes=("verl.",), attr: str = "marked_timer") -> int:
    """track_phase_timer() on every loaded module under `prefixes` that imported `attr` by
    name (veRL's trainers do `from verl.utils.debug import marked_timer`). Returns how many."""
    n = 0
    for name, module in list(sys.modules.items()):
        if module is not None and name.startswith(prefixes) and attr in getattr(module, "__dict__", {}):
            try:
                n += track_phase_timer(exporter, module, attr)
            except Exception as e:
                exporter.counts.error("timer", e)
    return n


def track_start_end_timer(exporter, cls, start: str = "start", end: str = "end") -> bool:
    """Phases in progress from a start(name)/end(name) timer class: slime's and Miles'
    Timer (slime/utils/timer.py; its `with timer("train")`, @timer and inverse_timer all go
    through Timer.start/end). Same retarget rules as track_phase_timer()."""
    orig_start, orig_end = getattr(cls, start, None), getattr(cls, end, None)
    if orig_start is None or orig_end is None or _retargeted(orig_start, exporter):
        return False
    holder = [exporter]

    def phase_of(args, kwargs):
        name = args[0] if args else kwargs.get("name")
        return None if name is None else str(name)

    @functools.wraps(orig_start)
    def started(self, *args, **kwargs):
        result = orig_start(self, *args, **kwargs)   # raises first on a double start
        try:
            phase = phase_of(args, kwargs)
            if phase is not None:
                holder[0].live_phases.open(phase)
        except Exception as e:
            holder[0].counts.error("timer", e)
        return result

    @functools.wraps(orig_end)
    def ended(self, *args, **kwargs):
        try:
            return orig_end(self, *args, **kwargs)
        finally:
            try:
                phase = phase_of(args, kwargs)
                if phase is not None:
                    holder[0].live_phases.close(phase)
            except Exception as e:
                holder[0].counts.error("timer", e)

    started._rlx_exporter = holder
    setattr(cls, start, started)
    setattr(cls, end, ended)
    return True
