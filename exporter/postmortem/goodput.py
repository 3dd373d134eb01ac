"""Doctor's goodput table: where the log's wall time went, read from the one ledger
(exporter/core/goodput.py) that each segment's replay fed while backfilling, so the seconds
are the final values of the rl_goodput_seconds_total{bucket} series `backfill` writes.
Start-up is not in a log (docs/goodput.md), so the ledger's startup bucket stays 0 here."""
from __future__ import annotations

from ..core.goodput import BUCKETS, CLASS_OF, PRODUCTIVE, UNCLASSIFIED, WASTE, class_totals
from ..promql import human_duration


def summary(res) -> dict:
    """{"buckets": seconds, "share": of the accounted time, "accounted_seconds", "ratio"}
    summed over the segments (each one a restarted trainer's own ledger); with several
    segments, "segments" has each one's seconds."""
    segs = [g for g in getattr(res, "segments", []) if g.goodput]
    total = dict.fromkeys(BUCKETS, 0.0)
    for g in segs:
        for b, s in g.goodput.items():
            total[b] = total.get(b, 0.0) + s
    wall = sum(total.values())
    classes = class_totals(total)
    comparable = classes[UNCLASSIFIED] == 0.0
    out = {"buckets": {b: round(s, 3) for b, s in total.items()},
           "share": {b: (round(s / wall, 4) if wall > 0 else None) for b, s in total.items()},
           "classes": {c: round(s, 3) for c, s in classes.items()},
           "accounted_seconds": round(wall, 3),
           "ratio": round(total[PRODUCTIVE] / wall, 4) if wall > 0 else None,
           # the run's ratio means the same as another framework's (docs/goodput.md)
           "comparable": comparable,
           "not_wasted": round(1.0 - classes[WASTE] / wall, 4) if wall > 0 and comparable else None}
    if len(segs) > 1:
        out["segments"] = [{"segment": g.index, "run": g.run,
                            "buckets": {b: round(s, 3) for b, s in g.goodput.items()}}
                           for g in segs]
    return out


def text(gp: dict) -> list[str]:
    """The table: one row per bucket with time, then the ratio."""
    wall = gp["accounted_seconds"]
    if not wall:
        return ["goodput: no step interval in this log to account"]
    classes = gp.get("classes") or class_totals(gp["buckets"])
    lines = [f"goodput: {gp['ratio']:.1%} of {human_duration(wall)} accounted "
             "(rl_goodput_seconds_total; start-up is not in a log)",
             f"  {'BUCKET':<22} {'CLASS':<13} {'SECONDS':>12} {'SHARE':>7}"]
    for b, s in gp["buckets"].items():
        if s or b == PRODUCTIVE:
            lines.append(f"  {b:<22} {CLASS_OF.get(b, WASTE):<13} {s:>12.1f} {gp['share'][b]:>7.1%}")
    lines.append("  " + ", ".join(f"{c} {s / wall:.1%}" for c, s in classes.items() if s))
    if gp.get("comparable", classes[UNCLASSIFIED] == 0.0):
        lines.append(f"  not wasted: {1.0 - classes[WASTE] / wall:.1%} (comparable with other runs)")
    else:
        lines.append("  not comparable with other runs: the run did not say whether it is "
                     "synchronous (rl_config_value{parameter=\"async_training\"}), so its rollout "
                     "calls are unclassified")
    return lines
