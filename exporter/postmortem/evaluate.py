"""Evaluate the shipped rules over backfilled blocks with a real Prometheus.

1. Prometheus serves the blocks (retention unbounded, loopback, no targets).
2. Recording rules, layer by layer (a rule reading another's output after it), are evaluated
   by that Prometheus as range queries at their interval, cut into pieces answered in
   parallel (one query per core: a range query runs on one); a rule none of whose input
   series is in the blocks is not evaluated (its result is empty for certain). Each layer's
   results are one OpenMetrics file and one promtool run (blocks as long as the run, so
   promtool reads the file once or twice), and Prometheus restarts on them.
3. Each alert's expression is a range query over the run at the rule's evaluation interval
   (the group's, else --eval-interval); each output series goes through Prometheus's alert
   state machine (pending from its first evaluation, firing once present at every
   evaluation for `for:`, `keep_firing_for` honoured): the findings, and, when the blocks
   are kept (backfill, doctor --keep), the ALERTS and ALERTS_FOR_STATE series Prometheus
   would have written at each evaluation, then the recording rules that read them.

Measured (benchmarks/bench_doctor.py, Prometheus 2.42): the time is Prometheus evaluating
PromQL; per-query overhead is about 1 % of it, and one query per rule group (the rules
`or`-ed together, each tagged by a label) took 10x longer than the rules one by one.
"""
from __future__ import annotations

import math
import os
import shutil
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from . import rules as rulesmod
from . import tools
from .openmetrics import covering, duration_flag, series_text, value_text
from .progress import Phases

MAX_POINTS = 10_000  # Prometheus refuses range queries over 11,000 points per series
PIECE_POINTS = 1_000  # a longer range query is cut into pieces the cores answer in parallel
# Series that give an alert context (a join, a step guard) but are no symptom by themselves:
# an alert reading nothing else has no data in a log.
CONTEXT = frozenset({"rl_run_info", "rl_training_step"})
READY = "run:rl_step_window:baseline_steps"       # exporter/alerts/recordings.py: baseline steps, past warm-up
_STEP_LADDER = "run:rl_training_step:changes_w"   # recent windows chosen by step count


@dataclass
class Finding:
    alert: str
    severity: str
    labels: dict
    start: float          # first evaluation at which it fired
    end: float            # last evaluation at which it was still active
    value: float          # the expression's value when it fired
    step: object
    summary: str
    next: str
    order: int            # runbook order
    segment: int = 1      # the segment of the log it fired in (segments.py)
    confirmed: bool = True  # False: a point finding, seen on too few steps to confirm
    stacks: dict | None = None  # the hang's stack dump, beside a spool (postmortem/stacks.py)
    evidence: list = field(default_factory=list)  # [{"check", "answer"}] (postmortem/evidence.py)


@dataclass
class Evaluation:
    findings: list = field(default_factory=list)
    checks: list = field(default_factory=list)        # alert names evaluated
    no_data: list = field(default_factory=list)       # alerts none of whose series the log has
    # alerts with data whose step-windowed recordings never had enough steps in this log (a
    # short excerpt: no recent window of steps, or no baseline after warm-up)
    too_short: list = field(default_factory=list)
    present: set = field(default_factory=set)         # series names in the blocks
    timings: dict = field(default_factory=dict)
    eval_interval: float = 60.0
    rule_files: list = field(default_factory=list)
    # recording rules not evaluated: none of their input series is in the blocks
    not_evaluated: list = field(default_factory=list)
    recorded: dict = field(default_factory=dict)      # recording rule -> series it wrote
    alert_series: int = 0                             # ALERTS/ALERTS_FOR_STATE series written
    blocks: list = field(default_factory=list)        # block directories the rules wrote
    # rule -> seconds its range queries took, summed over their pieces (where the time goes)
    query_seconds: dict = field(default_factory=dict)
    ending: object = None   # how the run ended (postmortem/ending.py RunEnd), set by doctor


def series_names(prom: tools.Prometheus) -> set[str]:
    return set(prom.api("/api/v1/label/__name__/values", {}, post=False))


def workers() -> int:
    """Range queries in flight at once: one per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _pieces(start: float, end: float, step: float, nworkers: int) -> list[tuple[float, float]]:
    """[start, end] on the grid start + k*step, cut into pieces of at most MAX_POINTS, and
    into 2 per worker when it is longer than PIECE_POINTS (so a heavy rule keeps every core
    busy to the end). Each step of a range query is evaluated on its own: the pieces'
    results are exactly the whole query's."""
    points = int(math.floor((end - start) / step + 1e-9)) + 1
    if points <= 0:
        return []
    n = math.ceil(points / MAX_POINTS)
    if nworkers > 1 and points > PIECE_POINTS:
        n = max(n, min(2 * nworkers, math.ceil(points / PIECE_POINTS)))
    per = math.ceil(points / n)
    return [(start + i * step, start + min(points - 1, i + per - 1) * step)
            for i in range(0, points, per)]


def query_many(prom, jobs: list[tuple], nworkers: int | None = None, bar=None,
               seconds: dict | None = None) -> dict:
    """jobs: (key, expr, start, end, step). {key: {label tuple: [(t, v), ...]}}, each series'
    points in time order, the pieces answered `nworkers` at a time. `seconds`: each key's
    query time (its pieces' wall time, summed) is added there."""
    nworkers = nworkers or workers()
    tasks = []
    for key, expr, start, end, step in jobs:
        for i, (a, b) in enumerate(_pieces(start, end, step, nworkers)):
            tasks.append((key, i, expr, a, b, step))
    got: dict = {}

    def one(task):
        key, i, expr, a, b, step = task
        t = time.perf_counter()
        data = prom.api("/api/v1/query_range", {"query": expr, "start": f"{a:.3f}",
                                                "end": f"{b:.3f}", "step": f"{step:g}"})
        return key, i, time.perf_counter() - t, [(tuple(sorted(r["metric"].items())), r["values"])
                                                 for r in data.get("result", [])]

    pool = ThreadPoolExecutor(max_workers=nworkers, thread_name_prefix="promql")
    try:
        futures = [pool.submit(one, t) for t in tasks]
        left = set(futures)
        while left:
            done, left = wait(left, timeout=0.2, return_when=FIRST_EXCEPTION)
            for f in done:
                key, i, took, rows = f.result()  # raises the first failure here
                got.setdefault(key, {})[i] = rows
                if seconds is not None:
                    seconds[key] = seconds.get(key, 0.0) + took
                if bar is not None:
                    bar.advance()
    finally:
        for f in futures if "futures" in locals() else ():
            f.cancel()
        pool.shutdown(wait=True)
    out: dict = {}
    for key, *_ in jobs:
        series: dict = {}
        for i in sorted(got.get(key, {})):
            for labels, values in got[key][i]:
                series.setdefault(labels, []).extend((float(a), float(b)) for a, b in values)
        out[key] = series
    return out


def query_range(prom, expr: str, start: float, end: float, step: float) -> dict:
    """{label tuple: [(t, v), ...]} over [start, end] on the grid start + k*step."""
    return query_many(prom, [(0, expr, start, end, step)], nworkers=1)[0]


def alert_timeline(points: list[tuple[float, float]], step: float, for_s: float,
                   keep_firing_s: float = 0.0, end: float | None = None) -> list[tuple]:
    """Prometheus's alerting-rule states for one output series of its expression, at each
    evaluation (every `step`) while the alert is active: [(t, firing, active_at, value)].

    As rules/alerting.go: pending from the evaluation that first returns the series; firing
    once it has been active for `for:`; at an evaluation that does not return it, a pending
    alert is dropped and a firing one resolves, unless `keep_firing_for` (counted from the
    first such evaluation) still holds it firing, with the last value seen."""
    out: list = []
    tol = step * 0.5
    state = None  # None (inactive), "pending", "firing"
    active_at = keep_since = value = None
    t = None
    i, n = 0, len(points)

    def absent(t):
        nonlocal state, keep_since
        if state == "pending":
            state = None
        elif state == "firing":
            if keep_firing_s > 0:
                if keep_since is None:
                    keep_since = t
                if t - keep_since >= keep_firing_s - 1e-6:
                    state = None
            else:
                state = None

    while i < n:
        pt, pv = points[i]
        if t is None or (state is None and pt > t + tol):
            t = pt  # inactive: the next evaluation that matters returns the series
        if abs(pt - t) <= tol:
            i += 1
            value, keep_since = pv, None
            if state is None:
                state, active_at = "pending", t
        else:
            absent(t)
        if state == "pending" and t - active_at >= for_s - 1e-6:
            state = "firing"
        if state is not None:
            out.append((t, state == "firing", active_at, value))
        t += step
    while state == "firing" and (end is None or t <= end + 1e-6):
        absent(t)  # after its last point: held by keep_firing_for, then resolved
        if state is not None:
            out.append((t, True, active_at, value))
        t += step
    return out


def _stretches(timeline, step: float) -> list[tuple]:
    """[(fired_at, value_then, last_firing)]: the stretches of a timeline at which it fired."""
    out = []
    for t, firing, _, value in timeline:
        if not firing:
            continue
        if out and t - out[-1][2] <= step * 1.5:
            out[-1][2] = t
        else:
            out.append([t, value, t])
    return [tuple(x) for x in out]


def firing_intervals(points: list[tuple[float, float]], step: float, for_s: float,
                     keep_firing_s: float = 0.0, end: float | None = None):
    """[(fired_at, value_then, last_firing)] for one output series of an alert expression."""
    return _stretches(alert_timeline(points, step, for_s, keep_firing_s, end), step)


def _rule_labels(labels: dict, extra: dict, value: float | None = None) -> dict:
    """An output series' labels for a rule's samples (Prometheus's): no __name__, the rule's
    own labels (templates expanded) over them, an empty value removing the label."""
    out = {k: v for k, v in labels.items() if k != "__name__"}
    for k, v in (extra or {}).items():
        v = rulesmod.expand(str(v), labels, value) if value is not None else str(v)
        if v:
            out[k] = v
        else:
            out.pop(k, None)
    return out


class _Writer:
    """Rule results -> one OpenMetrics file -> promtool -> blocks, then Prometheus restarted on
    them (blocks as long as the run: promtool reads the file once per block)."""

    def __init__(self, prom, workdir: str, start: float, end: float, phases):
        self.prom, self.workdir, self.phases = prom, workdir, phases
        self.block_ms = covering(end - start + 3600)
        self.promtool = tools.find("promtool")
        self.n = 0
        self.installed: list[str] = []
        self.server_cpu = 0.0

    def open(self, name: str):
        self.n += 1
        self.path = os.path.join(self.workdir, f"{self.n:02d}-{name}.om")
        self.fh = open(self.path, "w", encoding="utf-8")
        self.samples = 0
        return self

    def series(self, name: str, labels: dict, points) -> None:
        prefix = series_text(name, labels) + " "
        self.fh.write("".join(f"{prefix}{value_text(v)} {t:.3f}\n" for t, v in points))
        self.samples += len(points)

    def install(self, restart: bool = True, into: str | None = None) -> int:
        """Blocks of what was written, into Prometheus's data (restarting it on them), or
        `into` another directory; the samples written."""
        self.fh.write("# EOF\n")
        self.fh.close()
        if self.samples:
            out = self.path[:-3] + ".blocks"
            tools.run([self.promtool, "tsdb", "create-blocks-from", "openmetrics", "-q",
                       duration_flag(self.block_ms), self.path, out],
                      "promtool tsdb create-blocks-from openmetrics (rules)")
            if into is None:
                c = tools.cpu()
                self.prom.stop()
                self.server_cpu += tools.cpu() - c  # what it evaluated, counted at its exit
            for name in os.listdir(out) if os.path.isdir(out) else ():
                if os.path.exists(os.path.join(out, name, "meta.json")):
                    dest = os.path.join(into or self.prom.data_dir, name)
                    shutil.move(os.path.join(out, name), dest)
                    self.installed.append(dest)
            shutil.rmtree(out, ignore_errors=True)
            if restart and into is None:
                self.prom.start()
        os.unlink(self.path)
        return self.samples


def _grid_start(start: float, step: float) -> float:
    return math.floor(start / step) * step  # Prometheus aligns evaluations to the interval


def _record(prom, writer, rules, available: set, ev, start, end, interval, bar,
            restart: bool = True) -> None:
    """Recording rules layer by layer: evaluated, written, read by the next layer."""
    for layer in rulesmod.layers(rules):
        todo = []
        for r in layer:
            if rulesmod.may_have_data(r.expr, available):
                todo.append(r)
            else:
                ev.not_evaluated.append(r.record)
        if not todo:
            continue
        jobs = [(r.record, r.expr, _grid_start(start, r.interval or interval), end,
                 r.interval or interval) for r in todo]
        got = query_many(prom, jobs, bar=bar, seconds=ev.query_seconds)
        writer.open("recording")
        for r in todo:
            series = got[r.record]
            for key, points in series.items():
                writer.series(r.record, _rule_labels(dict(key), r.labels), points)
            if series:
                ev.recorded[r.record] = len(series)
                available.add(r.record)
        writer.install(restart)


def evaluate(prom: tools.Prometheus, ruleset, backfilled, runbook: dict, workdir: str,
             eval_interval: float = 60.0, *, keep: bool = False, phases=None,
             alerts_into: str | None = None) -> Evaluation:
    """The rules over the backfilled run. keep=False (doctor): the recording rules the alerts
    read, the findings. keep=True (backfill, doctor --keep): every recording rule, and the
    alerts' ALERTS / ALERTS_FOR_STATE series and the recordings that read them, as blocks
    in Prometheus's data directory (the alert history into `alerts_into` instead, when given:
    a ruleset of alerts only, whose history belongs to another TSDB)."""
    ev = Evaluation(eval_interval=eval_interval, rule_files=list(ruleset.files))
    phases = phases if phases is not None else Phases(False)
    start, end = backfilled.start, backfilled.end
    post = rulesmod.after_alerts(ruleset.recording)
    wanted = ({r.record for r in ruleset.recording} if keep
              else rulesmod.read_by_alerts(ruleset) | {READY})
    before = [r for r in ruleset.recording if r.record in wanted and r.record not in post]
    writer = _Writer(prom, workdir, start, end, phases)
    t0, c0 = time.perf_counter(), tools.cpu()
    ev.present = available = series_names(prom)
    if before:
        with phases("recording rules (range queries)", None, "queries") as bar:
            _record(prom, writer, before, available, ev, start, end, eval_interval, bar)
        ev.present = series_names(prom)
    ev.timings["recording_rules"] = time.perf_counter() - t0
    ev.timings["recording_rules_cpu"] = tools.cpu() - c0  # incl. the Prometheus it restarted
    t1, c1 = time.perf_counter(), tools.cpu()
    record_inputs = {r.record: rulesmod.metric_names(r.expr, ev.present)
                     for r in ruleset.recording}
    # The shipped rules' evidence gate: a run with no step ladder ever ready (too few steps for a
    # recent window and a baseline after warm-up) leaves every step-windowed rule silent.
    stepwise = {r.record for r in ruleset.recording if _STEP_LADDER in r.expr or READY in r.expr}
    gated = READY in {r.record for r in ruleset.recording} and READY not in ev.present
    jobs = []
    for a in ruleset.alerts:
        ev.checks.append(a.name)
        reads = rulesmod.metric_names(a.expr, ev.present | set(record_inputs))
        raw = set()
        for n in reads:
            raw |= record_inputs.get(n, {n})
        raw = {n for n in raw if n in ev.present and n not in CONTEXT}
        if not raw:
            ev.no_data.append(a.name)
            continue
        if gated and reads & stepwise:
            ev.too_short.append(a.name)
        if not rulesmod.may_have_data(a.expr, ev.present):
            continue  # checked, and empty for certain: no query
        step = a.interval or eval_interval
        jobs.append((a.name, a.expr, _grid_start(start, step), end, step))
    with phases("alerts (range queries)", None, "queries") as bar:
        got = query_many(prom, jobs, bar=bar, seconds=ev.query_seconds)
    if keep:
        writer.open("alerts")
    for a in ruleset.alerts:
        if a.name not in got:
            continue
        step = a.interval or eval_interval
        section = runbook.get(a.anchor)
        written: set = set()
        for key, points in got[a.name].items():
            labels = dict(key)
            timeline = alert_timeline(points, step, a.for_s, a.keep_firing_s, end)
            for fired, value, last in _stretches(timeline, step):
                ev.findings.append(Finding(
                    alert=a.name, severity=a.severity, labels=labels, start=fired,
                    end=min(end, last), value=value, step=backfilled.step_at(fired),
                    summary=rulesmod.expand(a.annotations.get("summary", ""), labels, value),
                    next=rulesmod.next_check(section),
                    order=section["order"] if section else 10_000))
            if keep and timeline:
                _alert_series(writer, a, labels, timeline, written)
                ev.alert_series += 2
    ev.findings.sort(key=lambda f: (f.start, f.order))
    ev.timings["alert_queries"] = time.perf_counter() - t1
    ev.timings["alert_queries_cpu"] = tools.cpu() - c1  # ours; the server's is added at its exit
    if keep:
        t2 = time.perf_counter()
        with phases("alert history (ALERTS) and the rules that read it", None,
                    "queries") as bar:
            before = writer.server_cpu
            writer.install(into=alerts_into)
            ev.timings["alert_queries_cpu"] += writer.server_cpu - before
            rest = [r for r in ruleset.recording if r.record in post]
            if rest and alerts_into is None:
                _record(prom, writer, rest, series_names(prom), ev, start, end, eval_interval,
                        bar)
        ev.timings["alert_history"] = time.perf_counter() - t2
    ev.blocks = writer.installed
    return ev


def _alert_series(writer, alert, labels: dict, timeline, written: set) -> None:
    """ALERTS{alertstate} = 1 and ALERTS_FOR_STATE = the time it became active, at each
    evaluation while active (rules/alerting.go), for one output series."""
    first_value = timeline[0][3]
    lab = _rule_labels(labels, alert.labels, first_value)
    lab["alertname"] = alert.name
    ident = series_text("ALERTS_FOR_STATE", lab)
    if ident in written:  # two output series with one label set: Prometheus keeps neither
        return
    written.add(ident)
    for state in ("pending", "firing"):
        pts = [(t, 1.0) for t, firing, _, _ in timeline if firing == (state == "firing")]
        if pts:
            writer.series("ALERTS", dict(lab, alertstate=state), pts)
    writer.series("ALERTS_FOR_STATE", lab, [(t, float(int(at))) for t, _, at, _ in timeline])
