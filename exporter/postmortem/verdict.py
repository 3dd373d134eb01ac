"""Doctor's verdict, in words, before its timeline.

Three kinds:
- `findings`: some check raised a warning or critical finding (counted by severity, the first
  named);
- `too_short`: no segment of the log had the steps the step-windowed rules need (a recent window
  of recent_min_steps steps and a baseline of baseline_min_steps after warmup_steps of warm-up,
  exporter/alerts/config.py): the verdict says so, lists what the log did show (the range of each
  headline metric, the point findings), and never says "healthy";
- `healthy`: every check with data could judge and none raised a warning or critical finding
  (info notes may follow), and the run is known to have finished;
- `healthy_so_far`: the same, in a log that is cut short or does not say how the run ended
  (postmortem/ending.py): "healthy as far as the log goes".

The header folds the checks into one count line (how many had data, how many of those the log
was too short for, how many had none); --verbose lists them by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..alerts.config import SHARED

SERIOUS = ("critical", "warning")
# the headline metrics' names as a reader says them (exporter/postmortem/points.py HEADLINE)
SAY = {
    "rl_score": "task score", "rl_reward": "reward", "rl_reference_kl": "KL to the reference",
    "rl_reward_kl_penalty": "in-reward KL", "rl_policy_kl": "PPO KL", "rl_entropy": "entropy",
    "rl_grad_norm": "gradient norm", "rl_policy_loss": "policy loss", "rl_loss": "loss",
    "rl_value_loss": "value loss", "rl_policy_clip_ratio": "clip fraction",
    "rl_response_length_tokens": "response length", "rl_response_truncated_ratio": "truncated share",
}


def steps_needed() -> int:
    """Steps a segment needs before the step-windowed rules can judge it (the shipped rules'
    evidence gate: a baseline past warm-up, then a recent window)."""
    return max(SHARED["warmup_steps"], SHARED["baseline_min_steps"]) + SHARED["recent_min_steps"]


@dataclass
class Verdict:
    kind: str                         # findings | too_short | healthy | healthy_so_far
    line: str                         # the verdict, one sentence
    counts: dict = field(default_factory=dict)   # severity -> findings
    seen: dict = field(default_factory=dict)     # metric -> {min, max, steps} (too_short)

    @property
    def healthy(self) -> bool:
        return self.kind == "healthy"


def _ready(res, ev) -> bool:
    """Some segment had the steps the step-windowed rules need (rules without that evidence
    gate list nothing as too short: then every log is judged)."""
    return not ev.too_short or any(getattr(g, "ready", False) for g in getattr(res, "segments", []))


def seen(res) -> dict:
    """metric -> {min, max, steps} over the segments (what the log showed)."""
    from .points import HEADLINE
    out: dict = {}
    for g in getattr(res, "segments", []):
        w = g.points
        if w is None:
            continue
        for m, (lo, hi, n, _) in w.ranges.items():
            cur = out.get(m)
            if cur is None:
                out[m] = {"min": lo, "max": hi, "steps": n}
            else:
                cur["min"], cur["max"] = min(cur["min"], lo), max(cur["max"], hi)
                cur["steps"] += n
    return {m: out[m] for m in HEADLINE if m in out}


def _num(v: float) -> str:
    if v != v:
        return "NaN"
    return f"{v:.4g}"


def seen_text(got: dict) -> str:
    parts = []
    for m, r in got.items():
        rng = _num(r["min"]) if r["min"] == r["max"] else f"{_num(r['min'])} to {_num(r['max'])}"
        parts.append(f"{SAY.get(m, m)} {rng}")
    return "; ".join(parts)


def judge(res, ev) -> Verdict:
    counts: dict = {}
    for f in ev.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    serious = [f for f in ev.findings if f.severity in SERIOUS]
    ready = _ready(res, ev)
    tally = ", ".join(f"{counts[s]} {s}" for s in ("critical", "warning", "info") if counts.get(s))
    if not ready:
        got = seen(res)
        need = steps_needed()
        line = (f"too short to judge: {res.steps} step{'s' if res.steps != 1 else ''} in this log, "
                f"and the step-windowed rules need about {need} (a baseline of "
                f"{SHARED['baseline_min_steps']} steps after {SHARED['warmup_steps']} of warm-up, "
                f"then a recent window of {SHARED['recent_min_steps']})")
        n = len(ev.findings)
        if serious:
            first = min(serious, key=lambda f: (f.start, f.order))
            line += (f"; on the steps it has: {n} finding{'s' if n > 1 else ''} ({tally}), the "
                     f"first {first.alert} at step {first.step}")
        elif ev.findings:
            line += f"; on the steps it has: {n} note{'s' if n > 1 else ''} ({tally})"
        else:
            line += ("; the single-step checks found no failure on the steps it has, which says "
                     "nothing about the trends")
        return Verdict("too_short", line, counts, got)
    if serious:
        first = min(serious, key=lambda f: (f.start, f.order))
        n = len(ev.findings)
        return Verdict("findings", f"{n} finding{'s' if n > 1 else ''} ({tally}); the first warning "
                                   f"or worse is {first.alert} at step {first.step}", counts)
    ran = len(ev.checks) - len(ev.no_data)
    # plain healthy only for a run known to have finished (postmortem/ending.py): a log cut
    # short, or silent on its end, is healthy as far as it goes
    ending = getattr(ev, "ending", None)
    word = ending.verdict() if ending is not None else "healthy"
    line = f"{word}: none of the {ran} checks with data raised a warning or critical finding"
    if ev.findings:
        n = len(ev.findings)
        line += f"; {n} note{'s' if n > 1 else ''} below ({tally})"
    return Verdict("healthy" if word == "healthy" else "healthy_so_far", line, counts)


def display_path(path: str) -> str:
    """A file as the reader named it: relative to the working directory where it is below it."""
    import os
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def checks_line(res, ev) -> str:
    """The checks, counted in one line."""
    had = len(ev.checks) - len(ev.no_data)
    short = len(ev.too_short)
    files = ", ".join(map(display_path, ev.rule_files))
    line = (f"{len(ev.checks)} checks ({files}), evaluated every {ev.eval_interval:g}s by "
            f"Prometheus: {had} had data in this log")
    if short:
        line += f" ({short} of them need more steps than it has)"
    line += f", {len(ev.no_data)} had none"
    if ev.no_data or short:
        line += " (--verbose names them)"
    return line


def verbose_lines(res, ev) -> list[str]:
    lines = []
    if ev.no_data:
        lines.append(f"  no data for: {', '.join(ev.no_data)}")
    if ev.too_short:
        lines.append(f"  too few steps to judge ({res.steps} in this log; step-windowed rules need a "
                     f"recent window of steps and a baseline after warm-up): {', '.join(ev.too_short)}")
    ran = [c for c in ev.checks if c not in ev.no_data and c not in ev.too_short]
    if ran:
        lines.append(f"  judged: {', '.join(ran)}")
    return lines
