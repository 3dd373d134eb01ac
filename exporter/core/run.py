"""A run being served: its pipeline and the companions that serve it, each one declared.

The hook's Exporter is a ServedRun plus the public API, the endpoint, the NVML sampler and the
process's lifecycle (exporter/hook.py); `serve` builds one ServedRun per (run, framework) it
follows (exporter/sidecar/sidecar.py). /status (exporter/status.py), the hang watch and
GET /debug/stacks (exporter/stacks.py, exporter/sidecar/pyspy.py) take a ServedRun and read
what it declares, so what the hook serves cannot silently miss the sidecar.

What a ServedRun holds:
- the pipeline's own: `store`, `counts` (the one loss registry), `goodput`, `lifecycle`
  (rl_run_state: exporter/core/lifecycle.py; its owner ends it: the hook at the process's end,
  serve at a log's end);
- given by its owner: `telemetry` (the OTLP mirror, core/otel.py), `spans` (opt-in traces,
  exporter/spans.py), `hang_watch` (exporter/stacks.py; set once the owner watches the run):
  None where off;
- made on first use, once, under the run's lock, so a run that never times a phase or observes
  a distribution pays nothing for them: `live_phases` (exporter/phases.py), `timers`
  (exporter/timers.py), `resolver` (exporter/device_resolver.py) and `distributions`
  (exporter/distributions.py). Each takes the run and reports its own failures to its
  `counts`.
"""
from __future__ import annotations

import threading
import time

from .pipeline import Pipeline

_LOCK, _RLOCK = type(threading.Lock()), type(threading.RLock())


def fresh_locks(obj) -> None:
    """Replace every lock attribute of obj with a new, unlocked one of the same kind (a fork
    child: a lock another thread held at the fork stays held forever there)."""
    for name, val in list(vars(obj).items()):
        if isinstance(val, _LOCK):
            setattr(obj, name, threading.Lock())
        elif isinstance(val, _RLOCK):
            setattr(obj, name, threading.RLock())


class ServedRun:
    def __init__(self, pipeline: Pipeline, *, rank=None, telemetry=None, spans=None):
        self.pipeline = pipeline
        self.run = pipeline.run
        self.framework = pipeline.framework
        self.rank = pipeline.rank if rank is None else rank
        self.store = pipeline.store
        self.catalog = pipeline.store.catalog
        self.counts = pipeline.counts
        self.goodput = pipeline.goodput   # rl_goodput_seconds_total, fed by the worker
        self.lifecycle = pipeline.lifecycle  # rl_run_state (core/lifecycle.py)
        self.telemetry = telemetry        # core/otel.Telemetry, or None
        self.spans = spans                # spans.Spans (a span per step and phase), or None
        if spans is not None:
            self.goodput.spans = spans
        self.hang_watch = None            # stacks.HangWatch, once the owner watches the run
        self._closed = False
        self._lock = threading.RLock()    # a companion's making may make another
        self._live_phases = None
        self._timers = None
        self._resolver = None
        self._distributions = None

    # ------------------------------------------------------------ companions
    @property
    def live_phases(self):
        """The phases open now (phases.LivePhases): timers and framework timers feed it."""
        if self._live_phases is None:
            with self._lock:
                if self._live_phases is None:
                    from ..phases import LivePhases
                    self._live_phases = LivePhases(self)
        return self._live_phases

    @property
    def timers(self):
        """The phase timers (timers.PhaseTimers) behind `timer(phase)`."""
        if self._timers is None:
            with self._lock:
                if self._timers is None:
                    from ..timers import PhaseTimers
                    self._timers = PhaseTimers(self)
        return self._timers

    @property
    def resolver(self):
        """The thread completing device work off the caller's (device_resolver.DeviceResolver)."""
        if self._resolver is None:
            with self._lock:
                if self._resolver is None:
                    from ..device_resolver import DeviceResolver
                    self._resolver = DeviceResolver(self)
        return self._resolver

    @property
    def distributions(self):
        """Per-sample distributions (distributions.Distributions) behind `observe()`."""
        if self._distributions is None:
            with self._lock:
                if self._distributions is None:
                    from ..distributions import Distributions
                    self._distributions = Distributions(self)
        return self._distributions

    def open_phases(self) -> list:
        """[(phase, seconds open, recent median or None, monotonic start)] of the phases open
        now, longest first; none before a phase was first timed or tracked."""
        live = self._live_phases
        return [] if live is None else live.open_phases()

    def end_timer_window(self) -> None:
        """Close the open timer window without a log() call, where a phase was timed (a rank
        that leaves log() to rank 0 still publishes its phase durations once per step)."""
        timers = self._timers
        if timers is not None:
            timers.end_step()

    # ------------------------------------------------------------ reads
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def frames_logged(self) -> int:
        """Frames accepted so far: a timer window is one of these."""
        return self.counts.received

    @property
    def spool_path(self) -> str | None:
        """The spool the worker writes, if any (hang captures go beside it)."""
        spool = self.pipeline.spool
        return None if spool is None else spool.path

    def stats(self) -> dict:
        """A snapshot of the exporter's own counters (what rl_exporter_* series show):
        frames received/processed/dropped by reason, values rejected by reason, non-finite
        values by metric, errors by kind, unknown/ignored keys, queue length, last step."""
        return self.pipeline.stats()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every frame logged so far is processed (tests, shutdown paths)."""
        return self.pipeline.flush(timeout)

    # ------------------------------------------------------------ lifecycle
    def close(self, timeout: float = 5.0, deadline: float | None = None) -> None:
        """Process what is queued, publish the last timer window, complete device work, end
        the open spans and push OTLP a last time, all by `deadline` (time.monotonic(); else
        `timeout` from now). Idempotent; a failure is counted (errors{kind="close"})."""
        if self._closed:
            return
        self._closed = True
        if deadline is None:
            deadline = time.monotonic() + timeout
        try:
            self._shutdown(timeout, deadline)
        except Exception as e:
            self.counts.error("close", e)

    def _shutdown(self, timeout: float, deadline: float) -> None:
        self.end_timer_window()  # the window after the last frame is published too
        if self.hang_watch is not None:
            self.hang_watch.stop()
        self.pipeline.close(timeout, deadline)
        if self._resolver is not None:
            self._resolver.drain(max(0.0, deadline - time.monotonic()))
        if self.spans is not None:  # open spans end now; queued ones are pushed
            self.spans.close(max(0.1, (deadline - time.monotonic()) / 2))
        if self.telemetry is not None:  # the last push, within what is left
            self.telemetry.close(deadline)

    def retire_after_fork(self) -> None:
        """In a fork child: the worker and the companions' threads are the parent's, and their
        locks may be held by threads that no longer exist. Fresh locks, nothing queued,
        closed, without touching any of them."""
        self.pipeline.retire_after_fork()
        self._lock = threading.RLock()
        for owned in (self.store, self.lifecycle, self.goodput):
            fresh_locks(owned)
        for c in (self._live_phases, self._timers, self._resolver, self._distributions):
            if c is not None:
                fresh_locks(c)
        self._closed = True
