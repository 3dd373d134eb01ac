"""Phase timers: `with exporter.timer("gen"):` or `@exporter.timer("gen")`.

CPU: time.perf_counter. CUDA (torch imported and CUDA initialised, or cuda=True):
a pair of CUDA events recorded on the current stream; a background thread polls
`event.query()` and reads `elapsed_time` once the end event completed, so the
training thread never waits for the device (AReaL's approach, from AReaL metrics tracking: stream
elapsed time between the two records, host gaps included, no added syncs).

Steps: measurements are grouped into windows, one per call of `exporter.log()`:
what is timed before the N-th log() belongs to the step that log() reports (a
phase is assigned to the window open when it *starts*, so an outer "step" timer
around log() stays in its step). Repeated phases within a window sum; a phase
nested inside itself on the same thread counts once (the outermost), so a
decorated recursive function is not double counted; different phases nest
freely. When a window is closed (its log() arrived, or `end_step()` was called)
and its device events completed, each phase's total lands on
    rl_phase_duration_seconds{phase}          (gauge: the last step)
    rl_phase_timing_seconds{run,phase}        (OTel histogram: one observation per step)
    rl_phase_time_per_token_seconds{phase}    (when token counts were given)
A window that never sees a log() (the last one at close()) is not published.

Phases in progress (exporter/phases.py): while a phase is open its start is exported at once
    rl_phase_in_progress_start_timestamp_seconds{phase}   (NaN when not open)
    rl_phase_recent_median_duration_seconds{phase}        (median of its last 20 occurrences)
so a hang inside a step is one PromQL comparison away, and the NVML sampler charges each GPU
sample to the phase open at the time (exporter/gpu.py). exporter/integrations/_phases.py does the
same for a framework's own phase timer (veRL's marked_timer) without timing the phase twice.
"""
from __future__ import annotations

import functools
import logging
import sys
import threading
import time

from .catalog import sanitize_label_value
from .device_resolver import DeviceResolver

log = logging.getLogger("rl_exporter")

PHASE_GAUGE = "rl_phase_duration_seconds"
PHASE_HIST = "rl_phase_timing_seconds"
PER_TOKEN = "rl_phase_time_per_token_seconds"


def _cuda_in_use() -> bool:
    torch = sys.modules.get("torch")  # never import torch ourselves
    if torch is None:
        return False
    try:
        return torch.cuda.is_initialized()
    except Exception:
        return False


def _cuda_event():
    import torch
    return torch.cuda.Event(enable_timing=True)


class _Window:
    __slots__ = ("totals", "tokens", "pending")

    def __init__(self):
        self.totals: dict[str, float] = {}
        self.tokens: dict[str, float] = {}
        self.pending: list = []  # (phase, start_event, end_event)


class Phase:
    """Context manager and decorator for one phase. A handle may be entered again
    after it exits (and from several threads); `.tokens` may be set inside the block."""

    __slots__ = ("_timers", "phase", "tokens", "cuda", "_local")

    def __init__(self, timers: "PhaseTimers", phase: str, tokens=None, cuda=None):
        self._timers, self.phase, self.tokens, self.cuda = timers, phase, tokens, cuda
        self._local = threading.local()  # each thread's own stack of open entries

    def _stack(self) -> list:
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    def __enter__(self):
        stack = self._stack()
        try:
            stack.append(self._timers._enter(self.phase, self.cuda))
        except Exception as e:
            self._timers.exporter.counts.error("timer", e)
            stack.append(None)
        return self

    def __exit__(self, *exc):
        stack = self._stack()
        state = stack.pop() if stack else None
        try:
            self._timers._exit(self.phase, state, self.tokens)
        except Exception as e:
            self._timers.exporter.counts.error("timer", e)
        return False

    def __call__(self, fn):
        timers, phase, tokens, cuda = self._timers, self.phase, self.tokens, self.cuda

        @functools.wraps(fn)
        def timed(*a, **kw):
            with Phase(timers, phase, tokens, cuda):
                return fn(*a, **kw)
        return timed


class PhaseTimers:
    """A served run's phase timers (core/run.py `ServedRun.timers`): its resolver polls the
    device events, its live phases show what is open, its goodput takes the badput phases."""

    def __init__(self, exporter, event_factory=None, resolver: DeviceResolver | None = None,
                 clock=time.perf_counter):
        self.exporter = exporter  # the served run
        self._event_factory = event_factory      # tests pass a fake event class
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[int, _Window] = {}
        self._manual = 0
        self._local = threading.local()
        self.published = 0                        # windows published
        self.resolver = resolver if resolver is not None else exporter.resolver
        self.resolver.add_ticker(self._tick)
        self.live = exporter.live_phases

    # ------------------------------------------------------------ caller thread
    def timer(self, phase, tokens=None, cuda=None) -> Phase:
        if not isinstance(phase, str):
            phase = str(phase)
        return Phase(self, phase, tokens, cuda)

    def end_step(self) -> None:
        """Close the current window without a log() call (loops that log elsewhere)."""
        with self._lock:
            self._manual += 1
        self.resolver.wake()

    def _window_id(self) -> int:
        return self.exporter.frames_logged + self._manual

    def _enter(self, phase, cuda):
        depth = self._local.__dict__.setdefault("depth", {})
        d = depth.get(phase, 0)
        depth[phase] = d + 1
        if d:
            return None  # the same phase nested in itself: only the outermost counts
        self.live.open(phase)
        wid = self._window_id()
        if cuda is None:
            cuda = self._event_factory is not None or _cuda_in_use()
        if cuda:
            ev = (self._event_factory or _cuda_event)()
            ev.record()
            return (wid, ev, None)
        return (wid, None, self._clock())

    def _exit(self, phase, state, tokens):
        depth = self._local.__dict__.setdefault("depth", {})
        depth[phase] = max(0, depth.get(phase, 1) - 1)
        if state is None:
            return
        self.live.close(phase)
        wid, start_ev, t0 = state
        if start_ev is None:
            dt = self._clock() - t0
            end_ev = None
        else:
            end_ev = (self._event_factory or _cuda_event)()
            end_ev.record()
        with self._lock:
            w = self._windows.get(wid)
            new = w is None
            if new:
                w = self._windows[wid] = _Window()
            if end_ev is None:
                w.totals[phase] = w.totals.get(phase, 0.0) + dt
            else:
                w.pending.append((phase, start_ev, end_ev))
                w.totals.setdefault(phase, 0.0)
            if tokens:
                w.tokens[phase] = w.tokens.get(phase, 0.0) + float(tokens)
        if new:
            self.resolver.wake()  # once per window: the resolver polls while windows are open

    # ------------------------------------------------------------ resolver thread
    def _tick(self) -> bool:
        """Resolve completed events; publish closed, complete windows in order."""
        if not self._windows:
            return False
        current = self._window_id()
        with self._lock:
            items = sorted(self._windows.items())
        for wid, w in items:  # resolve every completed event, in every window
            if w.pending:
                with self._lock:
                    pend, w.pending = w.pending, []
                still = []
                done = []
                for phase, start, end in pend:
                    if end.query():  # non-blocking; never synchronize
                        done.append((phase, start.elapsed_time(end) / 1000.0))
                    else:
                        still.append((phase, start, end))
                with self._lock:
                    for phase, sec in done:
                        w.totals[phase] = w.totals.get(phase, 0.0) + sec
                    w.pending = still + w.pending
        for wid, w in items:  # publish closed, complete windows in order
            if wid >= current or w.pending:
                break  # still open, or waiting for device work (later ones wait too)
            with self._lock:
                self._windows.pop(wid, None)
            self._publish(w)
        return bool(self._windows)

    def _publish(self, w: _Window) -> None:
        ex = self.exporter
        store = ex.store
        hist = store.catalog.metrics[PHASE_HIST]
        for phase, total in w.totals.items():
            label = sanitize_label_value(phase)
            # the histogram follows the gauge's series limit (counted there): past it the
            # SDK would fold phases into an overflow series nobody counts
            if store.set(PHASE_GAUGE, total, {"phase": label}):
                store.histograms.record(hist, total, (("phase", label),))
            n = w.tokens.get(phase)
            if n:
                store.set(PER_TOKEN, total / n, {"phase": label})
        ex.goodput.add_phases(w.totals)  # badput phases (checkpoint, validation, ...)
        self.published += 1
