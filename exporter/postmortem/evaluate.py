"""Evaluate the shipped rules over backfilled blocks with a real Prometheus.

1. Prometheus serves the blocks (retention unbounded, loopback, no targets).
2. Recording rules, layer by layer (a rule reading another's output after it), are evaluated
   by that Prometheus as range queries at their interval and written as blocks through
   promtool (or by `promtool tsdb create-blocks-from rules`, engine "promtool"); the blocks
   join the data and Prometheus restarts on them.
3. Each alert's expression is a range query over the run at the rule's evaluation
   interval (the group's, else --eval-interval); an output series is pending from its
   first point and fires once it has been present at every evaluation for the alert's
   `for:` (Prometheus's own alert state machine; the PromQL is all Prometheus's).
"""
from __future__ import annotations

import math
import os
import shutil
import time
from dataclasses import dataclass, field

from . import rules as rulesmod
from . import tools

MAX_POINTS = 10_000  # Prometheus refuses range queries over 11,000 points per series
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
    ending: object = None   # how the run ended (postmortem/ending.py RunEnd), set by doctor


def _write_rules(path: str, layer: list) -> None:
    import yaml
    groups: dict = {}
    for r in layer:
        g = groups.setdefault((r.group, r.interval), [])
        g.append(dict({"record": r.record, "expr": r.expr},
                      **({"labels": r.labels} if r.labels else {})))
    doc = {"groups": [dict({"name": f"{name}-{i}", "rules": rs},
                           **({"interval": f"{int(iv)}s"} if iv else {}))
                      for i, ((name, iv), rs) in enumerate(groups.items())]}
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)


def backfill_recording_rules(prom: tools.Prometheus, ruleset, start: float, end: float,
                             interval: float, workdir: str, engine: str = "queries") -> None:
    """Each layer's recording rules evaluated by Prometheus over [start, end], written as
    blocks into its data dir, then Prometheus restarted on them.

    engine "promtool": `promtool tsdb create-blocks-from rules` (one block per rule per 2 h:
    on a long run hundreds of small blocks, minutes); "queries" (default): the same
    evaluation as range queries, one per rule per 10,000 points, and the results written
    as one block per 2 h through promtool's OpenMetrics backfill (benchmarks/bench_doctor.py
    measures both)."""
    promtool = tools.find("promtool")
    for i, layer in enumerate(rulesmod.layers(ruleset.recording)):
        out = os.path.join(workdir, f"recording-{i}")
        if engine == "promtool":
            path = os.path.join(workdir, f"recording-{i}.yaml")
            _write_rules(path, layer)
            tools.run([promtool, "tsdb", "create-blocks-from", "rules", "-q",
                       f"--start={int(start)}", f"--end={int(end) + 1}", f"--url={prom.url}",
                       f"--output-dir={out}", f"--eval-interval={int(interval)}s", path],
                      "promtool tsdb create-blocks-from rules")
        else:
            _record_by_queries(prom, promtool, layer, start, end, interval, out)
        prom.stop()
        for name in os.listdir(out) if os.path.isdir(out) else ():
            if os.path.isdir(os.path.join(out, name, "chunks")) or \
                    os.path.exists(os.path.join(out, name, "meta.json")):
                shutil.move(os.path.join(out, name), os.path.join(prom.data_dir, name))
        prom.start()


RECORD_WINDOW = 86_400.0  # evaluate recording rules a day at a time: memory stays flat


def _record_by_queries(prom, promtool, layer, start, end, interval, out) -> None:
    from .openmetrics import BlockFiles, series_text, value_text
    os.makedirs(out, exist_ok=True)

    def make_block(path):
        tools.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", path, out],
                  "promtool tsdb create-blocks-from openmetrics (recording rules)")
        os.unlink(path)

    files = BlockFiles(os.path.join(out, ".om"), on_close=make_block)
    w = math.floor(start / RECORD_WINDOW) * RECORD_WINDOW  # day windows hold whole 2 h blocks
    while w <= end:
        samples: list[tuple[float, str]] = []
        for r in layer:
            step = r.interval or interval
            # Prometheus aligns a group's evaluations to multiples of its interval
            first = max(math.floor(start / step) * step, math.ceil(w / step) * step)
            last = min(end, w + RECORD_WINDOW - 1e-3)
            if first > last:
                continue
            for key, points in query_range(prom, r.expr, first, last, step).items():
                labels = {k: v for k, v in key if k != "__name__"}
                labels.update(r.labels or {})
                prefix = series_text(r.record, labels) + " "
                samples.extend((t, prefix + value_text(v)) for t, v in points)
        samples.sort(key=lambda s: s[0])
        i = 0
        while i < len(samples):
            t = samples[i][0]
            j = i
            while j < len(samples) and samples[j][0] == t:
                j += 1
            files.write(t, [line for _, line in samples[i:j]])
            i = j
        w += RECORD_WINDOW
    files.close()
    shutil.rmtree(os.path.join(out, ".om"), ignore_errors=True)


def series_names(prom: tools.Prometheus) -> set[str]:
    return set(prom.api("/api/v1/label/__name__/values", {}, post=False))


def query_range(prom, expr: str, start: float, end: float, step: float) -> dict:
    """{label tuple: [(t, v), ...]} over [start, end] on the grid start + k*step."""
    out: dict = {}
    t = start
    span = step * (MAX_POINTS - 1)
    while t <= end:
        stop = min(end, t + span)
        data = prom.api("/api/v1/query_range",
                        {"query": expr, "start": f"{t:.3f}", "end": f"{stop:.3f}",
                         "step": f"{step:g}"})
        for s in data.get("result", []):
            key = tuple(sorted(s["metric"].items()))
            out.setdefault(key, []).extend((float(a), float(b)) for a, b in s["values"])
        t = stop + step
    return out


def firing_intervals(points: list[tuple[float, float]], step: float, for_s: float,
                     keep_firing_s: float = 0.0):
    """[(fired_at, value_then, last_active)] for one output series of an alert expression.
    `keep_firing_for`: a firing alert whose expression is absent for less than that stays
    firing."""
    out = []
    run_start = prev = None
    fired = None
    for t, v in points:
        gap = prev is not None and t - prev > step * 1.5
        if gap and fired is not None and t - prev <= keep_firing_s + step * 0.5:
            gap = False  # kept firing across the gap
        if prev is None or gap:  # absent at an evaluation: back to inactive
            if fired is not None:
                out.append((fired[0], fired[1], prev))
            run_start, fired = t, None
        if fired is None and t - run_start >= for_s - 1e-6:
            fired = (t, v)
        prev = t
    if fired is not None:
        out.append((fired[0], fired[1], prev))
    return out


def evaluate(prom: tools.Prometheus, ruleset, backfilled, runbook: dict, workdir: str,
             eval_interval: float = 60.0, recording_engine: str = "queries") -> Evaluation:
    ev = Evaluation(eval_interval=eval_interval, rule_files=list(ruleset.files))
    start, end = backfilled.start, backfilled.end
    t0, c0 = time.perf_counter(), tools.cpu()
    if ruleset.recording:
        backfill_recording_rules(prom, ruleset, start, end, eval_interval, workdir,
                                 recording_engine)
    ev.timings["recording_rules"] = time.perf_counter() - t0
    ev.timings["recording_rules_cpu"] = tools.cpu() - c0  # incl. the Prometheus it restarted
    t1, c1 = time.perf_counter(), tools.cpu()
    ev.present = series_names(prom)
    record_inputs = {r.record: rulesmod.metric_names(r.expr, ev.present) for r in ruleset.recording}
    # The shipped rules' evidence gate: a run with no step ladder ever ready (too few steps for a
    # recent window and a baseline after warm-up) leaves every step-windowed rule silent.
    stepwise = {r.record for r in ruleset.recording if _STEP_LADDER in r.expr or READY in r.expr}
    gated = READY in {r.record for r in ruleset.recording} and READY not in ev.present
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
        step = a.interval or eval_interval
        section = runbook.get(a.anchor)
        t0 = math.floor(start / step) * step
        for key, points in query_range(prom, a.expr, t0, end, step).items():
            labels = dict(key)
            for fired, value, last in firing_intervals(points, step, a.for_s, a.keep_firing_s):
                ev.findings.append(Finding(
                    alert=a.name, severity=a.severity, labels=labels, start=fired,
                    end=min(end, last + a.keep_firing_s), value=value,
                    step=backfilled.step_at(fired),
                    summary=rulesmod.expand(a.annotations.get("summary", ""), labels, value),
                    next=rulesmod.next_check(section),
                    order=section["order"] if section else 10_000))
    ev.findings.sort(key=lambda f: (f.start, f.order))
    ev.timings["alert_queries"] = time.perf_counter() - t1
    ev.timings["alert_queries_cpu"] = tools.cpu() - c1  # ours; the server's is added at its exit
    return ev
