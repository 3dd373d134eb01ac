"""rl-exporter baseline LOG_OR_SPOOL... --out FILE [--prometheus URL --run R]"""
from __future__ import annotations

import sys

HELP = ("learn per-metric bands over training progress from healthy runs of one recipe "
        "(logs, spools, or a Prometheus), for `doctor --baseline` and `rl-exporter alerts "
        "render --baseline`")


def add_arguments(p):
    p.add_argument("logs", nargs="*", metavar="LOG_OR_SPOOL",
                   help="one log or spool per healthy run (a spool holding several runs: "
                        "--run names the one)")
    p.add_argument("--out", required=True, metavar="FILE", help="the baseline YAML to write")
    p.add_argument("--prometheus", default=None, metavar="URL",
                   help="read the runs named by --run from this Prometheus (query_range API)")
    p.add_argument("--run", action="append", default=None, metavar="R",
                   help="run label (repeatable): with --prometheus, the runs to read; with a "
                        "spool of several runs, the one to read")
    p.add_argument("--lookback", default="30d",
                   help="with --prometheus: how far back the run's samples go (default 30d)")
    p.add_argument("--format", default="auto", help="log format (default: detect)")
    p.add_argument("--recipe", default=None,
                   help="a name for the recipe (default: the first run's)")
    p.add_argument("--by", default="step", choices=("step", "fraction"),
                   help="windows of steps (default) or of the fraction of each run's steps")
    p.add_argument("--windows", type=int, default=10, help="windows over the run (default 10)")
    p.add_argument("--margin", type=float, default=0.25,
                   help="widen each band by this share of its width (default 0.25)")
    p.add_argument("--signals", default="training", choices=("training", "all"),
                   help="training signals only (default: no timings, throughput, memory, "
                        "validation) or every gauge")


def run(args) -> int:
    from ..postmortem import baseline as bl
    from ..postmortem.logs import LogError
    if not args.logs and not args.prometheus:
        print("rl-exporter baseline: give healthy runs' logs or --prometheus URL --run R",
              file=sys.stderr)
        return 2
    if args.prometheus and not args.run:
        print("rl-exporter baseline: --prometheus needs --run (repeatable)", file=sys.stderr)
        return 2
    try:
        runs = [bl.read_run(p, fmt=args.format, run=(args.run or [None])[0]
                            if not args.prometheus else None) for p in args.logs]
        if args.prometheus:
            runs += [bl.read_prometheus(args.prometheus, r, lookback=args.lookback)
                     for r in args.run]
        doc = bl.learn(runs, by=args.by, windows=args.windows, margin=args.margin,
                       recipe=args.recipe, signals=args.signals)
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(bl.dump(doc))
    except (bl.BaselineError, LogError, OSError, ValueError) as e:
        print(f"rl-exporter baseline: {e}", file=sys.stderr)
        return 1
    print(f"rl-exporter baseline: {len(doc['bands'])} series banded from {len(runs)} run(s) "
          f"({', '.join(r.name for r in runs)}), written to {args.out}")
    for key, why in doc["unbanded"].items():
        print(f"  no band: {key}: {why}")
    return 0
