"""Point findings: values the troubleshooting tables call a failure at a single step.

The alert rules keep their persistence (a lone NaN must not page), so a log too short for a
step-windowed rule (a pasted step, a run that died at step 3) would read "healthy" with the
failure on the screen. Doctor therefore also looks at every frame's values, after catalog
resolution, for what the sources name as broken on one step:

- a loss or gradient norm that is NaN or infinite;
- a gradient norm of exactly 0 (posttrain's metrics reference: no learning signal; a tied GRPO
  group has an advantage of exactly 0 for every member);
- no reward variance: every score of the step equal (max == min), a reward std of 0, every
  GRPO group tied (zero-std share 1, informative groups 0);
- truncation: 90 % or more of the responses cut at the length limit (the Chinese metrics guide
  raises the limit at 85 %; the Miles manual's healthy range tops out at 0.43);
- entropy near 0 (below 0.01: the Chinese metrics guide already calls < 0.05 a near-deterministic
  policy);
- model FLOPs utilisation above 1, which no hardware reaches (a wrong peak-FLOPs figure);
- PPO KL above 0.05 and a clip fraction above 0.5 (the Chinese metrics guide: "unstable");
- the sanity bounds, values no healthy run has at any step (exporter/alerts/config.py, where
  each is argued; the live rules hold them over a few steps): KL to the reference above 1,
  a gradient norm three orders of magnitude above the clip, a loss magnitude only a numerical
  failure gives, and responses pinned at the configured length cap where no truncated share is
  logged.

Each becomes one finding per segment: its own alert name (`RLPoint...`), the first step it was
seen at, how many steps showed it, and `confirmed: false`. Where the segment had enough steps for
the step-windowed rules and the rule it points to fired there, the point finding is dropped (the
alert says it); where that rule could judge and stayed silent, it is kept as `info`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..alerts.config import SHARED
from ..catalog import CATALOG

LOSSES = ("rl_loss", "rl_policy_loss", "rl_value_loss")
# the sanity bounds (exporter/alerts/config.py says where each number comes from)
KL_HIGH = SHARED["reference_kl_high"]
GRAD_FACTOR = SHARED["grad_norm_absurd_factor"]
# ... and a thousand times that: no real gradient is that large, only an overflow
GRAD_NUMERICAL_FACTOR = 1e6
LOSS_BOUNDS = {"rl_policy_loss": SHARED["policy_loss_absurd"], "rl_loss": SHARED["loss_absurd"],
               "rl_value_loss": SHARED["value_loss_absurd"]}
LENGTH_CAP_RATIO = SHARED["length_limit_mean_ratio"]
# what the report's "seen" line lists for a log too short to judge, in this order
HEADLINE = ("rl_score", "rl_reward", "rl_reference_kl", "rl_reward_kl_penalty", "rl_policy_kl",
            "rl_entropy", "rl_grad_norm", "rl_policy_loss", "rl_loss", "rl_value_loss",
            "rl_policy_clip_ratio", "rl_response_length_tokens", "rl_response_truncated_ratio")


@dataclass(frozen=True)
class Check:
    alert: str
    confirms: tuple     # windowed alerts that confirm it
    says: str           # what the value means, for the summary


CHECKS = {c.alert: c for c in (
    Check("RLPointNonFiniteLoss", ("RLNonFiniteLoss",), "loss is NaN/Inf"),
    Check("RLPointNonFiniteGradNorm", ("RLNonFiniteGradSkipped", "RLNonFiniteLoss"),
          "gradient norm is NaN/Inf"),
    Check("RLPointGradNormZero", ("RLGradNormZero", "RLNoInformativeGroups"),
          "gradient norm is exactly 0: no learning signal"),
    Check("RLPointNoRewardVariance", ("RLNoInformativeGroups", "RLRewardAllZero", "RLRewardAllAtMax",
                                      "RLRewardConstant", "RLGradNormZero"),
          "no reward variance: every score equal, reward std 0 or every group tied"),
    Check("RLPointTruncationHigh", ("RLResponseTruncationHigh",),
          "responses cut at the length limit"),
    Check("RLPointEntropyZero", ("RLEntropyAtZero", "RLEntropyCollapse"), "entropy near 0"),
    Check("RLPointMFUAboveOne", (), "MFU above 1: the peak-FLOPs figure is wrong"),
    Check("RLPointPolicyKLHigh", ("RLPolicyKLSpike",), "PPO KL above 0.05 (unstable)"),
    Check("RLPointClipFractionSevere", ("RLClipFractionHigh",),
          "clip fraction above 0.5 (updates heavily clipped)"),
    Check("RLPointReferenceKLHigh", ("RLReferenceKLRunaway",),
          "KL to the reference far above any healthy run's"),
    Check("RLPointGradNormFarAboveClip", ("RLGradNormFarAboveClip", "RLGradNormExplosion"),
          "gradient norm orders of magnitude above the clip"),
    Check("RLPointLossMagnitude", ("RLLossMagnitudeAbsurd", "RLNonFiniteLoss"),
          "loss of a magnitude only a numerical failure gives"),
)}
TRUNCATION_MIN = 0.9
ENTROPY_MIN = SHARED["entropy_zero_max"]
KL_MAX = 0.05
CLIP_MAX = 0.5


def _bad(v) -> bool:
    return isinstance(v, float) and not math.isfinite(v)


def judge(values: dict, config: dict | None = None) -> dict:
    """{alert: value} of the checks a frame's canonical values fail. `values` maps
    (metric, frozenset(labels)) -> value, train split only; `config`: the run's settings seen
    so far (rl_config_value parameter -> value: max_grad_norm, max_response_length)."""
    out = {}
    config = config or {}

    def get(metric, **labels):
        return values.get((metric, frozenset(labels.items())))

    for m in LOSSES:
        v = get(m)
        if v is not None and _bad(v):
            out["RLPointNonFiniteLoss"] = v
            break
    g = get("rl_grad_norm")
    if g is not None:
        if _bad(g):
            out["RLPointNonFiniteGradNorm"] = g
        elif g == 0:
            out["RLPointGradNormZero"] = g
    for m in ("rl_score", "rl_reward"):
        hi, lo = get(m, stat="max"), get(m, stat="min")
        if hi is not None and lo is not None and hi == lo and math.isfinite(hi):
            out["RLPointNoRewardVariance"] = hi
        sd = get(m, stat="std")
        if sd is not None and sd == 0:
            out["RLPointNoRewardVariance"] = sd
    zs = get("rl_group_zero_std_ratio")
    if zs is not None and zs >= 1:
        out["RLPointNoRewardVariance"] = zs
    inf = get("rl_groups", outcome="informative")
    if inf is not None and inf == 0:
        out["RLPointNoRewardVariance"] = inf
    t = get("rl_response_truncated_ratio")
    if t is not None and t >= TRUNCATION_MIN:
        out["RLPointTruncationHigh"] = t
    cap = config.get("max_response_length")
    if t is None and cap and cap > 0:
        # no truncated share logged: lengths pinned at the configured cap are the truncation
        # (the veRL metrics guide: mean ~ max_response_length = frequent truncation)
        lo, mean = get("rl_response_length_tokens", stat="min"), get("rl_response_length_tokens")
        if lo is not None and lo >= cap:
            out["RLPointTruncationHigh"] = lo / cap
        elif mean is not None and mean >= LENGTH_CAP_RATIO * cap:
            out["RLPointTruncationHigh"] = mean / cap
    kl = get("rl_reference_kl")
    if kl is None:
        kl = get("rl_reward_kl_penalty")
    if kl is not None and math.isfinite(kl) and kl > KL_HIGH:
        out["RLPointReferenceKLHigh"] = kl
    if g is not None and math.isfinite(g):
        clip = config.get("max_grad_norm")
        bound = GRAD_FACTOR * (clip if clip and clip > 0 else 1.0)
        if g > bound:
            out["RLPointGradNormFarAboveClip"] = g
    for m, bound in LOSS_BOUNDS.items():
        v = get(m)
        if v is not None and math.isfinite(v) and abs(v) > bound:
            out["RLPointLossMagnitude"] = v
            break
    e = get("rl_entropy")
    if e is not None and math.isfinite(e) and 0 <= e < ENTROPY_MIN:
        out["RLPointEntropyZero"] = e
    for (metric, labels), v in values.items():
        if metric == "rl_mfu_ratio" and not any(k == "stat" for k, _ in labels) \
                and isinstance(v, float) and math.isfinite(v) and v > 1:
            out["RLPointMFUAboveOne"] = v
            break
    k = get("rl_policy_kl")
    if k is not None and math.isfinite(k) and k > KL_MAX:
        out["RLPointPolicyKLHigh"] = k
    c = get("rl_policy_clip_ratio")
    if c is not None and math.isfinite(c) and c > CLIP_MAX:
        out["RLPointClipFractionSevere"] = c
    return out


@dataclass
class Seen:
    alert: str
    step: object
    value: float
    time: float
    count: int = 1
    detail: str = ""     # what the value was, in words, at the first step it was seen


@dataclass
class Watcher:
    """Point observations of one segment, frame by frame; also the run's settings seen so far
    (a start-up config print comes before the steps) and the range of each headline metric
    (what a log too short to judge did show)."""
    seen: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)   # metric -> [min, max, steps, last step]
    _cache: dict = field(default_factory=dict)

    def see(self, data: dict, framework: str, step, t: float) -> None:
        values = {}
        cache = self._cache
        for key, v in data.items():
            if v is None or isinstance(v, str):
                continue
            r = cache.get((key, framework))
            if r is None:
                res = CATALOG.resolve(key, framework)
                if res.fallback or res.ignored or res.step or res.metric is None:
                    r = False
                else:
                    labels = dict(res.labels)
                    r = False if labels.get("split") else \
                        (res.metric.name, frozenset(labels.items()), res.scale)
                cache[(key, framework)] = r
            if r is False:
                continue
            try:
                values[(r[0], r[1])] = float(v) * r[2]
            except (TypeError, ValueError, OverflowError):
                continue
        for (metric, labels), v in values.items():
            if metric == "rl_config_value":
                param = dict(labels).get("parameter")
                if param and math.isfinite(v):
                    self.config[param] = v
            elif not labels and metric in HEADLINE:
                r = self.ranges.get(metric)
                if r is None:
                    self.ranges[metric] = [v, v, 1, step]
                else:
                    if v < r[0] or r[0] != r[0]:
                        r[0] = v
                    if v > r[1] or r[1] != r[1]:
                        r[1] = v
                    if step != r[3]:
                        r[2] += 1
                        r[3] = step
        for alert, value in judge(values, self.config).items():
            s = self.seen.get(alert)
            if s is None:
                self.seen[alert] = Seen(alert, step, value, t,
                                        detail=detail(alert, value, values, self.config))
            elif s.step != step:
                s.count += 1


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def detail(alert: str, value: float, values: dict, config: dict) -> str:
    """The value of a point finding in words (the first step it was seen)."""
    def get(metric, **labels):
        return values.get((metric, frozenset(labels.items())))

    if alert == "RLPointNoRewardVariance":
        level = get("rl_score")
        level = get("rl_reward") if level is None else level
        if level is None:
            return ""
        if level == 0:
            return "every score 0: the task is too hard for the model, or the reward is broken"
        if level == SHARED["reward_ceiling"]:
            return (f"every score {_fmt(level)}, the reward's maximum: the task is too easy, "
                    "nothing is left to learn")
        return f"every score {_fmt(level)}"
    if alert == "RLPointTruncationHigh":
        cap = config.get("max_response_length")
        if get("rl_response_truncated_ratio") is not None or not cap:
            return f"{value:.0%} of responses cut"
        lo, mean = get("rl_response_length_tokens", stat="min"), get("rl_response_length_tokens")
        if lo is not None and lo >= cap:
            return (f"the shortest response is {_fmt(lo)} tokens, at the configured "
                    f"max_response_length {_fmt(cap)}: every response was cut")
        return (f"mean length {_fmt(mean)} tokens is {value:.0%} of the configured "
                f"max_response_length {_fmt(cap)} and no truncated share is logged: most "
                "responses were cut")
    if alert == "RLPointGradNormFarAboveClip":
        clip = config.get("max_grad_norm")
        ref = f"{value / clip:.3g}x max_grad_norm {_fmt(clip)}" if clip and clip > 0 else \
            f"above {GRAD_FACTOR:g} with no clip in the log"
        out = f"{_fmt(value)}, {ref}"
        if value > GRAD_NUMERICAL_FACTOR * (clip if clip and clip > 0 else 1.0):
            out += "; no real gradient is that large: a numerical failure, an overflow"
        return out
    if alert == "RLPointReferenceKLHigh":
        return (f"{_fmt(value)}, above {KL_HIGH:g} (the veRL metrics guide's healthy range is "
                "0.001-0.1)")
    if alert == "RLPointLossMagnitude":
        for m, bound in LOSS_BOUNDS.items():
            v = get(m)
            if v is not None and math.isfinite(v) and abs(v) > bound:
                return f"{m} {_fmt(v)}, above {bound:g} in magnitude"
    if alert == "RLPointEntropyZero":
        return f"{_fmt(value)}, under {ENTROPY_MIN:g}"
    return ""


READY = "run:rl_step_window:baseline_steps"  # exporter/alerts/recordings.py: the step-window evidence gate


def ready_runs(prom, start: float, end: float, step: float) -> set:
    """Run labels (segments) for which the step-windowed rules had enough steps at some point."""
    from .evaluate import query_range
    got = query_range(prom, f"group by (run) ({READY})", math.floor(start / step) * step, end, step)
    return {dict(k).get("run") for k in got}


def findings(res, ev, ready: set, runbook: dict, ruleset) -> list:
    """Point findings of every segment (see the module doc), as evaluate.Finding rows."""
    from . import rules as rulesmod
    from .evaluate import Finding
    by_name = {a.name: a for a in ruleset.alerts}
    out = []
    for seg in res.segments:
        seg.ready = seg.run in ready
        if seg.points is None:
            continue
        fired = {f.alert for f in ev.findings if f.labels.get("run", seg.run) == seg.run}
        for alert, s in seg.points.seen.items():
            check = CHECKS[alert]
            if seg.ready and fired & set(check.confirms):
                continue  # the windowed rule says it, with its persistence
            where = f"step {s.step}" + (f" and {s.count - 1} later step(s)" if s.count > 1 else "")
            if seg.ready:
                severity = "info"
                note = (f"seen at {where} of {seg.steps}; the step-windowed rules "
                        f"({', '.join(check.confirms) or 'none'}) did not confirm it")
            else:
                severity = "warning"
                note = f"seen at {where}; too few steps to confirm ({seg.steps} in this segment)"
            section = None
            for name in check.confirms:
                a = by_name.get(name)
                if a is not None:
                    section = runbook.get(a.anchor)
                    break
            says = check.says + (f" ({s.detail})" if s.detail else "")
            out.append(Finding(
                alert=alert, severity=severity, labels={"run": seg.run}, start=s.time,
                end=s.time, value=s.value, step=s.step,
                summary=f"{says}: {note}", next=rulesmod.next_check(section),
                order=section["order"] if section else 10_000, segment=seg.index,
                confirmed=False))
    return out
