"""Phase timers: `with exporter.timer("gen"):` or `@exporter.timer("gen")`.

CPU: time.perf_counter. CUDA (torch imported and CUDA initialised, or cuda=True):
a pair of CUDA events recorded on the current stream; a background thread polls
`event.query()` and reads `elapsed_time` once the end event completed, so the
training thread never waits for the device (AReaL's approach, seed 003: stream
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

Phases in progress (LivePhases, below): while a phase is open its start is exported at once
    rl_phase_in_progress_start_timestamp_seconds{phase}   (NaN when not open)
    rl_phase_recent_median_duration_seconds{phase}        (median of its last 20 occurrences)
so a hang inside a step is one PromQL comparison away, and the NVML sampler charges each GPU
sample to the phase open at the time (exporter/gpu.py). track_phase_timer() does the same for a
framework's own phase timer (veRL's marked_timer) without timing the phase twice.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import math
import sys
import threading
import time
from collections import deque

from .catalog import sanitize_label_value

log = logging.getLogger("rl_exporter")

PHASE_GAUGE = "rl_phase_duration_seconds"
PHASE_HIST = "rl_phase_timing_seconds"
PER_TOKEN = "rl_phase_time_per_token_seconds"
DEVICE_TIMEOUT_S = 120.0


# ================================================================ background resolver
class DeviceResolver:
    """One daemon thread per exporter that completes device work off the caller's
    thread: tasks are (ready, run) pairs polled with `ready()` (event.query(), never
    a synchronize); tickers are polled while they report pending work."""

    def __init__(self, exporter, poll: float = 0.005, idle: float = 0.25, autostart: bool = True):
        self.exporter = exporter
        self.autostart = autostart  # False: the owner calls run_once() (tests)
        self.poll, self.idle = poll, idle
        self._tasks: deque = deque()
        self._tickers: list = []
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.timeouts = 0
        self._drain_until = 0.0

    def submit(self, ready, run, on_timeout=None, timeout: float = DEVICE_TIMEOUT_S) -> None:
        self._tasks.append((ready, run, on_timeout, time.monotonic() + timeout))
        self._start()
        self._wake.set()

    def add_ticker(self, tick) -> None:
        with self._lock:
            self._tickers.append(tick)
        self._start()

    def wake(self) -> None:
        self._wake.set()

    def _start(self) -> None:
        if self._thread is None and self.autostart:
            with self._lock:
                if self._thread is None:
                    t = threading.Thread(target=self._loop, name="rl-exporter-device", daemon=True)
                    t.start()
                    self._thread = t

    def run_once(self) -> bool:
        """Poll everything once; True while work is pending. (Tests call this.)"""
        busy = False
        n = len(self._tasks)
        now = time.monotonic()
        for _ in range(n):
            ready, run, on_timeout, deadline = self._tasks.popleft()
            try:
                if ready():
                    run()
                    continue
                if now > deadline:
                    self.timeouts += 1
                    if on_timeout is not None:
                        on_timeout()
                    continue
            except Exception as e:
                count_error(self.exporter, "device_task", e)
                continue
            self._tasks.append((ready, run, on_timeout, deadline))
            busy = True
        for tick in list(self._tickers):
            try:
                busy = tick() or busy
            except Exception as e:
                count_error(self.exporter, "timer_tick", e)
        return busy

    def _loop(self) -> None:
        while True:
            closed = getattr(self.exporter, "closed", False)
            busy = self.run_once()
            if closed and (not busy or time.monotonic() > self._drain_until):
                return
            self._wake.wait(self.poll if busy else self.idle)
            self._wake.clear()

    def drain(self, timeout: float) -> None:
        """After the exporter closed: keep polling pending device work until it is done or
        `timeout` passed (what is left then is counted by the tasks' on_timeout)."""
        self._drain_until = time.monotonic() + timeout
        self._wake.set()
        t = self._thread
        if t is not None:
            t.join(timeout + self.poll + 0.05)
        # the thread may have seen `closed` and left before the drain began: poll here
        while self.run_once() and time.monotonic() < self._drain_until:
            time.sleep(self.poll)
        if self._tasks:  # not completed in time: counted, not silently forgotten
            for _ready, _run, on_timeout, _deadline in list(self._tasks):
                self.timeouts += 1
                if on_timeout is not None:
                    on_timeout()
            self._tasks.clear()


# The exporter interface used here (and by distributions.py): `exporter.helper(name,
# factory)`, `exporter.frames_logged`, `exporter.closed`, `exporter.counts` (error / reject /
# add_nonfinite), `exporter.store`, `exporter.telemetry`, `exporter.run`. At close() the
# exporter ends the open window (end_step) and drains the resolver, so the last window is
# published once its device events complete, within close()'s timeout.
def count_error(exporter, kind, exc, message=None):
    """Count and log a failure of a timer or a distribution on its exporter (never raised)."""
    counts = getattr(exporter, "counts", None)
    if counts is not None:
        counts.error(kind, exc, message)
    else:  # an object standing in for an Exporter (tests, other owners of a store)
        log.error("rl-exporter: %s", message or f"{kind} failed: {exc!r}")


_ATTACH_LOCK = threading.RLock()


def attached(exporter, name: str, factory):
    """The exporter's helper object `name`, created by factory(exporter) on first use."""
    helper = getattr(exporter, "helper", None)
    if helper is not None:
        return helper(name, factory)
    obj = exporter.__dict__.get(name)  # an object standing in for an Exporter
    if obj is None:
        with _ATTACH_LOCK:
            obj = exporter.__dict__.get(name)
            if obj is None:
                obj = exporter.__dict__[name] = factory(exporter)
    return obj


def resolver_of(exporter) -> DeviceResolver:
    return attached(exporter, "_rlx_device_resolver", DeviceResolver)


# ================================================================ timers
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
            count_error(self._timers.exporter, "timer", e)
            stack.append(None)
        return self

    def __exit__(self, *exc):
        stack = self._stack()
        state = stack.pop() if stack else None
        try:
            self._timers._exit(self.phase, state, self.tokens)
        except Exception as e:
            count_error(self._timers.exporter, "timer", e)
        return False

    def __call__(self, fn):
        timers, phase, tokens, cuda = self._timers, self.phase, self.tokens, self.cuda

        @functools.wraps(fn)
        def timed(*a, **kw):
            with Phase(timers, phase, tokens, cuda):
                return fn(*a, **kw)
        return timed


class PhaseTimers:
    def __init__(self, exporter, event_factory=None, resolver: DeviceResolver | None = None,
                 clock=time.perf_counter):
        self.exporter = exporter
        self._event_factory = event_factory      # tests pass a fake event class
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[int, _Window] = {}
        self._manual = 0
        self._local = threading.local()
        self.published = 0                        # windows published
        self.resolver = resolver if resolver is not None else resolver_of(exporter)
        self.resolver.add_ticker(self._tick)
        self.live = live_phases_of(exporter)

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
        return getattr(self.exporter, "frames_logged", 0) + self._manual

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
        goodput = getattr(ex, "goodput", None)
        if goodput is not None:  # badput phases (checkpoint, validation, ...) of this window
            goodput.add_phases(w.totals)
        self.published += 1


def timers_of(exporter) -> PhaseTimers:
    return attached(exporter, "_rlx_timers", PhaseTimers)


def end_step_if_timed(exporter) -> None:
    """Close the open timer window of an exporter that timed a phase, without creating timers
    for one that did not: a rank that times its own phases but leaves log() to rank 0 still
    publishes its phase durations once per step (RLRankStraggler compares them across ranks)."""
    timers = getattr(exporter, "_rlx_timers", None)
    if timers is not None:
        timers.end_step()


# ================================================================ phases in progress
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
        self.exporter = exporter
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
        spans = getattr(self.exporter, "spans", None)
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
        spans = getattr(self.exporter, "spans", None)
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


def live_phases_of(exporter) -> LivePhases:
    return attached(exporter, "_rlx_live_phases", LivePhases)


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
        if name is None or getattr(ex, "_closed", False):
            return ex, None
        try:
            phase = str(name)
            live_phases_of(ex).open(phase)
            return ex, phase
        except Exception as e:
            count_error(ex, "timer", e)
            return ex, None

    def closed(ex, phase):
        if phase is not None:
            try:
                live_phases_of(ex).close(phase)
            except Exception as e:
                count_error(ex, "timer", e)

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
                count_error(exporter, "timer", e)
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
                live_phases_of(holder[0]).open(phase)
        except Exception as e:
            count_error(holder[0], "timer", e)
        return result

    @functools.wraps(orig_end)
    def ended(self, *args, **kwargs):
        try:
            return orig_end(self, *args, **kwargs)
        finally:
            try:
                phase = phase_of(args, kwargs)
                if phase is not None:
                    live_phases_of(holder[0]).close(phase)
            except Exception as e:
                count_error(holder[0], "timer", e)

    started._rlx_exporter = holder
    setattr(cls, start, started)
    setattr(cls, end, ended)
    return True
