"""PromQL building blocks the recording rules and the alerts share: the step-window ladder
(docs/alerts.md "Step-aware windows"), selectors and the liveness/pause conditions.

Expressions are Python format strings: {name} is a CONFIG value (or a window of the ladder)
filled at render time, so PromQL braces are doubled.
"""
from __future__ import annotations

import re

from .config import TIERS

R = "{{ $labels.run }}"
PRIMARY = '{{stat="", split=""}}'   # the mean/primary training series of a metric
STEP = "rl_training_step"
RUN_STEP = "run:rl_training_step:max"   # the run's highest step over its targets (a recording)


def step_changes(i: int) -> str:
    return f"run:rl_training_step:changes_w{i}"


# An estimate (a mean, a median, a spread) over a rung's baseline or trend window, the long
# ones, is read from samples at the rung's resolution ({sq3}: a subquery step, config
# long_window_resolution). The recent window keeps every sample (a subquery's last point
# lags the present by up to its step), and so do extremes, counts and counters: a rung's
# branch also answers for a faster run whose shorter rungs are silent (the ladder's `or`),
# where one sample may be the step that decides.
_SAMPLED = re.compile(r"\b((?:avg|stddev|stdvar|quantile)_over_time)"
                      r"\(([^()\[\]]*)\[\{(r?(?:bw|tw)(\d))\}\]")


def sampled(expr: str) -> str:
    """`expr` (its windows named per rung: {w3}, {bw4}, ...) with each window a rung reads at a
    coarser resolution than its raw samples written as a subquery at that resolution."""
    return _SAMPLED.sub(lambda m: f"{m.group(1)}({m.group(2)}[{{{m.group(3)}}}{{sq{m.group(4)}}}]",
                        expr)


def ladder(value: str, min_steps: str = "{recent_min_steps}", by: str = "run") -> str:
    """`value` (with {W}, {BW}, {TW}: the window, its baseline window and the trend window;
    {TWS}: all three in seconds; {RW}, {RBW}, {RTW}, {RWBS}, {RTWS}: the reward's, longer by
    REWARD_WINDOW_FACTOR) over the shortest window tier holding at least `min_steps` step
    changes, per run."""
    parts = []
    for i in TIERS:
        v = value
        for name in ("RWBS", "RTWS", "RW", "RBW", "RTW", "TWS", "W", "BW", "TW"):
            v = v.replace("{" + name + "}", f"{{{name.lower()}{i}}}")
        v = sampled(v)
        parts.append(f"  ({v})\n  and on (run) ({step_changes(i)} >= {min_steps})")
    return "(\n" + "\nor\n".join(parts) + "\n)"


def over(fn: str, metric: str, sel: str = PRIMARY, by: str = "run", agg: str | None = None,
          baseline: bool = False, reward: bool = False) -> str:
    """`fn` of a metric over the recent window (or its baseline window), aggregated by `by`;
    `reward`: over the reward's longer windows."""
    agg = agg or {"avg_over_time": "avg", "max_over_time": "max", "min_over_time": "min"}.get(fn, "max")
    w, bw = ("{RW}", "{RBW}") if reward else ("{W}", "{BW}")
    rng = f"[{bw}] offset {w}" if baseline else f"[{w}]"
    if fn == "median":
        return f"max by ({by}) (quantile_over_time(0.5, {metric}{sel}{rng}))"
    return f"{agg} by ({by}) ({fn}({metric}{sel}{rng}))"


def alternatives(fn, alts, by="run", baseline=False, reward=False) -> str:
    """The first of several (metric, selector) sources a run has, per label set of `by`. A
    third element converts that source: an expression in which `$x` stands for it."""
    out = []
    for alt in alts:
        e = over(fn, alt[0], alt[1], by, baseline=baseline, reward=reward)
        out.append(alt[2].replace("$x", e) if len(alt) > 2 else e)
    return " or ".join(out)


READY = "run:rl_step_window:baseline_steps"
# 1 where the recent and baseline windows the ladder picks reach back over the run's last
# segment start (a restart, a second run in the same log: rl_run_segment_start_timestamp_seconds),
# 0 where both begin after it; absent for a run with no seam. No baseline counts across a seam.
SEAM = "run:rl_step_window:crosses_segment_start"
SEGMENT_START = "rl_run_segment_start_timestamp_seconds"
STALE_SEL = '{{stat="", split="", reference=""}}'


def recent(fn: str, metric: str, sel: str = PRIMARY, by: str = "run") -> str:
    return ladder(over(fn, metric, sel, by), by=by)


def nonfinite_persists(metrics) -> str:
    """Where a metric was NaN/Inf on every sample of a window holding nonfinite_persist_steps
    steps. min_over_time and max_over_time skip NaN unless every sample is NaN, so both are
    non-finite exactly when no finite sample is left. x * 0 is 0 for a finite x and NaN for a
    NaN or an infinity, so one read of each window tells both (PromQL shares no subexpression:
    x != x and abs(x) == +Inf read it three times)."""
    def nonfinite(fn, x):
        return f"({fn}({x}[{{W}}]) * 0 != bool 0)"
    parts = []
    for m in metrics:
        x = f'{m}{{{{split=""}}}}'
        both = f"{nonfinite('min_over_time', x)} * {nonfinite('max_over_time', x)}"
        parts.append(f'label_replace(max by (run) ({both}), "metric", "{m}", "", "")')
    return ladder(" or ".join(parts), "{nonfinite_persist_steps}") + " == 1"


def increase_per_attempt(counter_sel: str) -> str:
    """How many times a counter of skipped optimizer updates rose per optimizer attempt in the
    recent window (ladder): over the attempts counter where the run has one (posttrain
    optim/attempt_id, rl_optimizer_attempts_total), else over the step changes times n_mini
    (updates per step, rl_config_value); a run with neither is not read."""
    parts = []
    for i in TIERS:
        skips = f"max by (run) (increase({counter_sel}[{{w{i}}}]))"
        parts.append(
            f"  (\n    {skips}\n    / on (run) (max by (run) (increase(rl_optimizer_attempts_total[{{w{i}}}])) > 0)\n"
            f"    or\n    {skips}\n    / on (run) ({step_changes(i)} * on (run) max by (run) "
            f"(rl_config_value{{{{parameter=\"n_mini\"}}}} > 0))\n  )\n"
            f"  and on (run) ({step_changes(i)} >= {{recent_min_steps}})")
    return "(\n" + "\nor\n".join(parts) + "\n)"


def increase_recent(counter_sel: str, by: str = "run") -> str:
    return ladder(f"max by ({by}) (increase({counter_sel}[{{W}}]))", by=by)


PAUSE_OPEN = 'rl_phase_in_progress_start_timestamp_seconds{{phase=~"{pause_phases}"}}'
PAUSE_TIME = 'rl_phase_duration_seconds{{phase=~"{pause_phases}"}}'


def paused() -> str:
    """Runs where a pause phase (pause_phases) was open at some scrape, or a pause's duration
    was published, in the recent step window or its baseline window (ladder)."""
    parts = []
    for rng in ("[{W}]", "[{BW}] offset {W}"):
        parts.append(f"max by (run) (max_over_time({PAUSE_OPEN}{rng}) > 0)")
        parts.append(f"max by (run) (changes({PAUSE_TIME}{rng}) > 0)")
    return ladder(" or ".join(parts))


# ---- the run's lifecycle (LIFECYCLE series: rl_run_state{state}, a state set, and
# rl_run_state_change_timestamp_seconds, when the current state began; docs/alerts.md "How a
# run ends"). Every read looks back over lifecycle_window: a target that went down, or left
# discovery, keeps its last known state for that long.
LIFE_W = "[{lifecycle_window}]"


def _change(w: str = LIFE_W) -> str:
    return f"last_over_time(rl_run_state_change_timestamp_seconds{w})"


CHANGE = _change()


def target_state(states: str, w: str = LIFE_W) -> str:
    """Targets whose last scraped state (within the window, lifecycle_window by default) is one
    of `states` (a regex): labels job, instance, run, state."""
    return f'(last_over_time(rl_run_state{{{{state=~"{states}"}}}}{w}) == 1)'


def latest(w: str = LIFE_W) -> str:
    """The targets holding the latest state change of their run: theirs is the run's last known
    state (a run restarted on another node or pod is a new target whose state began later)."""
    return f"({_change(w)} == on (run) group_left () max by (run) ({_change(w)}))"


def run_state(states: str, w: str = LIFE_W) -> str:
    """Runs whose last known state (that of the target with the run's latest state change) is
    one of `states`."""
    return f"max by (run) ({target_state(states, w)} and ignoring (state) {latest(w)})"


# Seconds since the run's last step, or since its state last became running (a declared pause
# that ended), whichever is later: a pause is no silence of the trainer. (Not since a restart:
# a crash loop that never steps must still read as a silence.)
STEP_AGE = ("(time() - max by (run) (\n  rl_training_step_timestamp_seconds\n"
            "  or label_replace(rl_run_state_change_timestamp_seconds and ignoring (state) "
            '(rl_run_state{{state="running"}} == 1), "at", "state", "", "")\n))')


def superseded(states: str = ".+") -> str:
    """Targets of a run whose last step and last state change are older than a state change of
    another of its targets in one of `states`: the run went on elsewhere (a restart on a new
    node or pod). Labels job, instance, run."""
    last = ("max by (job, instance, run) (\n"
            f"  label_replace(last_over_time(rl_training_step_timestamp_seconds{LIFE_W}), "
            '"at", "step", "", "")\n'
            f"  or {CHANGE})")
    later = f"max by (run) ({CHANGE} and ignoring (state) {target_state(states)})"
    return f"({last}\n < on (run) group_left () {later})"


# A run that finished: its last known state is finished (the hook's close(), a normal exit, the
# framework's closing line read by the sidecar), or its last step reached its configured total
# steps (rl_config_value{parameter="total_training_steps"}, captured by the integrations). The
# step and total are read from the live target, else their last samples in lifecycle_window: a
# static target of a finished run is down, and its series are stale.
_LAST_STEP = (f"(max by (run) ({STEP}) or max by (run) (last_over_time({STEP}{LIFE_W})))")
_TOTAL = 'rl_config_value{{parameter="total_training_steps"}}'
_LAST_TOTAL = (f"(max by (run) ({_TOTAL}) or max by (run) (last_over_time({_TOTAL}{LIFE_W})))")
FINISHED = (f"({_LAST_STEP} >= on (run) ({_LAST_TOTAL} > 0)\n"
            f" or {run_state('finished')})")
# A declared pause (rl_run_state paused, or a pause phase open now: pause_phases)
PAUSED_NOW = (f"({run_state('paused')}\n"
              f" or max by (run) ({PAUSE_OPEN} > 0))")
# Both as recorded once per evaluation (recordings.py), for the alerts: each read of FINISHED is
# five reads of lifecycle_window, each of PAUSED_NOW three (PromQL shares no subexpression), and
# a last_over_time reads every sample of its window. The fleet recordings keep the expressions:
# they read scraped series only.
RUN_FINISHED = "run:rl_run_state:finished"
RUN_PAUSED = "run:rl_run_state:paused"

TRUNC_SEL = '{{stat="", split="", subset=""}}'
CLIP_SEL = '{{stat="", split="", bound=""}}'
CONFIG_SEL = 'rl_config_value{{parameter="{}"}}'


# The task reward: the raw score where a run logs one (veRL critic/score, slime/Miles
# rollout/raw_reward), else the trainer's reward (recordings.py reads it the same way).
TASK_REWARD = ("rl_score", "rl_reward")


def reward_constant() -> str:
    """Per run, over the window {W}: the task reward's value where it was the same on every
    sample and no spread was logged (a std above 0, or a max above the min, on any step rules it
    out). The second metric counts only where the run has no samples of the first."""
    parts = []
    for i, m in enumerate(TASK_REWARD):
        mean = f'{m}{{{{stat="", split=""}}}}[{{W}}]'
        const = (f"(max by (run) (max_over_time({mean}))\n"
                 f"    == on (run) max by (run) (min_over_time({mean})))")
        spread = (f'(max by (run) (max_over_time({m}{{{{stat="std", split=""}}}}[{{W}}])) > 0)'
                  f'\n    or (max by (run) (max_over_time({m}{{{{stat="max", split=""}}}}[{{W}}]))'
                  f'\n      > on (run) min by (run) (min_over_time({m}{{{{stat="min", split=""}}}}[{{W}}])))')
        expr = f"  ({const}\n    unless on (run) ({spread}))"
        for prev in TASK_REWARD[:i]:
            expr += f'\n    unless on (run) max by (run) (max_over_time({prev}{{{{stat="", split=""}}}}[{{W}}]))'
        parts.append(expr)
    return "\nor\n".join(parts)


def halves(value: str, min_steps: str = "{recent_min_steps}") -> str:
    """`value` over two back-to-back windows of the tier's baseline length (4x the recent window:
    20-80 steps each): `[{H}]` is the later one, `[{H}] offset {H}` the earlier, {HS} both in
    seconds; on the shortest tier whose recent window holds `min_steps` step changes, with the
    earlier window holding baseline_min_steps steps, after the run's last segment start."""
    from .config import BASELINE_FACTOR
    parts = []
    for i in TIERS:
        both = f"{{wbs{i}}} * {2 * BASELINE_FACTOR} / {1 + BASELINE_FACTOR}"
        v = sampled(value.replace("{HS}", f"({both})").replace("{H}", f"{{bw{i}}}"))
        # the earlier window is a whole one: as many steps as a baseline (not the run's start)
        parts.append(f"  ({v})\n  and on (run) ({step_changes(i)} >= {min_steps})\n"
                     f"  and on (run) (max by (run) (changes({STEP}[{{bw{i}}}] offset {{bw{i}}})) "
                     f">= {{baseline_min_steps}})\n"
                     f"  unless on (run) (time() - max by (run) ({SEGMENT_START}) < {both})")
    return "(\n" + "\nor\n".join(parts) + "\n)"
