"""rl-exporter doctor LOG... [--format F] [--json] [--html FILE]"""
from __future__ import annotations

import sys

HELP = ("post-mortem of a run's log: evaluate the shipped recording and alerting rules over it "
        "with a real Prometheus and print what fired, when, and what to check next")


def add_arguments(p):
    from .backfill import add_common
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files of one run, in order")
    p.add_argument("--run", default=None,
                   help="run label (default: the spool's run, else the log's file name)")
    add_common(p)
    p.add_argument("--json", action="store_true",
                   help="one JSON object per finding per line (alert, severity, step, time, "
                        "value, summary, next); a healthy log prints one line with alert null")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="name the checks: those with no data in the log, those it has too few "
                        "steps for, and those that judged it")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write a self-contained HTML report with plots (needs matplotlib: "
                        "pip install 'rl-exporter[report]')")
    p.add_argument("--rules", action="append", default=None, metavar="FILE",
                   help="rule files (repeatable, globs; default the rules shipped with "
                        "rl-exporter)")
    p.add_argument("--runbook", default=None, help="runbook (default the one shipped with rl-exporter)")
    p.add_argument("--eval-interval", type=float, default=60.0,
                   help="seconds between rule evaluations for groups without an interval "
                        "(default 60, Prometheus's)")
    p.add_argument("--stacks", default=None, metavar="FILE",
                   help="hang stack dumps to show beside RLPhaseHung / RLRunStalled (default: "
                        "LOG.stacks beside the spool, written by the hang watch or serve's py-spy)")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="keep the TSDB in DIR/data, as `backfill --out` writes it (the log's "
                        "blocks, every recording rule, the alert history), and the Prometheus "
                        "log (default: a removed temp dir)")
    from ..postmortem import deviation
    deviation.add_doctor_arguments(p)


def run(args) -> int:
    from ..postmortem import report
    from ..postmortem.doctor import doctor
    from ..postmortem.logs import LogError
    from ..postmortem.rules import RulesError
    from ..postmortem.tools import ToolFailed, ToolMissing, stop_cleanly_on_sigterm
    from ..postmortem import deviation
    stop_cleanly_on_sigterm()
    against = deviation.for_doctor(args)  # --baseline / --compare, read before the long part
    if against is deviation.FAILED:
        return 1
    try:
        out = doctor(args.logs, run=args.run, fmt=args.format, rules=args.rules,
                     runbook_path=args.runbook, html=bool(args.html),
                     eval_interval=args.eval_interval, keep=args.keep,
                     step_seconds=args.step_seconds, clock=args.clock, start=args.start,
                     until=args.until, algorithm=args.algorithm, model=args.model,
                     scrape_interval=args.scrape_interval, stacks=args.stacks)
    except ToolMissing as e:
        print(f"rl-exporter doctor: {e}", file=sys.stderr)
        return 3
    except (LogError, RulesError, ToolFailed, ValueError, OSError) as e:
        print(f"rl-exporter doctor: {e}", file=sys.stderr)
        return 1
    res, ev = out.backfill, out.evaluation
    if args.json:
        sys.stdout.write(report.json_lines(res, ev))
    else:
        sys.stdout.write(report.text(res, ev, verbose=args.verbose))
    deviation.print_findings(against, args, sys.stdout)
    if args.html:
        doc = report.html_report(res, ev, out.images, out.runbook)
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(doc)
        print(f"rl-exporter doctor: report written to {args.html} ({len(out.images)} plots)",
              file=sys.stderr)
    return 0
