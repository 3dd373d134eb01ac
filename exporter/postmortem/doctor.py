"""`rl-exporter doctor`: backfill a log into a scratch TSDB, evaluate the shipped rules
there with a real Prometheus, and report what fired, when, and what to check next."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from . import backfill as bf
from . import crash as crashmod
from . import ending as endingmod
from . import evaluate as evmod
from . import points
from . import report
from . import rules as rulesmod
from . import stacks as stacksmod
from . import tools

# Alerts about the restarts themselves (a crash loop). Every other rule reads each segment of a
# log under its own run label, so no window spans a restart (segments.py); these read the log
# as the live Prometheus saw it, one run whose step goes back at each restart.
ACROSS_RESTARTS = frozenset({"RLRestartWithoutProgress"})


@dataclass
class Outcome:
    backfill: object
    evaluation: object
    ruleset: object
    runbook: dict
    images: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    stacks_file: str | None = None   # the stack dumps read (`<spool>.stacks` or --stacks)
    captures: list = field(default_factory=list)


def doctor(paths: list[str], *, run: str | None = None, fmt: str = "auto",
           rules: list[str] | None = None, runbook_path: str | None = None,
           html: bool = False, eval_interval: float = 60.0, keep: str | None = None,
           recording_engine: str = "queries", stacks: str | None = None,
           **backfill_kw) -> Outcome:
    tools.find("promtool")
    tools.find("prometheus")
    ruleset = rulesmod.load(rules)
    stacks = stacksmod.path_for(paths, stacks)
    captures = stacksmod.read(stacks) if stacks else []  # an unreadable --stacks: OSError
    if html:
        try:
            import matplotlib  # noqa: F401
        except ImportError as e:
            raise rulesmod.RulesError("--html needs matplotlib: pip install "
                                      "'rl-exporter[report]'") from e
    runbook = rulesmod.runbook(runbook_path)
    work = keep or tempfile.mkdtemp(prefix="rlx-doctor-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data")
    if run is None:
        run = _run_name(paths[0])
    t0, c0 = time.perf_counter(), tools.cpu()
    try:
        res = bf.backfill(paths, run, data, fmt=fmt, **backfill_kw)
        prom = tools.Prometheus(data, work).start()
        try:
            ev = evmod.evaluate(prom, ruleset, res, runbook, work, eval_interval=eval_interval,
                                recording_engine=recording_engine)
            for f in ev.findings:
                seg = res.segment_of(f.labels.get("run"))
                f.segment = seg.index if seg is not None else 1
            if len(res.segments) > 1:
                ev.findings = [f for f in ev.findings if f.alert not in ACROSS_RESTARTS]
                ev.findings.extend(_across_restarts(paths, run, work, ruleset, runbook, res,
                                                    eval_interval, fmt, backfill_kw))
            ready = points.ready_runs(prom, res.start, res.end, eval_interval)
            ev.findings.extend(points.findings(res, ev, ready, runbook, ruleset))
            ev.ending = endingmod.read(paths, res, prom)   # finished, crashed, cut short
            ev.findings.extend(crashmod.findings(res, ev, runbook))
            ev.findings.sort(key=lambda f: (f.start, f.order))
            stacksmod.attach(ev.findings, captures, run)
            out = Outcome(res, ev, ruleset, runbook, stacks_file=stacks, captures=captures)
            if html:
                t2 = time.perf_counter()
                for title, names, shade in report.panels(res, ev, ruleset):
                    series = report.fetch(prom, res, names)
                    if series:
                        out.images.append((title, report.render_png(title, series, res, ev,
                                                                    shade)))
                out.timings["report"] = time.perf_counter() - t2
        finally:
            c = tools.cpu()
            prom.stop()
            server = tools.cpu() - c  # the server's CPU, counted when it exits
        out.timings.update(res.timings, **ev.timings)
        out.timings["alert_queries_cpu"] += server
        out.timings["total"] = time.perf_counter() - t0
        out.timings["total_cpu"] = tools.cpu() - c0
        return out
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _across_restarts(paths, run, work, ruleset, runbook, res, eval_interval, fmt,
                     backfill_kw) -> list:
    """The ACROSS_RESTARTS alerts over the whole log backfilled as one run (a second backfill:
    only for a log with restarts in it), each finding placed in the segment it fired in."""
    sub = rulesmod.RuleSet(files=ruleset.files, recording=[],
                           alerts=[a for a in ruleset.alerts if a.name in ACROSS_RESTARTS])
    if not sub.alerts:
        return []
    whole = os.path.join(work, "whole")
    os.makedirs(whole, exist_ok=True)
    kw = dict(backfill_kw, progress=False)
    one = bf.backfill(paths, run, os.path.join(whole, "data"), fmt=fmt, split_segments=False, **kw)
    prom = tools.Prometheus(os.path.join(whole, "data"), whole).start()
    try:
        found = evmod.evaluate(prom, sub, one, runbook, whole, eval_interval=eval_interval).findings
    finally:
        prom.stop()
    for f in found:
        f.segment = max([s.index for s in res.segments if s.start <= f.start] or [1])
    return found


def _run_name(path: str) -> str:
    """The spool's own run label (a spool of several runs needs --run), else the log's file
    name."""
    from .logs import LogError, spool_runs
    runs = spool_runs(path)
    if len(runs) > 1:
        raise LogError(f"{path} holds {len(runs)} runs ({', '.join(runs[:10])}): pass "
                       "--run with the one to examine")
    if runs and runs[0]:
        return runs[0]
    base = os.path.basename(path)
    return base.split(".", 1)[0] or "run"
