"""Doctor's goodput table: where the log's wall time went, read from the one ledger
(exporter/core/goodput.py) that each segment's replay fed while backfilling, so the seconds
are the final values of the rl_goodput_seconds_total{bucket} series `backfill` writes.
Start-up is not in a log (docs/goodput.md), so the ledger's startup bucket stays 0 here."""
from __future__ import annotations

from ..core.goodput import BUCKETS, PRODUCTIVE
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
    out = {"buckets": {b: round(s, 3) for b, s in total.items()},
           "share": {b: (round(s / wall, 4) if wall > 0 else None) for b, s in total.items()},
           "accounted_seconds": round(wall, 3),
           "ratio": round(total[PRODUCTIVE] / wall, 4) if wall > 0 else None}
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
    lines = [f"goodput: {gp['ratio']:.1%} of {human_duration(wall)} accounted "
             "(rl_goodput_seconds_total; start-up is not in a log)",
             f"  {'BUCKET':<18} {'SECONDS':>12} {'SHARE':>7}"]
    for b, s in gp["buckets"].items():
        if s or b == PRODUCTIVE:
            lines.append(f"  {b:<18} {s:>12.1f} {gp['share'][b]:>7.1%}")
    return lines
