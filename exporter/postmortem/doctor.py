"""`rl-exporter doctor`: backfill a log into a scratch TSDB, evaluate the shipped rules
there with a real Prometheus, and report what fired, when, and what to check next."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field

from . import backfill as bf
from . import crash as crashmod
from . import ending as endingmod
from . import evaluate as evmod
from . import evidence as evidencemod
from . import points
from . import report
from . import rules as rulesmod
from . import stacks as stacksmod
from . import tools
from .progress import Phases

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
           stacks: str | None = None, progress=None, **backfill_kw) -> Outcome:
    """`progress`: None (on a terminal), True or False: a line per phase on stderr."""
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
    run = run_of(paths, run)
    phases = Phases(progress)
    with tools.scratch("rlx-doctor-", keep=keep) as work:
        t0, c0 = time.perf_counter(), tools.cpu()
        res, ev, prom = examine(paths, run, work, ruleset, runbook, eval_interval=eval_interval,
                                keep=keep is not None, phases=phases, fmt=fmt,
                                backfill_kw=backfill_kw)
        try:
            t1 = time.perf_counter()
            with phases("findings"):
                ready = points.ready_runs(prom, res.start, res.end, eval_interval)
                ev.findings.extend(points.findings(res, ev, ready, runbook, ruleset))
                ev.ending = endingmod.read(paths, res, prom)  # finished, crashed, cut short
                ev.findings.extend(crashmod.findings(res, ev, runbook))
                ev.findings.sort(key=lambda f: (f.start, f.order))
                evidencemod.attach(ev.findings, prom, res, ruleset, runbook, eval_interval)
                stacksmod.attach(ev.findings, captures, run)
            out = Outcome(res, ev, ruleset, runbook, stacks_file=stacks, captures=captures)
            out.timings["findings"] = time.perf_counter() - t1
            if html:
                t2 = time.perf_counter()
                figures = report.panels(res, ev, ruleset)
                with phases("report plots", len(figures), "plots") as bar:
                    for title, names, shade in figures:
                        series = report.fetch(prom, res, names)
                        if series:
                            out.images.append((title, report.render_png(title, series, res,
                                                                        ev, shade)))
                        bar.advance()
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


def backfill_out(paths: list[str], run: str, out: str, *, rules: list[str] | None = None,
                 with_rules: bool = True, replace: bool = False, eval_interval: float = 60.0,
                 fmt: str = "auto", progress=None, **backfill_kw):
    """`rl-exporter backfill`: the log's blocks and, with_rules, every recording rule's and
    the alerts' history (ALERTS, ALERTS_FOR_STATE) as Prometheus would have recorded them
    live, built in a scratch directory beside `out` and moved into it whole (publish): an
    interrupted backfill leaves `out` as it was. (backfill Result, Evaluation or None)."""
    tools.find("promtool")
    ruleset = None
    if with_rules:
        tools.find("prometheus")
        ruleset = rulesmod.load(rules)
    out = os.path.abspath(out)
    bf.check_out(out, run, replace)  # before the long part
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    phases = Phases(progress)
    t0 = time.perf_counter()
    with tools.scratch(".rlx-backfill-", dir=parent) as work:
        data = os.path.join(work, "data")
        ev = None
        if with_rules:
            res, ev, prom = examine(paths, run, work, ruleset, {}, eval_interval=eval_interval,
                                    keep=True, phases=phases, fmt=fmt, backfill_kw=backfill_kw)
            c = tools.cpu()
            prom.stop()
            res.timings.update(ev.timings)
            res.timings["alert_queries_cpu"] += tools.cpu() - c  # the server's, at its exit
        else:
            res = bf.backfill(paths, run, data, fmt=fmt, progress=phases, work=work,
                              **backfill_kw)
        with phases("moving the blocks into --out"):
            res.blocks = len(bf.publish(data, out, run, replace))
    res.out_dir = out
    res.timings["total"] = time.perf_counter() - t0
    return res, ev


def run_of(paths: list[str], run: str | None) -> str:
    """--run, else the spool's one run, else the log's file name."""
    return run if run is not None else _run_name(paths[0])


def examine(paths: list[str], run: str, work: str, ruleset, runbook: dict, *,
            eval_interval: float = 60.0, keep: bool = False, phases=None, fmt: str = "auto",
            backfill_kw: dict | None = None):
    """The log backfilled into work/data, the rules evaluated there by a Prometheus left
    running for the caller to stop: (backfill Result, Evaluation, Prometheus). keep: every
    recording rule and the alert history written as blocks beside the log's (backfill,
    doctor --keep), which are then everything a dashboard reads."""
    phases = phases if phases is not None else Phases(False)
    backfill_kw = dict(backfill_kw or {})
    data = os.path.join(work, "data")
    res = bf.backfill(paths, run, data, fmt=fmt, progress=phases, work=work, **backfill_kw)
    t0 = time.perf_counter()
    with phases("starting Prometheus"):
        prom = tools.Prometheus(data, work).start()
    res.timings["prometheus_start"] = time.perf_counter() - t0
    try:
        split = len(res.segments) > 1
        # Every other rule reads each segment under its own run label; these read the log
        # as the live Prometheus saw it (below), so they are not evaluated on the segments.
        main = rulesmod.RuleSet(files=ruleset.files, recording=ruleset.recording,
                                alerts=[a for a in ruleset.alerts
                                        if not (split and a.name in ACROSS_RESTARTS)])
        ev = evmod.evaluate(prom, main, res, runbook, work, eval_interval, keep=keep,
                            phases=phases)
        for f in ev.findings:
            seg = res.segment_of(f.labels.get("run"))
            f.segment = seg.index if seg is not None else 1
        if split:
            t1 = time.perf_counter()
            with phases("restarts: the log as one run"):
                _across_restarts(paths, run, work, ruleset, runbook, res, ev, eval_interval,
                                 fmt, backfill_kw, keep, data)
            ev.timings["across_restarts"] = time.perf_counter() - t1
        return res, ev, prom
    except BaseException:
        prom.stop()
        raise


def _across_restarts(paths, run, work, ruleset, runbook, res, ev, eval_interval, fmt,
                     backfill_kw, keep, data) -> None:
    """The ACROSS_RESTARTS alerts over the whole log backfilled as one run (a second backfill:
    only for a log with restarts in it), each finding placed in the segment it fired in; with
    `keep`, their alert history joins the blocks in `data`."""
    sub = rulesmod.RuleSet(files=ruleset.files, recording=[],
                           alerts=[a for a in ruleset.alerts if a.name in ACROSS_RESTARTS])
    if sub.alerts:
        whole = os.path.join(work, "whole")
        os.makedirs(whole, exist_ok=True)
        kw = dict(backfill_kw, progress=False)
        one = bf.backfill(paths, run, os.path.join(whole, "data"), fmt=fmt, split_segments=False,
                          work=whole, **kw)
        prom = tools.Prometheus(os.path.join(whole, "data"), whole).start()
        try:
            got = evmod.evaluate(prom, sub, one, runbook, whole, eval_interval, keep=keep,
                                 alerts_into=data)  # their history: beside the segments'
        finally:
            prom.stop()
        for f in got.findings:
            f.segment = max([s.index for s in res.segments if s.start <= f.start] or [1])
        ev.findings.extend(got.findings)
        ev.findings.sort(key=lambda f: (f.start, f.order))
        order = [a.name for a in ruleset.alerts]
        for name in ("checks", "no_data", "too_short"):
            both = set(getattr(ev, name)) | set(getattr(got, name))
            setattr(ev, name, [n for n in order if n in both])
        ev.alert_series += got.alert_series
        ev.blocks += got.blocks
        shutil.rmtree(whole, ignore_errors=True)


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
