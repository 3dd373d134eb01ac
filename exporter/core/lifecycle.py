"""A run's life, known to every part: starting, running, paused, finished, crashed, restarting.

Exported per run as
    rl_run_state{state}                       one state 1, the others 0
    rl_run_state_change_timestamp_seconds     when the current state began
    rl_run_crash_info{exception, message}     1 while crashed (at most one series per run)
and shown in GET /status (exporter/status.py) and `rl-exporter status`.

Who moves it:
- the worker (exporter/core/worker.py), per step: starting -> running; restarting while a new
  segment (exporter/core/segments.py: the step went back, a second start-up banner) redoes
  steps up to the highest one the run had reached; finished when the step reaches
  rl_config_value{parameter="total_training_steps"} (a step the frame carries, not a count);
- the phases (exporter/phases.py): paused while a pause phase is open (PAUSE_PHASES,
  exporter/core/thresholds.py, the alert rules' pause_phases);
- the hook (exporter/hook.py), at the end of the process: finished at close() or a normal
  exit, crashed on an uncaught exception or a fatal signal. That end is final: nothing after
  it changes the state;
- serve (exporter/sidecar/source.py): the framework's end-of-training line or a crash at the
  end of the log (exporter/logs/ending.py), as an event frame through the run's queue, in
  order with the frames before it. A log can go on after its end (a second train() call, a
  launcher's restart): a step logged after a finished or crashed state that was not final
  makes the run running again.

Event frames are how an end read from a log travels: `{"rl_exporter/event": "crashed",
"rl_exporter/exception": ..., "rl_exporter/message": ...}` with the step, through the queue
(serve) or a replay (`backfill` reads them from the spool's event records, exporter/logs/
spool.py). The transitions the lifecycle makes itself (a pause, the total reached, the
process's end) are written to the spool as event records (`emit`, exporter/spool.py), so
doctor and backfill see them too; the process's end only once the queued frames before it
are written (Pipeline.close).

Pauses are kept as wall-clock intervals (the last PAUSE_LOG of them), so the goodput ledger,
/status and the hang watch take the paused seconds out of a step interval or a phase's open
time whatever order the timer windows are published in.
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass

from ..catalog import sanitize_label_value
from .thresholds import is_pause

STATES = ("starting", "running", "paused", "finished", "crashed", "restarting")
TERMINAL = ("finished", "crashed")
EVENTS = ("finished", "crashed", "paused", "resumed")
METRIC = "rl_run_state"
SINCE = "rl_run_state_change_timestamp_seconds"
CRASH_INFO = "rl_run_crash_info"
TOTAL_PARAMETER = "total_training_steps"
# rl_config_value parameters that say the run's total steps, first found wins (/status too)
TOTAL_PARAMETERS = (TOTAL_PARAMETER, "total_steps", "max_steps")
# the keys of an event frame (the exporter's own: no trainer logs an `rl_exporter/` key)
EVENT = "rl_exporter/event"
EXCEPTION = "rl_exporter/exception"
MESSAGE = "rl_exporter/message"
PAUSE_LOG = 256  # closed pause intervals kept


@dataclass(frozen=True)
class Crash:
    exception: str
    message: str


def event_frame(event: str, exception: str | None = None, message: str | None = None) -> dict:
    """The frame that carries a lifecycle event through a queue or a replay."""
    out = {EVENT: event}
    if exception:
        out[EXCEPTION] = exception
    if message:
        out[MESSAGE] = message
    return out


def event_of(frame: dict) -> tuple | None:
    """(event, exception, message) of an event frame; None for a frame of metrics."""
    ev = frame.get(EVENT) if frame.__class__ is dict else None
    if ev.__class__ is not str:
        return None
    exc, msg = frame.get(EXCEPTION), frame.get(MESSAGE)
    return (ev, exc if isinstance(exc, str) else None, msg if isinstance(msg, str) else None)


def first_line(text) -> str:
    """An exception's message as a label wants it: its first non-empty line."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


class Lifecycle:
    """One run's state. Every method may be called from any thread and never raises into
    the caller's work (the store writes are plain list stores under the lifecycle's lock)."""

    def __init__(self, store, wall=time.time):
        self.store = store
        self._wall = wall
        self._lock = threading.Lock()
        self.state = "starting"
        self.since = wall()
        self.crash: Crash | None = None
        self.final = False           # the process ended (the hook): nothing changes after it
        self.end_ts = None           # when the finished/crashed state began (log time)
        self.end_step = None
        self.high = None             # the highest step seen
        self.last_step = None
        self.first_step = None
        self.restart_until = None    # restarting while the step is not past this
        self._open_pauses: dict[str, int] = {}
        self._pause_start = None
        self._pauses: deque = deque(maxlen=PAUSE_LOG)  # closed pauses: (start, end) wall
        self.pauses_seen = False     # a live pause was seen (the goodput ledger then uses these)
        self._before_pause = "starting"
        self.emit = None             # callable(event record dict): the spool's event writer
        self._pending: list[dict] = []  # the process's end, emitted once its frames are written
        self._metric = store.catalog.metrics[METRIC]
        store.set_state(self._metric, self.state)
        store.set(SINCE, self.since)

    # ------------------------------------------------------------ reads
    @property
    def ended(self) -> bool:
        return self.state in TERMINAL

    @property
    def paused(self) -> bool:
        return self.state == "paused"

    def total(self):
        """The total steps rl_config_value declares (TOTAL_PARAMETERS), or None."""
        for p in TOTAL_PARAMETERS:
            v = self.store.get("rl_config_value", {"parameter": p})
            if _finite(v) and v > 0:
                return v
        return None

    def paused_between(self, t0, t1) -> float:
        """Seconds of [t0, t1] (wall) spent in a declared pause."""
        if t0 is None or t1 is None or t1 <= t0 or not self.pauses_seen:
            return 0.0
        total = 0.0
        with self._lock:
            spans = list(self._pauses)
            if self._pause_start is not None:
                spans.append((self._pause_start, max(t1, self._pause_start)))
        for a, b in spans:
            lo, hi = max(a, t0), min(b, t1)
            if hi > lo:
                total += hi - lo
        return total

    def active_seconds(self, t0, t1) -> float:
        """Seconds of [t0, t1] not in a declared pause (a stall or hang age)."""
        if t0 is None or t1 is None:
            return 0.0
        return max(0.0, (t1 - t0) - self.paused_between(t0, t1))

    def snapshot(self) -> dict:
        with self._lock:
            crash = self.crash
            return {"state": self.state, "since": self.since,
                    "crash": None if crash is None else {"exception": crash.exception,
                                                         "message": crash.message},
                    "end_step": self.end_step, "final": self.final}

    def series(self, store):
        """rl_run_crash_info while crashed, as (store, metric, labels, value) for the collector
        and the OTLP mirror (a computed series: a new crash replaces it, none is left at 0)."""
        crash = self.crash
        if crash is not None and self.state == "crashed":
            yield store, CRASH_INFO, {"exception": crash.exception, "message": crash.message}, 1.0

    # ------------------------------------------------------------ moves (under the lock)
    def _set(self, state: str, ts: float) -> bool:
        if state == self.state:
            return False
        self.state = state
        self.since = ts
        if state != "crashed":
            self.crash = None
        self.store.set_state(self._metric, state)
        self.store.set(SINCE, ts)
        return True

    def _record(self, event: str, ts: float, step, crash: Crash | None = None) -> dict:
        rec = {"event": event, "ts": ts, "step": step}
        if crash is not None:
            rec["exception"], rec["message"] = crash.exception, crash.message
        return rec

    def _emit(self, rec) -> None:
        emit = self.emit
        if rec is None or emit is None:
            return
        try:
            emit(rec)
        except Exception:  # the spool's writer counts its own failures; never ours to raise
            pass

    def _live_state(self) -> str:
        """What the run is when it is neither ended nor paused."""
        if self.last_step is None:
            return "starting"
        return "restarting" if self.restart_until is not None else "running"

    # ------------------------------------------------------------ the worker
    def on_step(self, step, ts: float, counted: bool = False, new_segment: bool = False) -> None:
        """A frame moved the step (or began a new segment). `counted`: the step is the frame
        count, not the trainer's own (no total applies to it)."""
        rec = None
        with self._lock:
            if new_segment and self.high is not None:
                self.restart_until = self.high
            if step is None:
                return
            if self.first_step is None:
                self.first_step = step
            self.high = step if self.high is None else max(self.high, step)
            self.last_step = step
            if self.restart_until is not None and step > self.restart_until:
                self.restart_until = None
            if self.state in TERMINAL:
                # a step logged after a log's end: it went on (a second train(), a relaunch)
                if self.final or self.end_ts is None or not ts > self.end_ts:
                    return
            if self._open_pauses:  # a step inside a pause leaves the pause as it is
                self._set("paused", ts)
                return
            state = self._live_state()
            total = None if counted else self.total()
            if total is not None and step >= total and state == "running":
                state = "finished"
            if self._set(state, ts) and state == "finished":
                self.end_ts, self.end_step = ts, step
                rec = self._record("finished", ts, step)
        self._emit(rec)

    def apply_event(self, event: str, step, ts: float, exception=None, message=None) -> bool:
        """An end or pause read from a log or a spool (an event frame): applied, not emitted
        again (it was recorded where it was read). False for an event not known here."""
        if event == "finished":
            self._end("finished", ts, step, None, final=False, emit=False)
        elif event == "crashed":
            self._end("crashed", ts, step, self._crash(exception, message), final=False,
                      emit=False)
        elif event == "paused":
            self.pause_open("pause", ts, emit=False)
        elif event == "resumed":
            with self._lock:
                phases = list(self._open_pauses)
            for p in phases:
                self.pause_close(p, ts, emit=False, all_of=True)
        else:
            return False
        return True

    # ------------------------------------------------------------ the phases
    def pause_open(self, phase: str, ts: float | None = None, emit: bool = True) -> None:
        ts = self._wall() if ts is None else ts
        rec = None
        with self._lock:
            n = self._open_pauses.get(phase, 0)
            self._open_pauses[phase] = n + 1
            if self._pause_start is not None:
                return
            self._pause_start = ts
            self.pauses_seen = True
            if self.state in TERMINAL:
                return
            self._before_pause = self.state
            if self._set("paused", ts) and emit:
                rec = self._record("paused", ts, self.last_step)
        self._emit(rec)

    def pause_close(self, phase: str, ts: float | None = None, emit: bool = True,
                    all_of: bool = False) -> None:
        ts = self._wall() if ts is None else ts
        rec = None
        with self._lock:
            n = self._open_pauses.get(phase, 0)
            if n <= 0:
                return
            if n == 1 or all_of:
                del self._open_pauses[phase]
            else:
                self._open_pauses[phase] = n - 1
            if self._open_pauses or self._pause_start is None:
                return
            self._pauses.append((self._pause_start, max(ts, self._pause_start)))
            self._pause_start = None
            if self.state == "paused":
                self._set(self._live_state(), ts)
                if emit:
                    rec = self._record("resumed", ts, self.last_step)
        self._emit(rec)

    def phase_opened(self, phase: str, ts: float | None = None) -> None:
        """LivePhases' hook: a phase opened at wall time `ts` (only a pause phase matters)."""
        if is_pause(phase):
            self.pause_open(phase, ts)

    def phase_closed(self, phase: str, ts: float | None = None) -> None:
        if is_pause(phase):
            self.pause_close(phase, ts)

    # ------------------------------------------------------------ the end
    @staticmethod
    def _crash(exception, message) -> Crash:
        exc = sanitize_label_value(str(exception or "Exception"))
        return Crash(exc, sanitize_label_value(first_line(message or "")))

    def finish(self, ts: float | None = None, step=None, final: bool = False) -> None:
        """The run finished: close(), a normal exit (final), or a log's end-of-training line."""
        self._end("finished", self._wall() if ts is None else ts, step, None, final, emit=True)

    def crashed(self, exception, message, ts: float | None = None, step=None,
                final: bool = False) -> None:
        """The run crashed: an uncaught exception or a fatal signal (final), or a crash at the
        end of a log. `exception`: the type's name; `message`: its text (the first line kept)."""
        self._end("crashed", self._wall() if ts is None else ts, step,
                  self._crash(exception, message), final, emit=True)

    def _end(self, state, ts, step, crash, final, emit) -> None:
        rec = None
        with self._lock:
            if self.final:
                return  # the process's end is recorded; nothing after it counts
            given = step
            if step is None:
                step = self.last_step
            same = state == self.state and (crash is None or crash == self.crash)
            if not same:
                self.state = None  # force the change (crashed -> crashed with another crash)
                self._set(state, ts)
                self.crash = crash
                self.end_ts, self.end_step = ts, step
                if emit:
                    rec = self._record(state, ts, step, crash)
            if final:
                self.final = True
                if rec is not None:  # written once the frames before it are (Pipeline.close)
                    self._pending.append((rec, given))
                    rec = None
        self._emit(rec)

    def flush_events(self) -> None:
        """Write the process's end to the spool, once the frames queued before it were
        processed: its step is then the last one they carried (unless one was given)."""
        with self._lock:
            pending, self._pending = self._pending, []
            for rec, given in pending:
                if given is None:
                    rec["step"] = self.end_step = self.last_step
        for rec, _ in pending:
            self._emit(rec)
