"""rl-exporter catalog [--json]"""
from __future__ import annotations

import json

HELP = "print every canonical metric: name, kind, unit, aggregation, labels, help, aliases"


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="one JSON document (a list of metrics)")
    p.add_argument("--framework", help="only metrics that this framework feeds")
    p.add_argument("--budget", action="store_true",
                   help="measure the series of one fully featured rank (8 GPUs) against the "
                        "per-rank budget; exit 1 when over")


def run(args) -> int:
    if getattr(args, "budget", False):
        from ..demo.budget import measure, text
        report = measure()
        print(json.dumps(report, indent=1) if args.json else text(report))
        return 0 if report["within"] else 1
    from ..catalog import CATALOG, FRAMEWORK_ALIASES
    rows = CATALOG.as_json()
    if args.framework:
        fw = FRAMEWORK_ALIASES.get(args.framework, args.framework)
        rows = [r for r in rows if fw in (r.get("aliases") or {}) or r.get("framework") == fw]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        if r["kind"] == "ignored":
            print(f"(ignored by {r['framework']}: {len(r['keys'])} keys, "
                  f"{len(r['patterns'])} patterns: {'; '.join(r['why'])})")
            continue
        labels = ",".join(r["labels"])
        print(f"{r['name']}{{{labels}}}  {r['kind']}  unit={r['unit']}  agg={r['aggregation']}"
              + (f" by {r['weight']}" if r["weight"] else ""))
        for fw, keys in r["aliases"].items():
            print(f"    {fw}: {', '.join(keys[:6])}" + (" ..." if len(keys) > 6 else ""))
            spans = r.get("releases", {}).get(fw, {})
            old = [f"{k} (until {s['until']})" for k, s in spans.items() if s["until"]]
            if old:
                print(f"      older releases only: {', '.join(old[:4])}" + (" ..." if len(old) > 4 else ""))
    return 0
