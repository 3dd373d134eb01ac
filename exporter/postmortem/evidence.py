"""Each finding's evidence: the first checks its runbook names, run on the log's own data.

A runbook's diagnosis says what to look at first ("first `rl_groups{outcome="all_zero"}` vs
`{outcome="all_one"}`"); doctor has those numbers, so it answers. For every warning or critical
finding (and the info advisories in ALWAYS), while the scratch Prometheus still serves the
backfilled run, this module queries the series the check needs for the finding's segment and
puts `[{"check": ..., "answer": ...}]` on it (text: `evidence:` lines; --json: `evidence`):

- which outcome the GRPO groups had (all-zero: too hard or a broken reward; all-one: too easy);
- whether the optimizer skipped the non-finite updates (the guard), or the loss stayed
  non-finite after them;
- which headline metric left its early level first, and at which step;
- what the entropy did before the reward fell;
- the response lengths against the configured cap;
- for the no-improvement advisory: the hours (GPU-hours where the GPUs are known) since the
  reward last improved, and what the KL to the reference did meanwhile;
- otherwise the series the diagnosis names first, described over the run up to the finding.

Every answer is computed from samples; a series the log lacks is said to be missing.
"""
from __future__ import annotations

import bisect
import math
import re
import statistics

from .evaluate import query_range

SERIOUS = ("critical", "warning")
ALWAYS = frozenset({"RLNoImprovement"})   # info findings whose evidence is their point
REWARD = ("rl_score", "rl_reward")
KL = ("rl_reference_kl", "rl_reward_kl_penalty")
# what "which metric moved first" compares, in the order the runbook reads them
HEADLINE = (("task reward", REWARD), ("entropy", ("rl_entropy",)), ("KL to the reference", KL),
            ("PPO KL", ("rl_policy_kl",)), ("clip fraction", ("rl_policy_clip_ratio",)),
            ("gradient norm", ("rl_grad_norm",)), ("policy loss", ("rl_policy_loss", "rl_loss")),
            ("response length", ("rl_response_length_tokens",)))
# alerts about the process, not the training signal: no metric "moves first" for them
PROCESS = frozenset({"RLRunCrashed", "RLRunStalled", "RLExporterDown", "RLRestartWithoutProgress"})
MISSING = "not in this log"
# where a log lacks the series a diagnosis names, the one that stands for it
ALIASES = {"rl_policy_loss": ("rl_loss",), "rl_score": ("rl_reward",),
           "rl_reference_kl": ("rl_reward_kl_penalty",)}
_NAMED = re.compile(r"`([a-z_][a-z0-9_]*)(\{[^`]*\})?`")


def _num(v: float) -> str:
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{v:.3g}"


def _finite(v) -> bool:
    return isinstance(v, float) and math.isfinite(v)


class Data:
    """The backfilled run's series, one value per logged step (the last sample of each step),
    queried once per selector from the scratch Prometheus."""

    def __init__(self, prom, res, step: float):
        self.prom, self.res, self.step = prom, res, step
        self._cache: dict = {}

    def steps(self, run: str, name: str, labels: dict | None = None, primary: bool = True) -> list:
        """[(step, value)] of the series `name{run, labels}` (the one with the fewest other labels;
        primary: stat="" and split="")."""
        sel = {"run": run, **(labels or {})}
        if primary:
            sel.setdefault("stat", "")
            sel.setdefault("split", "")
        key = (name, tuple(sorted(sel.items())))
        got = self._cache.get(key)
        if got is None:
            matchers = ",".join(f'{k}="{v}"' for k, v in sorted(sel.items()))
            try:
                series = query_range(self.prom, f"{name}{{{matchers}}}",
                                     math.floor(self.res.start / self.step) * self.step,
                                     self.res.end, self.step)
            except Exception:   # a failed query is missing evidence, never a failed report
                series = {}
            got = []
            if series:
                best = min(series, key=lambda k: (len(k), k))
                per_step: dict = {}
                for t, v in series[best]:
                    s = self.res.step_at(t)
                    if s is not None:
                        per_step[s] = v
                got = sorted(per_step.items(), key=lambda kv: _order(kv[0]))
            self._cache[key] = got
        return got

    def first(self, run: str, names, labels: dict | None = None) -> tuple[str | None, list]:
        for n in names:
            got = self.steps(run, n, labels)
            if got:
                return n, got
        return None, []


def _order(step):
    try:
        return float(step)
    except (TypeError, ValueError):
        return math.inf


def _upto(pts: list, step) -> list:
    """The points up to `step`: a prefix, as every series here is in step order (Data.steps)."""
    return pts[:_count_upto(pts, step)]


def _count_upto(pts: list, step) -> int:
    return bisect.bisect_right(pts, _order(step), key=lambda p: _order(p[0]))


def _between(pts: list, lo, hi) -> list:
    a, b = _order(lo), _order(hi)
    return [(s, v) for s, v in pts if a <= _order(s) <= b]


# ------------------------------------------------------------------ the checks
def outcomes(f, data: Data, run: str) -> tuple[str, str] | None:
    """Which outcome the GRPO groups had over the steps the finding covers."""
    check = 'which outcome the groups had (`rl_groups{outcome="all_zero"}` vs `{outcome="all_one"}`)'
    lo, hi = _window(f, data, run)
    total = _between(data.steps(run, "rl_groups", {"outcome": "total"}), lo, hi)
    if total:
        zero = dict(_between(data.steps(run, "rl_groups", {"outcome": "all_zero"}), lo, hi))
        one = dict(_between(data.steps(run, "rl_groups", {"outcome": "all_one"}), lo, hi))
        n = sum(v for _, v in total if _finite(v))
        if n > 0 and (zero or one):
            z = sum(zero.get(s, 0.0) for s, _ in total) / n
            o = sum(one.get(s, 0.0) for s, _ in total) / n
            return check, _shares(z, o, total[0][0], total[-1][0])
    share_z = _between(data.steps(run, "rl_group_outcome_ratio", {"outcome": "all_zero"}), lo, hi)
    share_o = _between(data.steps(run, "rl_group_outcome_ratio", {"outcome": "all_one"}), lo, hi)
    if share_z or share_o:
        z = statistics.fmean(v for _, v in share_z) if share_z else 0.0
        o = statistics.fmean(v for _, v in share_o) if share_o else 0.0
        ends = share_z or share_o
        return check, _shares(z, o, ends[0][0], ends[-1][0])
    name, mean = data.first(run, REWARD)
    mean = _between(mean, lo, hi)
    if not mean:
        return check, "the log has neither group outcomes nor a task reward on these steps"
    hi_s = dict(_between(data.steps(run, name, {"stat": "max"}), lo, hi))
    lo_s = dict(_between(data.steps(run, name, {"stat": "min"}), lo, hi))
    sd = dict(_between(data.steps(run, name, {"stat": "std"}), lo, hi))
    from ..alerts.config import SHARED
    ceiling = SHARED["reward_ceiling"]
    tied: dict = {}
    plain = 0
    for s, v in mean:
        spread = s in hi_s or s in sd
        no_spread = (s in hi_s and s in lo_s and hi_s[s] == lo_s[s]) or sd.get(s) == 0
        if spread and not no_spread:
            continue
        if not spread:
            plain += 1
        tied[v] = tied.get(v, 0) + 1
    n = len(mean)
    span = f"steps {mean[0][0]} to {mean[-1][0]}"
    which = f"`{name}`" + ("" if (hi_s or sd) else ", its mean: the log has no spread")
    count = sum(tied.values())
    if count == n and set(tied) == {0.0}:
        return check, (f"every sample scored 0 on every step from {span} ({which}): every group "
                       "all-zero; the task is too hard for the model, or the reward is broken")
    if count == n and set(tied) == {ceiling}:
        return check, (f"every sample scored {_num(ceiling)}, the reward's maximum, on every step "
                       f"from {span} ({which}): every group all-one; the task is too easy")
    values = ", ".join(f"{_num(v)} on {c}" for v, c in sorted(tied.items(), key=lambda kv: -kv[1])[:3])
    if count == n and len(tied) == 1:
        return check, (f"every sample scored {values.split(' on ')[0]} on every step from {span} "
                       f"({which}): the reward does not depend on the answer; is the reward "
                       "function wired to the completions?")
    if count == n:
        return check, (f"every step from {span} had every sample scoring the same ({values} "
                       f"steps; {which}): groups tie on every step, the reward does not "
                       "discriminate between answers")
    if not count:
        return check, f"every step from {span} had differing scores ({which})"
    top_v, top_c = max(tied.items(), key=lambda kv: kv[1])
    lean = ""
    if top_c * 2 >= n and top_v == 0:
        lean = ": mostly all-zero groups, the task is too hard for the model or the reward is broken"
    elif top_c * 2 >= n and top_v == ceiling:
        lean = ": mostly all-one groups, the task is too easy"
    return check, (f"{count} of {n} steps ({span}) had every sample scoring the same ({values} "
                   f"steps), the rest differing scores ({which}){lean}")


def _shares(z: float, o: float, first, last) -> str:
    span = f"steps {first} to {last}"
    if z >= 0.999:
        return (f"every group all-zero on every step from {span}: the task is too hard for the "
                "model, or the reward is broken")
    if o >= 0.999:
        return f"every group all-one on every step from {span}: the task is too easy"
    lean = "mostly too hard" if z > o else "mostly too easy" if o > z else "as many too hard as too easy"
    return (f"{z:.0%} of groups all-zero and {o:.0%} all-one over {span} "
            f"({max(0.0, 1 - z - o):.0%} informative): {lean}")


def guard(f, data: Data, run: str) -> tuple[str, str] | None:
    """Whether the optimizer skipped the non-finite updates."""
    check = "whether the optimizer skipped the non-finite updates"
    upto = _end(f, data)
    skips = _upto(data.steps(run, "rl_optimizer_nonfinite_skips_total", primary=False), upto)
    if skips:
        vals = [v for _, v in skips if _finite(v)]
        n = (max(vals) - min(vals)) if vals else 0.0
        rise = [s for (s, v), (_, w) in zip(skips[1:], skips) if _finite(v) and _finite(w) and v > w]
        if n > 0:
            return check, (f"yes: the optimizer rejected {n:.0f} update(s) for a non-finite value "
                           f"(from step {rise[0] if rise else skips[0][0]}): the weights are "
                           "intact; resume from the latest checkpoint once the cause is fixed")
        return check, "no: the optimizer's non-finite skip counter did not move"
    bad_steps, after = [], None
    for name in ("rl_loss", "rl_policy_loss", "rl_grad_norm"):
        pts = data.steps(run, name)
        nonfinite = [s for s, v in pts if not math.isfinite(v)]
        if nonfinite:
            later = [s for s, v in pts if _order(s) > _order(nonfinite[-1]) and math.isfinite(v)]
            bad_steps.append((name, nonfinite))
            after = later[:1] if after is None else after
    if not bad_steps:
        return check, "the log records no optimizer outcome and no non-finite loss or gradient norm"
    name, steps = bad_steps[0]
    where = _steps_text(steps)
    if after:
        return check, (f"the log records no optimizer outcome; `{name}` is non-finite on {where} and "
                       f"finite again from step {after[0]}: the trainer most likely skipped those "
                       "updates (veRL and most trainers skip a non-finite gradient)")
    return check, (f"the log records no optimizer outcome; `{name}` is non-finite on {where} and "
                   "never finite again: the updates were applied, so the weights are poisoned; "
                   "roll back to the last finite checkpoint")


def _steps_text(steps: list) -> str:
    if len(steps) == 1:
        return f"step {steps[0]}"
    return f"{len(steps)} steps ({steps[0]} to {steps[-1]})"


LOOKBACK = 10   # steps of a series' own recent level a change is measured against
NEAR = 40       # how far before a finding a change still counts as leading to it


def departure(pts: list, upto, near: int | None = NEAR) -> tuple | None:
    """(step, level before, value then) of the first change of a series that leads up to
    `upto`: a value more than 4 robust standard deviations and 30 % of the level away from the
    median of the LOOKBACK steps before it (or non-finite after finite ones), held for 3 steps
    in a row in the same direction, within `near` steps before `upto` (None: anywhere). A slow
    trend moves its own recent level along with it, so it is no change; a jump is."""
    last = _count_upto(pts, upto) - 1
    if last < LOOKBACK:
        return None
    lo = last - near if near is not None else 0
    # a change starts by `upto`; the steps after it may confirm it (the finding follows a jump)
    for i in range(max(LOOKBACK, lo), min(last + 1, len(pts) - 2)):
        before = [v for _, v in pts[i - LOOKBACK:i] if _finite(v)]
        if len(before) < LOOKBACK // 2:
            continue
        level = statistics.median(before)
        least = max(0.3 * abs(level), 1e-12)   # d is never smaller, whatever the spread
        v = pts[i][1]
        if _finite(v) and abs(v - level) <= least:
            continue  # no change here: skip the spread
        spread = 1.4826 * statistics.median(abs(b - level) for b in before)
        d = max(4 * spread, least)

        def away(x):
            if not _finite(x):
                return 0   # non-finite after finite values: a change of its own kind
            return 1 if x > level + d else -1 if x < level - d else None

        first = away(v)
        if first is None:
            continue
        if all(away(x) == first for _, x in pts[i + 1:i + 3]):
            return pts[i][0], level, v
    return None


def moved_first(f, data: Data, run: str) -> tuple[str, str] | None:
    """Which headline metric jumped first (from its own recent level) before the finding, and at
    which step."""
    check = "which metric moved first, and at which step"
    upto = f.step
    moves = []
    for say, names in HEADLINE:
        name, pts = data.first(run, names)
        if not pts:
            continue
        got = departure(pts, upto)
        if got is not None:
            step, level, v = got
            moves.append((_order(step), step, say, name, level, v))
    if not moves:
        n = max(len(_upto(data.first(run, names)[1], upto)) for _, names in HEADLINE)
        if n < LOOKBACK + 3:
            return None   # too few steps before it for a level to change from
        return check, (f"none of the headline metrics jumped from its own recent level in the "
                       f"{NEAR} steps before step {upto}: a drift, not a break")
    moves.sort()
    parts = [f"{say} (`{name}`) at step {step}, " + (f"to {_num(v)}" if not _finite(v) else
             f"{'up' if v > level else 'down'} from {_num(level)} to {_num(v)}")
             for _, step, say, name, level, v in moves[:4]]
    return check, "first " + "; then ".join(parts)


def entropy_before(f, data: Data, run: str) -> tuple[str, str] | None:
    check = "what the entropy did before the reward fell (`rl_entropy`)"
    pts = _upto(data.steps(run, "rl_entropy"), f.step)
    vals = [(s, v) for s, v in pts if _finite(v)]
    if len(vals) < 6:
        return check, "the log has no entropy before this step" if not vals else \
            f"only {len(vals)} entropy values before this step"
    k = max(3, len(vals) // 4)
    early = statistics.fmean(v for _, v in vals[:k])
    late = statistics.fmean(v for _, v in vals[-max(3, min(10, len(vals) // 5)):])
    span = f"(steps {vals[0][0]}-{vals[k - 1][0]} vs the last steps before {f.step})"
    if early > 0 and late < 0.5 * early:
        got = departure(vals, f.step, near=None)
        when = f", first leaving its level at step {got[0]}" if got else ""
        return check, (f"it fell from {_num(early)} to {_num(late)} {span}{when}: the entropy "
                       "collapsed before the reward did (RLEntropyCollapse's signature)")
    if early > 0 and late > 1.5 * early:
        return check, (f"it rose from {_num(early)} to {_num(late)} {span}: the policy drifted "
                       "(temperature, learning rate), not a collapse")
    return check, (f"it held ({_num(early)} then {_num(late)} {span}): no entropy collapse; look "
                   "at the clip fraction, the KL and the reward function")


def lengths(f, data: Data, run: str) -> tuple[str, str] | None:
    check = "the response lengths against the limit (`rl_response_length_tokens`)"
    lo, hi = _window(f, data, run)
    mean = _between(data.steps(run, "rl_response_length_tokens"), lo, hi)
    if not mean:
        return check, "the log has no response lengths on these steps"
    top = dict(_between(data.steps(run, "rl_response_length_tokens", {"stat": "max"}), lo, hi))
    low = dict(_between(data.steps(run, "rl_response_length_tokens", {"stat": "min"}), lo, hi))
    cap_pts = data.steps(run, "rl_config_value", {"parameter": "max_response_length"}, primary=False)
    cap = cap_pts[-1][1] if cap_pts else None
    m = statistics.fmean(v for _, v in mean if _finite(v)) if any(_finite(v) for _, v in mean) else math.nan
    out = f"mean {_num(m)} tokens over steps {mean[0][0]} to {mean[-1][0]}"
    if cap:
        out += f", {m / cap:.0%} of the configured max_response_length {_num(cap)}"
        at = sum(1 for s, _ in mean if top.get(s, -1) >= cap)
        if top:
            out += f"; the longest response is at the cap on {at} of {len(mean)} steps"
        every = sum(1 for s, _ in mean if low.get(s, -1) >= cap)
        if every:
            out += f", and every response is on {every}"
    elif top:
        out += f"; the longest {_num(max(top.values()))} (no cap in the log's settings)"
    else:
        out += " (no cap in the log's settings)"
    return check, out


def no_improvement(f, data: Data, run: str) -> list:
    """Hours (GPU-hours where known) since the reward last improved, and the KL meanwhile."""
    out = []
    name, pts = data.first(run, REWARD)
    pts = [(s, v) for s, v in _upto(pts, _end(f, data)) if _finite(v)]
    if len(pts) >= 10:
        # the last step at which the running best of a smoothed reward rose by more than the noise
        w = max(3, len(pts) // 20)
        smooth = [(pts[i][0], statistics.fmean(v for _, v in pts[max(0, i - w + 1):i + 1]))
                  for i in range(len(pts))]
        from ..alerts.config import SHARED
        margin = SHARED["reward_drop_min"]
        best, best_step = smooth[0][1], smooth[0][0]
        for s, v in smooth:
            if v > best + margin:
                best, best_step = v, s
            best = max(best, v) if s == best_step else best
        t_best, t_end = _time_of(data.res, best_step), _time_of(data.res, pts[-1][0])
        hours = max(0.0, (t_end - t_best) / 3600.0)
        gpus = _gpus(data, run)
        gh = (f"{hours * gpus:.1f} GPU-hours ({hours:.1f} h on {gpus:g} GPUs)" if gpus else
              f"{hours:.1f} h of training (GPU-hours: {hours:.1f} x the run's GPUs, which the log "
              "does not name)")
        if getattr(data.res, "clock", "") == "fixed":
            gh += ", at the fixed --step-seconds a step (the log has no times of its own)"
        out.append(("the GPU-hours since the reward last improved",
                    f"{gh} since step {best_step}, where the smoothed `{name}` last rose more "
                    f"than {margin:g} above its best ({_num(best)})"))
        name_kl, kl = data.first(run, KL)
        kl = [(s, v) for s, v in _between(kl, best_step, pts[-1][0]) if _finite(v)]
        if len(kl) >= 2:
            a, b = kl[0][1], kl[-1][1]
            trend = "kept rising" if b > a * 1.2 and b - a > 0.01 else "held" if b >= 0.8 * a else "fell"
            out.append(("whether the KL to the reference kept rising meanwhile",
                        f"`{name_kl}` {trend}: {_num(a)} at step {kl[0][0]} to {_num(b)} at step "
                        f"{kl[-1][0]}" + (": the policy keeps moving away from the reference for "
                                          "no reward; stop here, or change the recipe"
                                          if trend == "kept rising" else "")))
        else:
            out.append(("whether the KL to the reference kept rising meanwhile",
                        "the log has no KL to the reference on these steps"))
    return out


def _time_of(res, step) -> float:
    import bisect
    want = _order(step)
    i = bisect.bisect_left([_order(s) for s in res.step_values], want)
    i = min(max(i, 0), len(res.times) - 1)
    return res.times[i]


def _gpus(data: Data, run: str) -> float | None:
    """GPUs the run's samples name (a hook's spool carries hw_gpu_*; a trainer's log does not)."""
    span = max(60.0, data.res.end - data.res.start + 60.0)
    try:
        series = query_range(data.prom, f'count(last_over_time(hw_gpu_memory_limit_bytes{{run="{run}"}}'
                             f'[{int(span)}s]))', data.res.end, data.res.end, data.step)
    except Exception:
        return None
    vals = [v for pts in series.values() for _, v in pts if _finite(v)]
    return max(vals) if vals else None


def _end(f, data: Data):
    """The last step a finding covers (a point finding: its segment's last step)."""
    if not f.confirmed:
        seg = data.res.segment_of(f.labels.get("run"))
        if seg is not None and seg.last_step is not None:
            return seg.last_step
    s = data.res.step_at(f.end)
    return f.step if s is None else s


def named(f, data: Data, run: str, section: dict | None, skip: set) -> list:
    """The series the diagnosis names first (up to two the log has), described up to the finding."""
    text = (section or {}).get("fields", {}).get("diagnosis", "") if section else ""
    out, seen = [], set()
    for m in _NAMED.finditer(text):
        name, sel = m.group(1), m.group(2) or ""
        if (name, sel) in seen or name in skip or not name.startswith(("rl_", "hw_")):
            continue
        seen.add((name, sel))
        labels = dict(re.findall(r'(\w+)="([^"]*)"', sel))
        pts = _upto(data.steps(run, name, labels), _end(f, data))
        check = f"`{name}{sel}`"
        for alt in ALIASES.get(name, ()) if not pts else ():
            pts = _upto(data.steps(run, alt, labels), _end(f, data))
            if pts:
                check = f"`{alt}{sel}` (no `{name}` in this log)"
                seen.add((alt, sel))
                break
        if not pts:
            out.append((check, MISSING))
        else:
            out.append((check, describe(pts, f.step)))
        if len(out) >= 2:
            break
    return out


def describe(pts: list, step) -> str:
    vals = [(s, v) for s, v in pts if _finite(v)]
    bad = len(pts) - len(vals)
    if not vals:
        return f"non-finite on all {len(pts)} steps it was logged"
    if len({v for _, v in vals}) == 1 and len(pts) > 2:
        out = f"{_num(vals[0][1])} on every step it was logged ({vals[0][0]} to {vals[-1][0]})"
        if bad:
            out += f"; non-finite on {bad} step(s)"
    elif len(pts) <= 5:
        out = ", ".join(f"{_num(v)} (step {s})" for s, v in pts)
    else:
        at = dict(pts)
        lo = min(vals, key=lambda sv: sv[1])
        hi = max(vals, key=lambda sv: sv[1])
        out = (f"{_num(vals[0][1])} at step {vals[0][0]}"
               + (f", {_num(at[step])} at step {step}" if step in at and step != vals[0][0] else "")
               + f"; lowest {_num(lo[1])} (step {lo[0]}), highest {_num(hi[1])} (step {hi[0]})")
        got = departure(vals, step, near=None)
        if got is not None:
            out += f"; jumped from its level {_num(got[1])} at step {got[0]}"
        if bad:
            out += f"; non-finite on {bad} step(s)"
    return out


def _window(f, data: Data, run: str) -> tuple:
    """The steps a finding covers: from the recent window before it fired to its last step."""
    steps = [s for s, _ in data.first(run, ("rl_training_step",), {"stat": ""})[1]] or []
    end = _end(f, data)
    if f.confirmed and steps:
        before = [s for s in steps if _order(s) <= _order(f.step)]
        lo = before[max(0, len(before) - 10)] if before else f.step
    else:
        lo = f.step
    return lo, end


# alert -> the checks its runbook names first
SPECIFIC = {
    "outcomes": {"RLNoInformativeGroups", "RLGradNormZero", "RLGradNormVanishing",
                 "RLPointNoRewardVariance", "RLPointGradNormZero", "RLRewardAllZero",
                 "RLRewardAllAtMax", "RLRewardConstant"},
    "guard": {"RLNonFiniteLoss", "RLPointNonFiniteLoss", "RLPointNonFiniteGradNorm",
              "RLNonFiniteGradSkipped", "RLOptimizerNonFiniteSkips"},
    "entropy": {"RLRewardCollapse", "RLRewardDeclining"},
    "lengths": {"RLResponseTruncationHigh", "RLPointTruncationHigh", "RLResponseLengthRunaway"},
}
COVERED = {"outcomes": {"rl_groups"}, "guard": {"rl_optimizer_skip_reason", "rl_grad_norm"},
           "entropy": {"rl_entropy"}, "lengths": {"rl_response_length_tokens"}}


def for_finding(f, data: Data, section: dict | None) -> list[dict]:
    run = f.labels.get("run") or data.res.run
    rows: list = []
    skip: set = set()
    if f.alert in ALWAYS:
        rows += no_improvement(f, data, run)
    for kind, alerts in SPECIFIC.items():
        if f.alert in alerts:
            fn = {"outcomes": outcomes, "guard": guard, "entropy": entropy_before,
                  "lengths": lengths}[kind]
            got = fn(f, data, run)
            if got:
                rows.append(got)
            skip |= COVERED[kind]
    if f.alert not in ALWAYS and f.alert not in PROCESS:
        rows += named(f, data, run, section, skip)
        got = moved_first(f, data, run)
        if got:
            rows.append(got)
    answered = [r for r in rows if r[1] != MISSING]
    if answered:
        rows = answered   # a series the log lacks is said only when nothing else answers
    return [{"check": c, "answer": a} for c, a in rows]


MAX_SAMPLES = 200_000  # per series: a finer grid than that for a very long run reads coarser


def resolution(res, step: float) -> float:
    """A query step that sees every logged step: the shortest gap between frames (at least 1 s,
    at most the evaluation interval)."""
    t = res.times
    gaps = sorted(b - a for a, b in zip(t, t[1:]) if b - a > 0)
    fine = gaps[len(gaps) // 10] if gaps else step
    fine = max(1.0, min(step, fine))
    span = max(0.0, res.end - res.start)
    return max(fine, span / MAX_SAMPLES)


def attach(findings: list, prom, res, ruleset, runbook: dict, step: float) -> None:
    """Evidence on every warning or critical finding (and the ALWAYS advisories), in place."""
    by_name = {a.name: a for a in ruleset.alerts}
    data = Data(prom, res, resolution(res, step))
    for f in findings:
        if f.severity not in SERIOUS and f.alert not in ALWAYS:
            continue
        a = by_name.get(f.alert)
        section = runbook.get(a.anchor) if a is not None else None
        if section is None:
            from .points import CHECKS
            for name in getattr(CHECKS.get(f.alert), "confirms", ()):
                if name in by_name:
                    section = runbook.get(by_name[name].anchor)
                    if section:
                        break
        try:
            f.evidence = for_finding(f, data, section)
        except Exception as e:   # evidence is a help, never a failed report
            f.evidence = [{"check": "evidence", "answer": f"not computed ({type(e).__name__}: {e})"}]
