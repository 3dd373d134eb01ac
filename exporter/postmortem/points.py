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
- PPO KL above 0.05 and a clip fraction above 0.5 (the Chinese metrics guide: "unstable").

Each becomes one finding per segment: its own alert name (`RLPoint...`), the first step it was
seen at, how many steps showed it, and `confirmed: false`. Where the segment had enough steps for
the step-windowed rules and the rule it points to fired there, the point finding is dropped (the
alert says it); where that rule could judge and stayed silent, it is kept as `info`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..catalog import CATALOG

LOSSES = ("rl_loss", "rl_policy_loss", "rl_value_loss")


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
    Check("RLPointNoRewardVariance", ("RLNoInformativeGroups", "RLGradNormZero"),
          "no reward variance: every score equal, reward std 0 or every group tied"),
    Check("RLPointTruncationHigh", ("RLResponseTruncationHigh",),
          ">= 90% of responses cut at the length limit"),
    Check("RLPointEntropyZero", ("RLEntropyCollapse",), "entropy near 0 (< 0.01)"),
    Check("RLPointMFUAboveOne", (), "MFU above 1: the peak-FLOPs figure is wrong"),
    Check("RLPointPolicyKLHigh", ("RLPolicyKLSpike",), "PPO KL above 0.05 (unstable)"),
    Check("RLPointClipFractionSevere", ("RLClipFractionHigh",),
          "clip fraction above 0.5 (updates heavily clipped)"),
)}
TRUNCATION_MIN = 0.9
ENTROPY_MIN = 0.01
KL_MAX = 0.05
CLIP_MAX = 0.5


def _bad(v) -> bool:
    return isinstance(v, float) and not math.isfinite(v)


def judge(values: dict) -> dict:
    """{alert: value} of the checks a frame's canonical values fail. `values` maps
    (metric, frozenset(labels)) -> value, train split only."""
    out = {}

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


@dataclass
class Watcher:
    """Point observations of one segment, frame by frame."""
    seen: dict = field(default_factory=dict)
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
        for alert, value in judge(values).items():
            s = self.seen.get(alert)
            if s is None:
                self.seen[alert] = Seen(alert, step, value, t)
            elif s.step != step:
                s.count += 1


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
            out.append(Finding(
                alert=alert, severity=severity, labels={"run": seg.run}, start=s.time,
                end=s.time, value=s.value, step=s.step,
                summary=f"{check.says}: {note}", next=rulesmod.next_check(section),
                order=section["order"] if section else 10_000, segment=seg.index,
                confirmed=False))
    return out
