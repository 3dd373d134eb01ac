"""RL goodput: where a run's wall time went, as rl_goodput_seconds_total{bucket}.

Fed by the worker after each processed frame (exporter/core/worker.py), so the hook, the
sidecar and `backfill` account the same frames the same way. Each time the step advances,
the wall time since the previous step (its interval) is split:

- restart: the whole interval when the step is not past the highest step seen (steps
  redone after resuming from an older checkpoint, and the downtime before them);
- the badput phases reported for the step (the phase -> bucket table PHASE_BUCKETS below,
  matched on the `phase` label the catalog gives a framework's timing keys; the phases whose
  meaning depends on the run's mode, MODE_PHASES, by rl_config_value{parameter=
  "async_training"}; a phase nested in another one reported beside it, NESTED, taken out of
  it so no second is booked twice), scaled down
  to fit the interval when they, or the step's own reported duration, exceed it (badput
  beyond the interval, up to one interval's worth, is offered to the next: a timer window
  is often published just after its step's frame);
- rollout_tail gets the long tail of generation where the framework reports the
  slowest sample beside the mean (veRL agent loop: max - mean of generate_sequences);
- paused: time in a declared pause (a phase named as the alert rules' pause_phases:
  pause, heat_guard, thermal_pause): neither productive nor stalled. Where the pause was seen
  live (the hook's timers and the integrations' phase tracking, exporter/core/lifecycle.py),
  its wall-clock overlap with the interval is taken, whenever its timer window is published;
  otherwise (serve: a log shows a pause once it ended) the pause phase's reported duration;
- stalled: what is left of the interval beyond the run's expected step time, when what is
  left exceeds the stall threshold (exporter/core/thresholds.py, the RLRunStalled condition);
- step: the rest (productive).

Intervals are measured on time.monotonic() (stamped when the frame was logged), so an
NTP step or a VM pause of the wall clock is not time spent: +1 h then -2 h of wall clock
books nothing. The wall clock is used only where no monotonic stamp exists: recorded
frames (backfill's replays) and the first interval after a restart (the last step's
time comes from the previous process).

startup is the time from the exporter's start to the first step, less that step's own
duration where the framework reports it (rl_step_duration_seconds). A phase timed with
rlx.timer() arrives when its window is published, which may be after its step's frame:
it then lands in the next interval (the totals are the same).
"""
from __future__ import annotations

import re
import threading
import time
from collections import deque

from .thresholds import DEFAULT, PAUSE_PHASES, HangThresholds

METRIC = "rl_goodput_seconds_total"
PRODUCTIVE = "step"
PAUSED = "paused"
UNCLASSIFIED_ROLLOUT = "rollout_unclassified"
BUCKETS = (PRODUCTIVE, "startup", "checkpoint", "validation", "weight_sync", "offload",
           "logprob_recompute", "reference_logprob", "rollout_tail", UNCLASSIFIED_ROLLOUT,
           "rollout_wait", "stalled", "restart", PAUSED)

# What each bucket is: productive (the step: generation, scoring, the update); overhead, time
# the algorithm or the run's own plan requires (the pi_old pass, required at n_mini > 1 and for
# rollout correction; the reference pass, required with a KL coefficient above 0; weight sync;
# offload/onload between trainer and engine on shared GPUs; checkpoints, validation, start-up;
# the long tail of generation, which a synchronous batch waits for by construction;
# a pause the run declares); waste,
# time nothing needed (an async trainer idle for samples, a stall, redone steps); unclassified,
# the trainer's rollout call in a run whose mode is unknown (the step's own rollout if it is
# synchronous, idle waiting if async), so the run's ratio is not comparable with others'.
PRODUCTIVE_CLASS, OVERHEAD, WASTE, UNCLASSIFIED = "productive", "overhead", "waste", "unclassified"
CLASS_OF = {PRODUCTIVE: PRODUCTIVE_CLASS, "startup": OVERHEAD, "checkpoint": OVERHEAD,
            "validation": OVERHEAD, "weight_sync": OVERHEAD, "offload": OVERHEAD,
            "logprob_recompute": OVERHEAD, "reference_logprob": OVERHEAD, "rollout_tail": OVERHEAD,
            UNCLASSIFIED_ROLLOUT: UNCLASSIFIED,
            "rollout_wait": WASTE, "stalled": WASTE, "restart": WASTE,
            PAUSED: OVERHEAD}  # a pause the run declares (a heat guard, a preemption wait)
CLASSES = (PRODUCTIVE_CLASS, OVERHEAD, WASTE, UNCLASSIFIED)
ASYNC_SETTING = "async_training"   # rl_config_value{parameter=...}, captured by the integrations

# The trainer's call for its next batch: the rollout itself in a synchronous run (veRL's sync
# trainer gen, slime/Miles train.py's train_wait, AReaL at max_head_offpolicyness 0), the wait
# for samples another process generates in an async one (veRL's async trainers, train_async.py,
# AReaL's off-policy rollouts). AReaL's timeperf/rollout is phase "rollout_batch" (the catalog).
MODE_PHASES = frozenset({"gen", "train_wait", "rollout_batch"})
# phase -> the phases that run inside it and are reported beside it, each booked in its own
# bucket and taken out of the outer one (slime/Miles train_wait holds the weight push,
# offload/onload, the save and eval between two train() calls; veRL's fully-async
# total_wait_time is part of gen)
NESTED = {
    "train_wait": ("update_weights", "sleep", "wake_up", "save_model", "eval_rollout",
                   "ref_model_update"),
    "gen": ("wait_for_samples", "agent_loop_tail"),
}
# the slowest sample's lead over the mean in veRL's agent loop (generate_sequences max - mean):
# inside gen in a synchronous run; off the trainer's clock (the rollouter's) in an async one
_TAIL = "agent_loop_tail"

# The one phase -> bucket table (first match wins; matched on the sanitized `phase` label,
# case-insensitively). Phases no row matches are productive step time. The phase names
# each framework produces, and the bucket they feed, are listed in docs/goodput.md.
PHASE_BUCKETS: tuple[tuple[str, str], ...] = (
    # a declared pause of the whole run (thresholds.PAUSE_PHASES, the rules' pause_phases)
    (PAUSED, rf"^(?:{PAUSE_PHASES})$"),
    # veRL save_checkpoint, AReaL save / checkpoint_for_recover, slime save_model, generic checkpoint
    ("checkpoint", r"save|checkpoint|ckpt"),
    # veRL testing, AReaL eval, slime/Miles eval_rollout, TRL/HF eval, generic validation
    ("validation", r"^(testing|test|eval|evaluate|evaluation|validate|validation|val)$"
                   r"|^(eval|val|validate)_|_(eval|validation)$"),
    # veRL update_weights / param_sync / one-step-off sync_rollout_weights, AReaL update_weights,
    # OpenRLHF broadcast, slime/Miles update_weights / ref_model_update, TRL 1.16
    # GRPOTrainer.sync_weights (before 1.x _move_model_to_vllm)
    ("weight_sync", r"update_weights|weight_sync|sync_weights|sync_rollout_weights|param_sync"
                    r"|reshard|broadcast|move_model_to_vllm|ref_model_update"),
    # moving state between trainer and engine on shared GPUs: slime/Miles sleep / wake_up, veRL
    # v1 switch_to_trainer / switch_to_rollout, AReaL {role}_onload|offload and the rollout's
    # pause / offload / onload / continue / resume around a weight update
    ("offload", r"^(sleep|wake_up|switch_to_(trainer|rollout)|(actor|critic|ref|teacher|rollout)_"
                r"(onload|offload)|rollout_(pause|pause_generation|continue_generation|resume))$"),
    # a phase the run itself names a wait (veRL fully-async wait_for_samples /
    # wait_for_enough_samples, a user's rlx.timer("wait_...")); train_wait is in MODE_PHASES
    ("rollout_wait", r"(^|_)wait(_|$)"),
    # the pi_old pass: veRL old_log_prob, slime/Miles log_probs, AReaL recompute_logp
    ("logprob_recompute", r"^(old_log_probs?|log_probs?|recompute_logp|compute_log_prob)$"),
    # the reference (or teacher) pass: veRL ref, slime/Miles ref_log_probs, AReaL ref_logp /
    # teacher_logp
    ("reference_logprob", r"^(ref|ref_log_probs?|ref_logp|teacher_logp|compute_ref_log_prob)$"),
)
_TABLE = tuple((bucket, re.compile(rx, re.IGNORECASE)) for bucket, rx in PHASE_BUCKETS)
_ROLLOUT_TAIL_PHASES = ("generate_sequences",)
RECENT_STEPS = 20  # step intervals the expected step time is the median of
KEY_LIMIT = 100_000  # raw keys whose role is cached (the worker's own key-cache limit)


def mode_bucket(async_training: float | None) -> str:
    """Where a MODE_PHASES phase goes: productive in a synchronous run, waiting in an async
    one, unclassified where the run's mode is unknown."""
    if async_training is None:
        return UNCLASSIFIED_ROLLOUT
    return "rollout_wait" if async_training else PRODUCTIVE


def bucket_of(phase: str, async_training: float | None = None) -> str:
    """The goodput bucket a phase's time feeds (PRODUCTIVE when no row matches); a phase of
    MODE_PHASES by the run's mode (async_training 1/0, None: unknown)."""
    if phase in MODE_PHASES:
        return mode_bucket(async_training)
    for bucket, rx in _TABLE:
        if rx.search(phase):
            return bucket
    return PRODUCTIVE


_MODE = "@mode"  # the bucket of a MODE_PHASES phase, decided per frame
_PHASE, _STEP_DUR, _TAIL_MAX, _TAIL_MEAN = range(4)
_NESTED_IN = {child: parent for parent, children in NESTED.items() for child in children}


def _role(metric: str, labels: dict):
    """What a series means to the goodput (None: nothing)."""
    stat = labels.get("stat", "")
    if labels.get("split"):
        return None
    if metric == "rl_phase_duration_seconds" and not stat and "phase" in labels:
        phase = labels["phase"]
        if phase in MODE_PHASES:
            return (_PHASE, _MODE, phase)
        bucket = bucket_of(phase)
        if bucket == PRODUCTIVE and phase not in _NESTED_IN:
            return None  # productive: the remainder
        return (_PHASE, bucket, phase)
    if metric == "rl_step_duration_seconds" and not stat:
        return (_STEP_DUR, None)
    if metric == "rl_agent_loop_duration_seconds" and labels.get("phase") in _ROLLOUT_TAIL_PHASES:
        if stat == "max" or labels.get("sample") == "slowest":
            return (_TAIL_MAX, None)
        if stat in ("", "mean"):  # the catalog drops stat="mean" (the default statistic)
            return (_TAIL_MEAN, None)
    return None


class Goodput:
    """One run's ledger. on_frame() runs on the worker thread; add_phases() on the timers'
    resolver thread; snapshot() on any (the /status route)."""

    def __init__(self, store, start: float | None = None, thresholds: HangThresholds = DEFAULT,
                 wall=time.time, mono=time.monotonic):
        self.store = store
        self.thresholds = thresholds
        self._wall = wall
        self._mono = mono
        self.start = wall() if start is None else float(start)
        self.start_mono = mono() if start is None else None
        self._lock = threading.Lock()
        self._keys: dict = {}                        # raw key -> (series id, role or None)
        self._relevant: list = []                    # the keys whose role is not None
        self._bucket_sids: dict[str, int] = {}
        self._pool: dict[str, float] = {}            # badput phase seconds not yet accounted
        self._recent: deque = deque(maxlen=RECENT_STEPS)
        self.totals = dict.fromkeys(BUCKETS, 0.0)
        self.last_step = None
        self.max_step = None
        self.last_ts = None
        self.last_mono = None  # time.monotonic() of the last step, when it was stamped so
        self.spans = None  # exporter/spans.Spans when traces are on: a span per step
        self.lifecycle = None  # core/lifecycle.Lifecycle: the pauses seen live
        # a bucket's series appears with its first seconds (and step's with the first
        # interval): a run pays only for the buckets it has (the series budget)

    # ------------------------------------------------------------ feeding
    def on_frame(self, frame: dict, slots: dict, step, ts: float,
                 mono: float | None = None) -> None:
        """After the worker processed `frame` (its values are in the store): take the
        step's phase durations, then account the interval if the step advanced."""
        store = self.store
        phases: dict[str, tuple[str, float]] = {}   # phase -> (bucket or _MODE, seconds)
        step_dur = tail_max = tail_mean = None
        keys = self._keys
        values = store.values
        # the usual frame has only keys seen before: visit just the few that matter
        todo = self._relevant if not (frame.keys() - keys.keys()) else frame
        for k in todo:
            hit = keys.get(k)
            if hit is None:  # a key not seen yet, or not resolved to a series yet
                if k not in frame:
                    continue
                hit = self._key_role(k, slots.get(k))
                if hit is None:
                    continue
            sid, role = hit
            if role is None or k not in frame:
                continue
            v = values[sid]
            if not (v >= 0.0) or v == float("inf"):  # NaN, negative, inf: not a duration
                continue
            kind = role[0]
            if kind == _PHASE:
                b, s = phases.get(role[2], (role[1], 0.0))
                phases[role[2]] = (b, s + v)
            elif kind == _STEP_DUR:
                step_dur = v
            elif kind == _TAIL_MAX:
                tail_max = v
            else:
                tail_mean = v
        if tail_max is not None and tail_mean is not None and tail_max > tail_mean:
            phases[_TAIL] = ("rollout_tail", tail_max - tail_mean)
        seconds = self._classify(phases) if phases else {}
        if seconds:
            self.add_buckets(seconds)
        if step is not None:
            self.on_step(step, ts, step_dur, mono)

    def async_training(self) -> float | None:
        """The run's mode as its integration or config print exported it (None: unknown)."""
        v = self.store.get("rl_config_value", {"parameter": ASYNC_SETTING})
        return None if v is None or v != v else v

    def _classify(self, phases: dict) -> dict:
        """{bucket: seconds} of one frame's phases: the mode-dependent ones by the run's mode,
        a nested phase taken out of the phase it ran in when both are reported."""
        mode = None
        out: dict[str, float] = {}
        if _TAIL in phases and self.async_training():
            phases = {p: v for p, v in phases.items() if p != _TAIL}
        for phase, (bucket, s) in phases.items():
            children = NESTED.get(phase)
            if children:
                s = max(0.0, s - sum(phases[c][1] for c in children if c in phases))
            if bucket == _MODE:
                if mode is None:
                    mode = (mode_bucket(self.async_training()),)
                bucket = mode[0]
            if bucket != PRODUCTIVE:
                out[bucket] = out.get(bucket, 0.0) + s
        return out

    def _key_role(self, key, slot):
        """(series id, role) of a raw key, cached once its series exists (None until then:
        a key whose first value is still to come has no series yet)."""
        sid = slot if slot.__class__ is int else getattr(slot, "sid", None)
        if sid is None:
            if slot is not None and not hasattr(slot, "resolution") and len(self._keys) < KEY_LIMIT:
                self._keys[key] = (None, None)  # resolved to no series (ignored, step, state)
            return None
        hit = (sid, _role(self.store.metrics[sid].name, self.store.labels[sid]))
        if len(self._keys) < KEY_LIMIT:
            self._keys[key] = hit
            if hit[1] is not None:
                self._relevant.append(key)
        return hit

    def add_phases(self, totals: dict) -> None:
        """Phase totals of a published timer window (phase name -> seconds)."""
        out: dict[str, float] = {}
        mode = self.async_training()
        for phase, sec in totals.items():
            b = bucket_of(str(phase), mode)
            if b != PRODUCTIVE and sec >= 0.0:
                out[b] = out.get(b, 0.0) + float(sec)
        if out:
            self.add_buckets(out)

    def add_buckets(self, seconds: dict) -> None:
        with self._lock:
            for b, s in seconds.items():
                self._pool[b] = self._pool.get(b, 0.0) + s

    def restore(self, step, ts: float) -> None:
        """A frame exported before a restart (the sidecar's state): the step and its time are
        known again, nothing is accounted."""
        with self._lock:
            if step is not None:
                self.last_step = step
                self.max_step = step if self.max_step is None else max(self.max_step, step)
            self.last_ts = ts
            self.last_mono = None  # another process's step: only its wall time is known

    def _since(self, ts: float, mono: float | None, last_ts: float, last_mono) -> float:
        """Seconds between two stamps: monotonic where both have one, else wall clock."""
        if mono is not None and last_mono is not None:
            return max(0.0, mono - last_mono)
        return max(0.0, ts - last_ts)

    def on_step(self, step, ts: float, step_dur: float | None = None,
                mono: float | None = None) -> None:
        lc = self.lifecycle
        live = lc is not None and lc.pauses_seen
        with self._lock:
            if step == self.last_step:
                return
            add = dict.fromkeys(BUCKETS, 0.0)
            pool, self._pool = self._pool, {}
            t0 = self.start if self.last_ts is None else self.last_ts
            paused = 0.0
            if live:  # the pauses' own wall-clock time, not their timer windows
                pool.pop(PAUSED, None)
                paused = min(max(0.0, ts - t0), lc.paused_between(t0, ts))
            if self.last_ts is None:
                first = self._since(ts, mono, self.start, self.start_mono)
                add[PAUSED] = paused
                add[PRODUCTIVE] = min(first - paused, step_dur or 0.0)  # the first step's own time
                add["startup"] = first - paused - add[PRODUCTIVE]
            else:
                dt = self._since(ts, mono, self.last_ts, self.last_mono)
                if self.max_step is not None and step <= self.max_step:
                    add["restart"] = dt  # redone: its phases were redone too
                else:
                    add[PAUSED] = paused
                    dt -= paused  # the interval's time outside a declared pause
                    bad = sum(pool.values())
                    # phases that add up to more than the interval overlap; a step that
                    # reports itself longer than its interval (a replay, the demo) is scaled
                    # as a whole, so its phases keep their share of it
                    denom = max(bad, step_dur or 0.0)
                    scale = dt / denom if denom > dt else 1.0
                    for b, s in pool.items():
                        add[b] += s * scale
                    if bad > dt and bad >= (step_dur or 0.0):
                        # more badput than interval: a timer window published after its step
                        # (it belongs to the previous interval) or phases that overlap; the
                        # excess, at most one interval's worth, is offered to the next one
                        keep = (1.0 - scale) * min(1.0, dt / (bad - dt))
                        self._pool = {b: s * keep for b, s in pool.items()}
                    rest = dt - bad * scale
                    expected = _median(self._recent)
                    if rest > self.thresholds.stall_limit(expected):
                        add["stalled"] = rest - (expected or 0.0)
                        rest -= add["stalled"]
                    else:
                        self._recent.append(dt)  # a stalled interval is no step-time sample
                    add[PRODUCTIVE] = rest
            self.last_step, self.last_ts, self.last_mono = step, ts, mono
            self.max_step = step if self.max_step is None else max(self.max_step, step)
            for b, s in add.items():
                self.totals[b] += s
        for b, s in add.items():
            if s:
                self._inc(b, s)
        if self.spans is not None:
            self.spans.step(step, ts)

    def _inc(self, bucket: str, seconds: float) -> None:
        sid = self._bucket_sids.get(bucket)
        if sid is None:
            sid = self.store.series_id(self.store.catalog.metrics[METRIC], (("bucket", bucket),))
            if sid is None:  # past the series limit (counted by the store's owner)
                self.store.rejected["series_limit"] += 1
                return
            self._bucket_sids[bucket] = sid
        self.store.values[sid] += seconds  # this ledger is the series' only writer

    # ------------------------------------------------------------ reading
    def expected_step_seconds(self) -> float | None:
        with self._lock:
            return _median(self._recent)

    def snapshot(self, now: float | None = None) -> dict:
        """Goodput so far: accounted seconds per bucket, the productive ratio, and the time
        since the last step (not accounted until the next step; `stalled_now` is the part
        of it past the stall threshold)."""
        with self._lock:
            totals = dict(self.totals)
            last, last_mono = self.last_ts, self.last_mono
            expected = _median(self._recent)
        wall = sum(totals.values())
        if now is None and (last_mono is not None or (last is None and self.start_mono)):
            # monotonic, like the intervals: a wall-clock step is no open time either
            open_s = max(0.0, self._mono() - (last_mono if last is not None else self.start_mono))
        else:
            now = self._wall() if now is None else now
            open_s = max(0.0, now - (last if last is not None else self.start))
        limit = self.thresholds.stall_limit(expected) if last is not None else None
        active = open_s
        lc = self.lifecycle
        if lc is not None and limit is not None:  # a declared pause is never stalled time
            # open_s is monotonic where it can be; the pauses are stamped in wall time
            wall_now = self._wall() if now is None else now
            active = 0.0 if lc.paused or lc.ended else \
                max(0.0, open_s - lc.paused_between(last, wall_now))
        classes = class_totals(totals)
        return {"buckets": {b: round(s, 3) for b, s in totals.items()},
                "classes": {c: round(s, 3) for c, s in classes.items()},
                "accounted_seconds": round(wall, 3),
                "ratio": round(totals[PRODUCTIVE] / wall, 4) if wall > 0 else None,
                # where no second is unclassified, the ratio means the same as another run's
                "comparable": classes[UNCLASSIFIED] == 0.0,
                "unaccounted_seconds": round(open_s, 3),
                "stalled_now_seconds": round(max(0.0, active - (expected or 0.0)), 3)
                if limit is not None and active > limit else 0.0}


def class_totals(buckets: dict) -> dict:
    """Seconds per class (CLASS_OF) of a {bucket: seconds} ledger."""
    out = dict.fromkeys(CLASSES, 0.0)
    for b, s in buckets.items():
        out[CLASS_OF.get(b, WASTE)] += s
    return out


def _median(values):
    if not values:
        return None
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0
