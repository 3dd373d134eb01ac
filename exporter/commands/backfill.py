"""rl-exporter backfill LOG... --run NAME --out DIR"""
from __future__ import annotations

import json
import sys

HELP = ("turn a finished or crashed run's log into Prometheus TSDB blocks holding the series "
        "`serve` would have exported, at the run's own times, with the recording rules and the "
        "alert history (ALERTS) Prometheus would have recorded live (promtool, Prometheus)")


def add_arguments(p):
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files of one run, in order")
    p.add_argument("--run", required=True,
                   help="run label (in a spool holding several runs: the run to backfill)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="directory for the blocks (a Prometheus --storage.tsdb.path, or move "
                        "them into one); written atomically: an interrupted backfill leaves it "
                        "as it was")
    p.add_argument("--replace", action="store_true",
                   help="replace the blocks an earlier backfill of this --run left in DIR "
                        "(default: refuse, rather than double the run's samples)")
    p.add_argument("--rules", action="append", default=None, metavar="FILE",
                   help="rule files whose recordings and alert history to write (repeatable, "
                        "globs; default the rules shipped with rl-exporter)")
    p.add_argument("--no-rules", action="store_true",
                   help="the log's series only: no recording rules, no ALERTS")
    p.add_argument("--eval-interval", type=float, default=60.0,
                   help="seconds between rule evaluations for groups without an interval "
                        "(default 60, Prometheus's)")
    add_common(p)
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")


def add_common(p):
    from ..logs.registry import names
    p.add_argument("--format", default="auto",
                   help=f"auto (detect; default) or a format (aliases in parentheses): {names()}")
    p.add_argument("--step-seconds", type=float, default=60.0,
                   help="seconds per step when the log has neither timestamps nor step "
                        "durations (default 60)")
    p.add_argument("--clock", default="auto", choices=["auto", "log", "steps", "fixed"],
                   help="where timestamps come from: the log's (log), the run's step durations "
                        "(steps), --step-seconds (fixed); auto (default) picks in that order")
    p.add_argument("--start", default=None,
                   help="time of the first frame for derived clocks (RFC 3339 or Unix seconds; "
                        "default: the log's first timestamp, else so that the run ends when the "
                        "log was last written)")
    p.add_argument("--until", default=None,
                   help="the exporter kept serving the last values until this time (a hung "
                        "trainer): RFC 3339, Unix seconds, or +DURATION after the last frame "
                        "(e.g. +30m)")
    p.add_argument("--scrape-interval", type=float, default=60.0,
                   help="between frames, repeat the last values every S seconds as a live "
                        "scrape would (default 60, Prometheus's; 0: one sample per frame)")
    p.add_argument("--algorithm", default=None, help="rl_run_info algorithm label")
    p.add_argument("--model", default=None, help="rl_run_info model label")


def run(args) -> int:
    from ..postmortem.backfill import OutputError
    from ..postmortem.doctor import backfill_out
    from ..postmortem.logs import LogError
    from ..postmortem.rules import RulesError
    from ..postmortem.tools import ToolFailed, ToolMissing, stop_cleanly_on_sigterm
    stop_cleanly_on_sigterm()
    try:
        res, ev = backfill_out(args.logs, args.run, args.out, rules=args.rules,
                               with_rules=not args.no_rules, replace=args.replace,
                               eval_interval=args.eval_interval, fmt=args.format,
                               step_seconds=args.step_seconds, clock=args.clock,
                               start=args.start, until=args.until, algorithm=args.algorithm,
                               model=args.model, scrape_interval=args.scrape_interval)
    except ToolMissing as e:
        print(f"rl-exporter backfill: {e}", file=sys.stderr)
        return 3
    except (LogError, RulesError, OutputError, ToolFailed, ValueError, OSError) as e:
        print(f"rl-exporter backfill: {e}", file=sys.stderr)
        return 1
    s = res.summary()
    s["rules"] = None if ev is None else {
        "recording_rules": len(ev.recorded), "recorded_series": sum(ev.recorded.values()),
        "alerts_evaluated": len(ev.checks) - len(ev.no_data),
        "alert_series": ev.alert_series,
        "fired": sorted({f.alert for f in ev.findings})}
    if args.json:
        print(json.dumps(s))
    else:
        print(f"rl-exporter backfill: run {s['run']}: {s['frames']} frames, {s['steps']} steps, "
              f"{s['series']} series, {s['samples']} samples in {s['blocks']} block(s) under "
              f"{s['out']}\n  time: {s['start']} .. {s['end']} from {s['clock_source']}")
        r = s["rules"]
        if r is not None:
            print(f"  rules: {r['recording_rules']} recording rules ({r['recorded_series']} series), "
                  f"{r['alerts_evaluated']} alerts with data, {r['alert_series']} ALERTS / "
                  f"ALERTS_FOR_STATE series" + (f" (fired: {', '.join(r['fired'])})"
                                                 if r["fired"] else ""))
        if len(s["segments"]) > 1:
            for g in s["segments"]:
                print(f"  segment {g['segment']} as run={g['run']}: steps {g['first_step']}.."
                      f"{g['last_step']} ({g['steps']} steps), {g['why']}")
        for lg in s["logs"]:
            print(f"  {lg['path']}: format {lg['format']}, {lg['frames']} frames, rejected "
                  f"{lg['rejected'] or 0}, skipped lines {lg['skipped_lines']}"
                  + (f", {lg['other_runs']} records of other runs" if lg["other_runs"] else ""))
    return 0
