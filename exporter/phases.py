"""Phases in progress: while a phase is open its start is exported at once
    rl_phase_in_progress_start_timestamp_seconds{phase}   (NaN when not open)
    rl_phase_recent_median_duration_seconds{phase}        (median of its last 20 occurrences)
so a hang inside a step is one PromQL comparison away, and the NVML sampler charges each GPU
sample to the phase open at the time (exporter/gpu.py). Fed by the phase timers
(exporter/timers.py) and by a framework's own timers (exporter/integrations/_phases.py).
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque

from .catalog import sanitize_label_value

IN_PROGRESS = "rl_phase_in_progress_start_timestamp_seconds"
RECENT_MEDIAN = "rl_phase_recent_median_duration_seconds"
MEDIAN_OF = 20     # closed occurrences the median is taken over
NO_PHASE = "none"  # GPU samples taken while no timer is open


class LivePhases:
    """Which phases are open right now, per exporter (timers publish only when a step's
    window closes, so without this a hang inside `gen` is invisible until the step ends).

    open()/close() come from the timer's thread (outermost occurrence of a phase on that
    thread only); the NVML sampler reads current(). While a phase is open,
    rl_phase_in_progress_start_timestamp_seconds{phase} holds the wall-clock start of its
    oldest open occurrence; NaN once none is open. Each close adds its wall-clock duration
    to the phase's last MEDIAN_OF durations, whose median is published beside it."""

    def __init__(self, exporter, clock=time.monotonic, wall=time.time):
        self.exporter = exporter  # the served run (core/run.py `ServedRun.live_phases`)
        self._clock, self._wall = clock, wall
        self._lock = threading.Lock()
        self._open: dict[str, list] = {}       # phase -> [(monotonic start, wall start, seq), ...]
        self._recent: dict[str, deque] = {}
        self._seq = 0
        self._labels: dict[str, tuple] = {}

    def _sids(self, phase: str) -> tuple:
        """(start series id, median series id) of a phase, created once (None past the
        store's series limit: that phase is then not tracked)."""
        sids = self._labels.get(phase)
        if sids is None:
            store = self.exporter.store
            lab = (("phase", sanitize_label_value(phase)),)
            metrics = store.catalog.metrics
            sids = (store.series_id(metrics[IN_PROGRESS], lab),
                    store.series_id(metrics[RECENT_MEDIAN], lab))
            if sids == (None, None):  # past the series limit: not tracked, and not kept here
                return sids
            self._labels[phase] = sids
        return sids

    def open(self, phase: str) -> None:
        if phase not in self._labels and self._sids(phase) == (None, None):
            # A run that invents phase names without end (ids in names) is bounded by the
            # store's series limit; phases past it are counted there, and keep no state here.
            self.exporter.counts.reject("phase_limit", f"phase {phase[:64]!r} is past the "
                                        "series limit; it is not tracked")
            return
        with self._lock:
            self._seq += 1
            starts = self._open.setdefault(phase, [])
            starts.append((self._clock(), self._wall(), self._seq))
            oldest, mine = starts[0][1], starts[-1][1]
        start_sid = self._sids(phase)[0]
        if start_sid is not None:
            self.exporter.store.values[start_sid] = oldest
        self.exporter.lifecycle.phase_opened(phase, mine)  # a pause phase: the run is paused
        spans = self.exporter.spans
        if spans is not None:  # opt-in traces: a span per phase occurrence (exporter/spans.py)
            spans.opened(phase, mine)

    def close(self, phase: str) -> None:
        """Close the most recent open occurrence of `phase` (timers nest per thread, so the
        last opened is the one ending in the common single-thread case)."""
        with self._lock:
            starts = self._open.get(phase)
            if not starts:
                return
            t0, _, _ = starts.pop()
            if not starts:
                del self._open[phase]  # open phases only: closed ones keep no entry
            dur = max(0.0, self._clock() - t0)
            recent = self._recent.get(phase)
            if recent is None:
                recent = self._recent[phase] = deque(maxlen=MEDIAN_OF)
            recent.append(dur)
            median = _median(recent)
            oldest = starts[0][1] if starts else math.nan
        self.exporter.lifecycle.phase_closed(phase, self._wall())
        spans = self.exporter.spans
        if spans is not None:
            spans.closed(phase)
        start_sid, median_sid = self._sids(phase)
        values = self.exporter.store.values
        if median_sid is not None:
            values[median_sid] = median
        if start_sid is not None:
            values[start_sid] = oldest

    def current(self) -> str:
        """The phase a GPU sample taken now belongs to: the most recently opened phase still
        open (an inner `gen` inside an outer `step`), or NO_PHASE."""
        best, seq = NO_PHASE, -1
        with self._lock:
            for phase, starts in self._open.items():
                if starts and starts[-1][2] > seq:
                    best, seq = phase, starts[-1][2]
        return best

    def open_phases(self) -> list:
        """[(phase, seconds open, recent median or None, monotonic start)] of the phases
        open now, longest open first (/status and the hang watch read this)."""
        now = self._clock()
        with self._lock:
            out = [(p, now - starts[0][0], _median(self._recent[p]) if self._recent.get(p) else None,
                    starts[0][0]) for p, starts in self._open.items() if starts]
        return sorted(out, key=lambda x: -x[1])

    def started(self, phase: str) -> float | None:
        """Monotonic start of the oldest open occurrence of `phase` (None when closed)."""
        with self._lock:
            starts = self._open.get(phase)
            return starts[0][0] if starts else None


def _median(values) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0
