"""A run against a baseline: per metric, the first step from which it stays outside its band
for `persist` consecutive steps (the live rules' recent_min_steps), ordered by that step: the
run's own "check first, then next" timeline."""
from __future__ import annotations

import math

from . import baseline as bl

PERSIST_STEPS = 5  # alerts/rules.py CONFIG["recent_min_steps"]: the live rule's step count


def _label_text(labels: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def deviations(doc: dict, run: bl.RunSeries, persist: int = PERSIST_STEPS,
               metrics=None) -> list[dict]:
    """Findings {"alert": "RLOutsideBaseline", severity, metric, labels, step, band, value,
    steps_outside, summary, next}, ordered by first step. `metrics`: only these names."""
    by = doc["method"]["by"]
    pos = bl._progress(run, by) if run.steps else None
    out = []
    for key in doc["bands"]:
        name, labels = bl.parse_key(key)
        if metrics is not None and name not in metrics:
            continue
        streak: list = []
        found = None
        for step, v in run.series(key):
            band = bl.band_at(doc, key, pos(step))
            if band is None:
                streak = []
                continue
            lo, hi = band
            if not math.isfinite(v) or v < lo or v > hi:
                streak.append((step, v, band))
                if len(streak) >= persist:
                    found = streak
                    break
            else:
                streak = []
        if found is None:
            continue
        step, v, (lo, hi) = found[0]
        where = "above" if v == v and v > hi else ("below" if v == v and v < lo else "outside")
        lab = _label_text(labels)
        sel = f"{name}{{{lab}}}" if lab else name
        out.append({
            "alert": "RLOutsideBaseline", "severity": "warning", "metric": name,
            "labels": labels, "step": int(step) if float(step).is_integer() else step,
            "band": [lo, hi], "value": v if math.isfinite(v) else None,
            "steps_outside": persist,
            "summary": (f"{sel} left its baseline band at step {int(step)}: {v:.4g} {where} "
                        f"[{lo:.4g}, {hi:.4g}] and stayed out for {persist}+ steps"),
            "next": (f"compare with the recipe's healthy runs "
                     f"({', '.join(r['name'] for r in doc['runs'])}); the metrics that left "
                     "their bands before this step are the first to check"),
        })
    out.sort(key=lambda f: (f["step"], f["metric"]))
    return out


def timeline(findings: list[dict]) -> str:
    """'rl_policy_clip_ratio left its band at step 350, rl_entropy at 370, rl_score at 410'."""
    if not findings:
        return "no metric left its baseline band"
    parts = []
    for i, f in enumerate(findings):
        lab = _label_text(f["labels"])
        sel = f"{f['metric']}{{{lab}}}" if lab else f["metric"]
        parts.append(f"{sel} left its band at step {f['step']}" if i == 0
                     else f"{sel} at {f['step']}")
    return ", ".join(parts)
