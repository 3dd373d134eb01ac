"""rl-exporter explain KEY... [--framework F] [--json]"""
from __future__ import annotations

import json

HELP = "say which canonical series each raw key becomes, with which labels, and why"


def add_arguments(p):
    p.add_argument("keys", nargs="+", metavar="KEY")
    p.add_argument("--framework", default="auto",
                   help="vocabulary to use (default auto: try each in turn)")
    p.add_argument("--json", action="store_true", help="one JSON object per key per line")


def run(args) -> int:
    from ..catalog import CATALOG, FRAMEWORKS
    if args.framework not in ("auto",) + FRAMEWORKS:
        print(f"unknown framework {args.framework!r}; known: auto, {', '.join(FRAMEWORKS)}")
        return 2
    for key in args.keys:
        r = CATALOG.resolve(key, args.framework)
        if args.json:
            print(json.dumps(r.as_dict(), ensure_ascii=False))
            continue
        if r.ignored:
            print(f"{key}: ignored ({r.reason})")
            continue
        labels = ",".join(f'{k}="{v}"' for k, v in r.labels)
        target = f"{r.metric.name}{{{labels}}}" if labels else r.metric.name
        extra = f" x{r.scale:g}" if r.scale != 1 else ""
        print(f"{key} -> {target}{extra}  [{r.framework}; agg={r.agg}; {r.reason}]")
    return 0
