"""Where a backfilled sample's timestamp comes from, in order of preference:

1. `log`: the log's own timestamps (spool `ts`, a logging prefix), when they are plausible;
2. `steps`: the run's own step durations: the value of the canonical
   `rl_step_duration_seconds` after catalog resolution (veRL `timing_s/step`, slime
   `perf/step_time`, OpenRLHF `timing/step_total`, ...), summed from a start time;
3. `fixed`: `--step-seconds` per step.

Log timestamps are not plausible when they span far less time than the steps the same
frames say they took: a spool written by a replay or by a sidecar catching up on a backlog
stamps processing time, not training time.

A jump of more than MAX_GAP between two frames (a host clock set wrong, a corrupt `ts`, a
step "duration" of years) is not a pause of the run: filling it would mean one TSDB block
per 2 h of it (44,000 for ten years). The Clock closes it up to one step and shifts the
times after it by the same amount; Clock.jumps lists them, and backfill says so.
"""
from __future__ import annotations

import math

from ..catalog import CATALOG

STEP_DURATION = "rl_step_duration_seconds"
CLOCKS = ("auto", "log", "steps", "fixed")
DESCRIBE = {
    "log": "the log's own timestamps",
    "steps": "the run's step durations (rl_step_duration_seconds)",
    "fixed": "a fixed --step-seconds per step",
}
_IMPLAUSIBLE = 0.2  # log time span / summed step durations below this: not training time
MAX_GAP = 86400.0  # seconds between two frames beyond which the clock jumped, not the run


class StepDurations:
    """Per frame: the base rl_step_duration_seconds value, if the frame has one."""

    def __init__(self, catalog=CATALOG):
        self.catalog = catalog
        self._cache: dict = {}

    def of(self, data: dict, framework: str) -> float | None:
        cache = self._cache
        for k, v in data.items():
            key = (k, framework)
            scale = cache.get(key)
            if scale is None:
                r = self.catalog.resolve(k, framework)
                ok = (r.metric is not None and not r.fallback and not r.ignored
                      and r.metric.name == STEP_DURATION and not r.labels)
                scale = cache[key] = r.scale if ok else 0.0
            if scale and isinstance(v, (int, float)) and not isinstance(v, bool):
                d = float(v) * scale
                if d > 0 and math.isfinite(d):
                    return d
        return None


def choose(requested: str, sample: list[tuple[float | None, float | None]]) -> tuple[str, str]:
    """(clock, why) from the first frames' (log timestamp, step duration). `why` is a noun
    phrase that names the source and why it was chosen, to read after "from" ("times from
    {why}"); `sentence(why)` makes the one sentence doctor prints."""
    stamped = [t for t, _ in sample if t is not None]
    durations = [d for _, d in sample if d is not None]
    n = len(sample)
    if requested == "log" and len(stamped) < 1:
        return "fixed", (f"{DESCRIBE['fixed']}, because --clock log was asked for but the log "
                         "has no timestamps")
    if requested == "steps" and not durations:
        return "fixed", (f"{DESCRIBE['fixed']}, because --clock steps was asked for but the log "
                         "has no step durations")
    if requested != "auto":
        return requested, f"{DESCRIBE[requested]}, as --clock {requested} asks"
    if len(stamped) >= 2:
        span = stamped[-1] - stamped[0]
        if durations and len(durations) >= 2:
            want = sum(durations[1:])
            if span < _IMPLAUSIBLE * want:
                distinct = len(set(stamped))
                if distinct <= max(2, len(stamped) // 8):
                    # a Ray console log: the metric lines carry no time of their own and inherit
                    # the last one an earlier line printed
                    return "steps", (
                        f"{DESCRIBE['steps']}, because the log's metric lines carry no "
                        f"timestamps of their own: its first {n} frames share {distinct} "
                        f"timestamp{'s' if distinct > 1 else ''} from earlier lines, while their "
                        f"step durations add up to {_secs(want)}")
                return "steps", (
                    f"{DESCRIBE['steps']}, because the log's timestamps advance {_secs(span)} "
                    f"over its first {n} frames while their step durations add up to "
                    f"{_secs(want)}: the log was written faster than the run trained (a replay, "
                    "or a sidecar catching up on a backlog)")
        if span > 0:
            return "log", DESCRIBE["log"]
    if durations:
        return "steps", f"{DESCRIBE['steps']}, because the log has no usable timestamps"
    return "fixed", (f"{DESCRIBE['fixed']}, because the log has neither timestamps nor step "
                     "durations")


def sentence(why: str) -> str:
    """The one sentence a report prints about where its times came from."""
    why = why.rstrip(". ")
    return f"Times come from {why}."


def _secs(s: float) -> str:
    from ..promql import human_duration
    return f"{s:.1f} s" if s < 60 else f"{s:.0f} s ({human_duration(s)})"


class Clock:
    """Assigns strictly increasing timestamps to frames."""

    def __init__(self, kind: str, start: float, step_seconds: float):
        self.kind = kind
        self.step_seconds = step_seconds
        self.t = None
        self.start = start
        self.last_step = object()
        self.last_duration = None
        self.adjusted = 0  # log timestamps moved forward to keep time increasing
        self.shift = 0.0   # added to log timestamps after a jump
        self.jumps: list[tuple] = []  # (step, seconds closed up) per implausible jump
        self.last_gap = None  # the last plausible time between two new steps

    def at(self, log_ts: float | None, duration: float | None, step) -> float:
        if duration is not None and duration > MAX_GAP:
            self.jumps.append((step, duration))
            duration = None
        if self.kind == "log" and log_ts is not None:
            t = log_ts + self.shift
            if self.t is not None and abs(t - self.t) > MAX_GAP:
                gap = self.last_gap or self.step_seconds
                self.jumps.append((step, t - self.t))
                self.shift += self.t + gap - t
                t = self.t + gap
            elif self.t is not None and t > self.t and step != self.last_step:
                self.last_gap = t - self.t
        elif self.t is None:
            t = self.start if self.kind != "log" or log_ts is None else log_ts
        elif step is not None and step == self.last_step:
            t = self.t  # another record of the same step (slime: step/rollout/perf lines)
        else:
            if duration is not None and self.kind == "steps":
                self.last_duration = duration
            d = self.last_duration if self.kind == "steps" and self.last_duration else \
                self.step_seconds
            t = self.t + d
        if self.t is not None and t <= self.t:
            if not (step is not None and step == self.last_step):
                self.adjusted += 1
            t = self.t + 0.001
        self.t = t
        self.last_step = step
        return t
