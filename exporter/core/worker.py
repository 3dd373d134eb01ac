"""The exporter's worker thread: takes frames off the queue, resolves each key once
through the catalog (cached as a slot), coerces values and writes the store.

A slot says what to do with a key: an int is "store the float at series id i"
(the hot case); the _Slot classes cover scaling, counters, state sets, the step
key, unknown keys under the fallback cap, and drops (counted by reason).
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import NamedTuple

from ..catalog import COUNTER, STATE
from ..catalog.model import WMEAN
from ..spool import SETTINGS_KEY
from .lifecycle import EVENT, event_of
from .segments import Segmenter, kind
from .coerce import Coercer
from .self_metrics import Counts
from .store import Store

log = logging.getLogger("rl_exporter")

KEY_CACHE_LIMIT = 100_000  # resolved keys kept; past it, unknown keys are resolved each time
# Resolving a key the worker has not seen costs tens of microseconds of catalog matching.
# A run that invents keys without end (ids in key names) would keep the worker busy for
# good, and a busy worker slows the training thread through the GIL. New keys are
# therefore resolved from a token bucket: a burst of NEW_KEY_BURST (start-up frames),
# then NEW_KEY_RATE per second; values of keys over budget are counted as rejected
# (reason key_budget) and their keys tried again later.
NEW_KEY_BURST = 20_000
NEW_KEY_RATE = 1_000.0
SEGMENT_START = "rl_run_segment_start_timestamp_seconds"
# A step is implausible when it lands more than JUMP_MIN steps and JUMP_FACTOR recent
# strides past the last one (a unix time or 1e30 passed as the step, `step:99999999999` in
# a log): its frame's values are kept, the step is rejected (implausible_step), so it
# neither moves rl_training_step nor books every later interval as restart. Going back is
# always plausible (a resume from an older checkpoint). NEW_REGIME such steps in a row,
# each past the one before, are a new numbering (steps counted in samples or tokens from
# here on): the last of them is taken.
JUMP_MIN = 100_000
JUMP_FACTOR = 1_000
NEW_REGIME = 3


class _Slot:
    """What to do with a key other than 'store a float at index i'."""
    __slots__ = ()


class _Scaled(_Slot):
    __slots__ = ("sid", "scale")

    def __init__(self, sid, scale):
        self.sid, self.scale = sid, scale


class _Counter(_Slot):
    __slots__ = ("sid",)

    def __init__(self, sid):
        self.sid = sid


class _State(_Slot):
    __slots__ = ("metric", "labels")

    def __init__(self, metric, labels):
        self.metric, self.labels = metric, labels


class _Step(_Slot):
    __slots__ = ()


class _Fallback(_Slot):
    __slots__ = ("sid",)

    def __init__(self, sid):
        self.sid = sid


class _New(_Slot):
    """Resolved, but the series is created only once a valid value arrives, so a
    rejected value never leaves a NaN series behind."""
    __slots__ = ("resolution",)

    def __init__(self, resolution):
        self.resolution = resolution


class _Drop(_Slot):
    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason  # 'ignored' | 'fallback_cap' | 'series_limit'


_STEP = _Step()
_IGNORED = _Drop("ignored")
_FALLBACK_CAP = _Drop("fallback_cap")
_KEY_BUDGET = _Drop("key_budget")
_UNREADABLE = _Drop("unreadable")


class Item(NamedTuple):
    """One queued frame's fields, in this order (Pipeline.restore builds them, the worker
    takes them). Pipeline.enqueue queues a plain tuple of the same fields: a namedtuple's
    constructor is Python code, and on a trainer's cold caches it was a sixth of log()."""
    frame: dict
    step: object              # the step given with it; None: the frame's own, or a count
    ts: float                 # when it was logged (a restored frame: its step's own time)
    restored: bool = False    # exported before a restart: values back, not counted again
    starts: int = 0           # start-up banners read just before it (serve): a segment seam
    mono: float | None = None  # time.monotonic() when logged (goodput intervals); None: recorded


_RESTORED = Item._fields.index("restored")  # enqueue's plain tuples have no field names


def fresh(item: tuple) -> bool:
    """A queued frame that was not exported before a restart (restore() queues those)."""
    return not item[_RESTORED]


def _is_zero(w) -> bool:
    return (w.__class__ is int or w.__class__ is float) and w == 0


class Worker:
    """Drains `queue` (a deque guarded by `qlock`, filled by Exporter.log())."""

    def __init__(self, *, store: Store, catalog, framework: str, counts: Counts,
                 queue: collections.deque, qlock: threading.Lock, fallback_limit: int,
                 poll: float, frame_seconds, spool=None,
                 expert_series: bool = False, segments: bool = True):
        self.store, self.catalog, self.framework = store, catalog, framework
        self.counts = counts
        self.queue, self.qlock = queue, qlock
        self.fallback_limit = fallback_limit
        self.poll = poll
        self.frame_seconds = frame_seconds  # records the worker's time per frame
        self.spool = spool                 # spool.SpoolWriter or None
        self.expert_series = expert_series  # per-expert MoE series are opt-in
        self.coerce = Coercer(counts)
        # Where a restart or a second run in the same log begins (the step counter going back,
        # a start-up banner after training): doctor's segmenter, current segment only.
        self.segmenter = Segmenter(store.run, keep=1) if segments else None
        self.slots: dict = {}
        # Weighted means measured over nothing are "no data", not 0 (a log-prob gap over 0
        # tokens): raw weight key -> the value keys it weights, and value key -> weight key.
        self.weights: dict[str, set] = {}
        self.weight_of: dict[str, str] = {}
        self.fallback_keys = 0
        self.last_step: float | None = None
        self._strides: collections.deque = collections.deque(maxlen=20)  # recent increments
        self._far: list = []  # implausible steps in a row, each past the one before
        self.last_frame_ts = float("nan")
        self.busy = False
        self.starts = 0      # start-up banners read before the frames processed so far
        self.goodput = None  # exporter/goodput.Goodput, fed after each frame
        self.lifecycle = None  # exporter/core/lifecycle.Lifecycle, moved by the steps
        self._budget = float(NEW_KEY_BURST)
        self._budget_t = time.monotonic()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="rl-exporter-worker", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, deadline: float, grace: float = 0.0) -> bool:
        """Stop by `deadline` (time.monotonic()): frames (and their device copies) are processed
        until `grace` before it; then the rest of the batch is counted as
        dropped{close_timeout}, so the count is complete when stop() returns. True when the
        thread ended; False when it is still on a frame (it counts the rest when it stops)."""
        self.coerce.deadline = deadline - grace
        self._stop.set()
        if self.thread.ident is not None:
            self.thread.join(max(0.0, deadline - time.monotonic()))
        return not self.thread.is_alive()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    # ------------------------------------------------------------ loop
    def _loop(self) -> None:
        counts = self.counts
        while True:
            with self.qlock:
                batch = list(self.queue)
                self.queue.clear()
                self.busy = bool(batch)
            if batch:
                for i, item in enumerate(batch):  # Item(frame, step, ts, restored, starts, mono)
                    end = self.coerce.deadline  # set by close()
                    if end is not None and time.monotonic() > end:
                        counts.drop("close_timeout", sum(fresh(x) for x in batch[i:]))
                        break
                    t0 = time.perf_counter()
                    try:
                        self.process(*item)
                    except Exception as e:
                        counts.error("process", e)
                    try:
                        self.frame_seconds(time.perf_counter() - t0)
                    except Exception as e:
                        counts.error("self_histogram", e)
                    # Hand the GIL over between frames: a training thread that released it
                    # (any torch op does) would otherwise wait out the 5 ms switch interval.
                    time.sleep(0)
                self.busy = False
                continue
            self.busy = False
            if self._stop.wait(self.poll):
                with self.qlock:
                    if self.queue:
                        continue  # drain what arrived before close()
                return

    def _settings(self, values) -> None:
        """rl_config_value{parameter} as the live run set it (a spool's settings record;
        the live run's own went to the store and the spool from set_config)."""
        if isinstance(values, dict):
            for p, v in values.items():
                if isinstance(p, str) and v.__class__ is float:
                    self.store.set("rl_config_value", v, {"parameter": p})

    def process(self, frame: dict, step, ts: float, restored: bool = False,
                starts: int = 0, mono: float | None = None) -> None:
        """One frame (an Item's fields). `starts`: start-up banners its reader read just
        before it (serve); one after training frames begins a new segment. `mono`:
        time.monotonic() when it was logged (None for recorded frames: replays), what the
        goodput ledger's intervals are measured with."""
        if starts:
            self.starts += starts
        if EVENT in frame:  # a lifecycle event read from a log or a spool (core/lifecycle.py)
            ev = event_of(frame)
            if ev is not None and self.lifecycle is not None:
                if not self.lifecycle.apply_event(ev[0], step, ts, ev[1], ev[2]):
                    self.counts.reject("unknown_event", f"lifecycle event {ev[0]!r} is not one "
                                       "of finished, crashed, paused, resumed; ignored")
                if not restored:
                    self.counts.processed += 1
                return
        if SETTINGS_KEY in frame:  # the run's settings, read back from a spool (spool.py)
            frame = dict(frame)
            self._settings(frame.pop(SETTINGS_KEY))
        if self.weights:
            zero = [keys for wk, keys in self.weights.items() if _is_zero(frame.get(wk))]
            if zero:
                skip = set().union(*zero)
                frame = {k: v for k, v in frame.items() if k not in skip}
        slots = self.slots
        store = self.store
        put = store.put
        frame_step = None
        starved = False  # out of new-key budget for the rest of this frame
        over = 0
        for k, v in frame.items():
            # One key that cannot be read (a key whose str() raises, a value whose __float__
            # raises anything) costs that key, never the rest of the frame or its step.
            # A try block costs nothing in CPython 3.11 until something raises.
            try:
                slot = slots.get(k)
                if slot is None:
                    if starved:
                        over += 1
                        continue
                    slot = self._slot_for(k)
                    if slot is _KEY_BUDGET:
                        starved = True
                        over += 1
                        continue
                    if slot is _UNREADABLE:  # counted where it was found
                        continue
                    if k in self.weight_of and _is_zero(frame.get(self.weight_of[k])):
                        continue
                if slot.__class__ is int:
                    tv = v.__class__
                    if tv is not float:
                        if tv is int or tv is bool:
                            try:
                                v = float(v)
                            except OverflowError:
                                self.counts.reject("overflow")
                                continue
                        else:
                            v = self.coerce.other(k, v)
                            if v is None:
                                continue
                    put(slot, v)  # the one place non-finite values are counted
                else:
                    st = self._special(slot, k, v)
                    if st is not None:
                        frame_step = st
            except Exception as e:  # our own fault: counted and logged, the frame goes on
                self.counts.error("process", e)
        if over:
            self.counts.rejected["key_budget"] += over
        if step is None:
            step = frame_step
        self._advance(step, ts, frame)
        gp = self.goodput
        if restored:  # exported and counted before a restart: values back, counts unchanged
            if gp is not None:
                gp.restore(self.last_step, ts)
            return
        if self.spool is not None:
            self.spool.write(frame, step, ts, self.coerce)
        self.counts.processed += 1
        self.last_frame_ts = time.time()
        if gp is not None:
            try:
                gp.on_frame(frame, slots, self.last_step, ts, mono)
            except Exception as e:  # goodput is ours: counted, the frame stands
                self.counts.error("goodput", e)

    def replay(self, frame: dict, step, ts: float) -> None:
        """Process a recorded frame now, on the caller's thread, stamped `ts` (which is also
        its last-frame time): in order with nothing queued."""
        self.process(frame, step, ts)
        self.last_frame_ts = ts

    def _advance(self, step, ts: float, frame=None) -> None:
        bad = False
        if step is not None:
            raw = step
            step = self.coerce.number(None, step, count=False)
            if step is None or step != step or step in (float("inf"), float("-inf")):
                # the frame's values are kept; only its step is not (counted, said once)
                self.counts.reject("bad_step", f"step {raw!r} is not a finite number; the "
                                   "frame is exported, the step counter is left as it was")
                step, bad = None, True
            elif self._implausible(step):
                self.counts.reject("implausible_step", f"step {raw!r} jumps more than "
                                   f"{JUMP_MIN:,} steps and {JUMP_FACTOR:,} strides past step "
                                   f"{self.last_step:g}; the frame is exported, the step is not")
                step, bad = None, True
        seg = self.segmenter
        new = False
        if seg is not None and frame is not None and seg.see(step, self.starts, kind(frame)):
            new = True
            self.store.set(SEGMENT_START, ts)
            log.info("rl-exporter: run %s: a new segment begins (%s)", self.store.run,
                     seg.current.why)
        if bad:
            return
        counted = step is None
        if counted:
            step = 0 if self.last_step is None else self.last_step + 1  # count frames
        if step != self.last_step:
            self.last_step = step
            self.store.set("rl_training_step", step)
            self.store.set("rl_training_step_timestamp_seconds", ts)
            if self.lifecycle is not None:
                self.lifecycle.on_step(step, ts, counted, new)
        elif new and self.lifecycle is not None:
            self.lifecycle.on_step(step, ts, counted, new)
        if seg is not None:
            seg.current.account(step)

    def _implausible(self, step) -> bool:
        """Whether `step` jumps absurdly far past the last step (module constants)."""
        last = self.last_step
        if last is None or step <= last:
            self._far.clear()
            return False
        jump = step - last
        strides = self._strides
        if jump <= JUMP_MIN or jump <= JUMP_FACTOR * (  # (the median only for a long jump)
                sorted(strides)[len(strides) // 2] if strides else 1.0):
            strides.append(jump)
            self._far.clear()
            return False
        far = self._far
        if far and step <= far[-1]:
            far.clear()
        far.append(step)
        if len(far) < NEW_REGIME:
            return True
        strides.clear()  # a new numbering: its own strides from here
        strides.append(far[-1] - far[-2])
        far.clear()
        return False

    def _special(self, slot, key, v):
        cls = slot.__class__
        store = self.store
        if cls is _New:
            if v is None:
                return None
            num = self.coerce.number(key, v)
            if num is None:
                return None
            slot = self._materialise(key, slot.resolution)
            if slot.__class__ is int:
                store.put(slot, num)
                return None
            return self._special(slot, key, num)
        if cls is _Scaled:
            v = self.coerce.number(key, v)
            if v is not None:
                store.put(slot.sid, v * slot.scale)
        elif cls is _Step:
            if v.__class__ is str:  # ms-swift's "global_step/max_steps": "2/4389"
                head = v.partition("/")[0].strip()
                v = int(head) if head.isdigit() else v
            return self.coerce.number(key, v)
        elif cls is _Counter:
            v = self.coerce.number(key, v)
            if v is not None:
                if v < 0 or v != v:
                    self.counts.reject("negative_counter" if v < 0 else "nonfinite_counter")
                else:
                    store.put(slot.sid, v)
        elif cls is _State:
            if v is None:
                return None
            if isinstance(v, str):
                store.set_state(slot.metric, v, slot.labels)
            else:
                self.counts.reject("state_not_string")
        elif cls is _Fallback:
            self.counts.unknown += 1
            v = self.coerce.number(key, v)
            if v is not None:
                store.put(slot.sid, v)
        elif cls is _Drop:
            if slot.reason == "ignored":
                self.counts.ignored += 1
            elif slot.reason == "fallback_cap":
                self.counts.unknown += 1
                self.counts.fallback_dropped += 1
            else:
                self.counts.rejected[slot.reason] += 1  # series_limit, key_budget
        return None

    def _slot_for(self, key):
        """Resolve a key once and cache what to do with it."""
        if self._budget < 1.0:  # refill only when empty: the common path is one compare
            now = time.monotonic()
            self._budget = min(NEW_KEY_BURST,
                               self._budget + (now - self._budget_t) * NEW_KEY_RATE)
            self._budget_t = now
        if self._budget < 1.0:
            if "key_budget" not in self.counts.rejected:
                log.warning("rl-exporter: more than %d new metric keys per second; values of "
                            "keys not resolved yet are counted, not exported "
                            "(rl_exporter_values_rejected_total{reason=\"key_budget\"})",
                            int(NEW_KEY_RATE))
            return _KEY_BUDGET  # not cached: the key is tried again once there is budget
        self._budget -= 1.0
        orig = key
        if not isinstance(key, str):
            try:
                key = str(key)
            except Exception as e:  # a key object whose __str__ raises: that key is lost
                self.counts.reject("unreadable", f"a {type(orig).__name__} key cannot be named "
                                   f"({type(e).__name__}); its value is not exported")
                return _UNREADABLE  # not cached: the key object may not even hash stably
        r = self.catalog.resolve(key, self.framework)
        if r.agg == WMEAN and r.weight and not r.fallback:
            self.weight_of[orig] = r.weight
            self.weights.setdefault(r.weight, set()).add(orig)
        if r.step:
            slot = _STEP
        elif r.ignored or (not self.expert_series and r.metric is not None
                           and "expert" in r.metric.labels):
            slot = _IGNORED
        elif r.fallback:
            if self.fallback_keys >= self.fallback_limit:
                slot = _FALLBACK_CAP
                if self.counts.fallback_dropped == 0:
                    log.warning("rl-exporter: more than %d unknown keys; further unknown keys are "
                                "counted, not exported (rl_exporter_fallback_keys_dropped_total)",
                                self.fallback_limit)
            else:
                self.fallback_keys += 1  # reserved now so the cap holds even before values
                slot = _New(r)
        elif r.metric.kind == STATE:
            slot = _State(r.metric, r.labels)
        else:
            slot = _New(r)
        if len(self.slots) < KEY_CACHE_LIMIT:
            self.slots[orig] = slot
        return slot

    def _materialise(self, key, r):
        """First valid value of a resolved key: create its series and cache the fast slot."""
        sid = self.store.series_id(r.metric, r.labels)
        if sid is None:
            slot = _Drop("series_limit")
        elif r.fallback:
            slot = _Fallback(sid)
        elif r.metric.kind == COUNTER:
            slot = _Counter(sid)
        elif r.scale != 1.0:
            slot = _Scaled(sid, r.scale)
        else:
            slot = sid
        if key in self.slots:
            self.slots[key] = slot
        return slot
