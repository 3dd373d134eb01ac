"""The cadence matrix: every warning/critical alert against a healthy run and its pathology at
30 s, 2 min and 10 min steps, as promtool unit tests (exporter/alerts/tests/cadence-*.test.yaml).

A run is data (exporter/alerts/sim/): healthy(step, rng) gives the values a healthy GRPO run logs
at a step (the Miles lab ranges; the posttrain metrics reference and the veRL metrics guide where
the lab has none), and PATHOLOGIES[alert] edits them from the onset step on: mostly read
(from_entry) from the one description of each pathology that the demo reads too
(exporter/demo/pathologies.py); a plain row edits the simulated run's series and says why.
sim/run.py turns the steps into scrape samples.

Each cadence file holds:
- one healthy run of HEALTHY_STEPS steps: no alert of any severity fires at any evaluation;
- per alert, the healthy run with the pathology from ONSET on: the alert fires, and the number
  of pathological steps it took (MEASURED, written by `rl-exporter alerts cadence --measure`) is
  asserted exactly and must be within the alert's stated budget.

To add an alert's rows: give its record (exporter/alerts/areas/) a `cadence=from_entry(...)` or a
Pathology (and add any series it reads to sim/healthy.py), then run `rl-exporter alerts cadence
--measure`.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from exporter import rules as shipped
from .rules import ALERTS
from .recordings import alert_metrics
from .render import GENERATED, yaml_text
from .paths import RULES_FROM_TESTS
from .sim.healthy import ENGINE_UP, HEALTHY_STEPS
from .sim.pathology import Pathology
from .sim.run import ALWAYS, CADENCES, ONSET, Run

HERE = Path(__file__).resolve().parent
MEASURED_FILE = HERE / "tests" / "cadence-steps.json"


# Each warning and critical alert's row: the `cadence` of its record (exporter/alerts/areas/).
PATHOLOGIES: dict[str, Pathology] = {a.name: a.cadence for a in ALERTS if a.cadence is not None}


# ------------------------------------------------------------------ promtool files
def _dur(seconds: float) -> str:
    from .render import duration
    return duration(seconds)


def alert_names(severities=("critical", "warning")) -> list[str]:
    return [a.name for a in ALERTS if a.severity in severities]


def _measure_expr(alert: str, run: Run, pat: Pathology, end: str, res: str) -> str:
    fired = f'max by (run) (ALERTS{{alertname="{alert}", alertstate="firing", run="{alert}"}})'
    if pat.anonymous:   # an alert of a target that reports no run: found by its instance
        fired = (f'max by (run) (label_replace(ALERTS{{alertname="{alert}", alertstate="firing", '
                 f'instance="{alert}:9464"}}, "run", "{alert}", "", ""))')
    if pat.timed:
        t0 = run.ends[ONSET - 2]
        return f"ceil((min_over_time(timestamp({fired})[{end}:{res}]) - {t0:g}) / {run.step_s})"
    return (f'min_over_time((max by (run) (rl_training_step{{run="{alert}"}}) and on (run) {fired})'
            f"[{end}:{res}]) - {ONSET - 1}")


def _reads(alert: str) -> set[str]:
    """Series names a pathology run keeps: what the alert reads, and ALWAYS."""
    rule = next(a for a in ALERTS if a.name == alert)
    engine_up = {ENGINE_UP} if "{engine_job_selector}" in rule.expr else set()
    return set(alert_metrics(rule)) | ALWAYS | engine_up


def measured() -> dict:
    return json.loads(MEASURED_FILE.read_text()) if MEASURED_FILE.exists() else {}


def render_cadence(cadence: str, got: dict | None = None) -> str:
    step_s = CADENCES[cadence]
    got = measured() if got is None else got
    h = Run(step_s).build()
    end = _dur(h.n * h.dt)
    res = _dur(h.dt)
    healthy_test = {
        "name": f"cadence {cadence}: a healthy run of {HEALTHY_STEPS} steps fires nothing",
        "interval": res, "input_series": h.input_series("healthy"),
        "promql_expr_test": [{
            "expr": f'max by (alertname) (max_over_time(ALERTS{{alertstate="firing"}}[{end}]))',
            "eval_time": end, "exp_samples": []}]}
    # The pathology runs side by side in one group (run labels keep them apart; every rule
    # aggregates by run): promtool evaluates the whole rule file at each tick of each group, so
    # one group costs a fraction of one group per alert.
    runs = {name: Run(step_s, PATHOLOGIES[name], steps=ONSET + PATHOLOGIES[name].budget[cadence] + 4).build()
            for name in alert_names()}
    last = max(r.n * r.dt for r in runs.values())
    pend = _dur(last)
    series, checks = [], []
    for name, run in runs.items():
        value = got.get(cadence, {}).get(name, -1)
        reads = _reads(name)
        series += run.input_series(name, reads)
        checks.append({"expr": _measure_expr(name, run, PATHOLOGIES[name], pend, res), "eval_time": pend,
                       "exp_samples": [{"labels": f'{{run="{name}"}}', "value": value}]})
    tests = [healthy_test,
             {"name": f"cadence {cadence}: each pathology fires its alert within its budget of steps",
              "interval": res, "input_series": series, "promql_expr_test": checks}]
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": _dur(step_s),
           "tests": tests}
    return yaml_text(doc).replace(GENERATED, "# Generated by `rl-exporter alerts test-file` from exporter/alerts/cadence.py.")


def render_long_healthy(cadence: str, steps: int = 1000, seed: int = 11) -> str:
    """One healthy run of `steps` steps (not in CI: about 5x the matrix's healthy group)."""
    h = Run(CADENCES[cadence], steps=steps, seed=seed, span=steps).build()
    end = _dur(h.n * h.dt)
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": _dur(h.step_s),
           "tests": [{"name": f"long healthy run: {steps} steps at {cadence}", "interval": _dur(h.dt),
                      "input_series": h.input_series("healthy"),
                      "promql_expr_test": [{
                          "expr": f'max by (alertname) (max_over_time(ALERTS{{alertstate="firing"}}[{end}]))',
                          "eval_time": end, "exp_samples": []}]}]}
    return yaml_text(doc)


def _scratch(tmp: Path) -> Path:
    """A tests folder under tmp where the files' `rule_files` path (RULES_FROM_TESTS)
    finds a copy of the shipped rules, as it does from exporter/alerts/tests/ in the repository."""
    rules = tmp / "rules"
    rules.mkdir(parents=True)
    (rules / shipped.RULES_FILE.name).write_text(shipped.RULES_FILE.read_text())
    tests = tmp / "alerts" / "tests"
    tests.mkdir(parents=True)
    return tests


def run_long(steps: int, promtool: str = "promtool") -> int:
    import tempfile
    import time
    bad = 0
    for cadence in CADENCES:
        with tempfile.TemporaryDirectory() as tmp:
            f = _scratch(Path(tmp)) / "long.yaml"
            f.write_text(render_long_healthy(cadence, steps))
            t0 = time.monotonic()
            p = subprocess.run([promtool, "test", "rules", str(f)], capture_output=True, text=True)
            fired = sorted(set(re.findall(r'alertname="(\w+)"', p.stdout + p.stderr)))
            print(f"{cadence}: {steps} healthy steps, alerts fired: {fired or 'none'} "
                  f"({time.monotonic() - t0:.0f} s)")
            bad += p.returncode != 0
    return 1 if bad else 0


def cadence_file(cadence: str) -> Path:
    return HERE / "tests" / f"cadence-{cadence}.test.yaml"


def measure(promtool: str = "promtool") -> dict:
    """Run each cadence file with placeholder expectations and read the steps-to-fire promtool
    reports (and the alerts a healthy run fires, which must be none)."""
    import tempfile
    out: dict = {}
    for cadence in CADENCES:
        with tempfile.TemporaryDirectory() as tmp:
            f = _scratch(Path(tmp)) / f"cadence-{cadence}.test.yaml"
            f.write_text(render_cadence(cadence, {cadence: {n: -1 for n in alert_names()}}))
            p = subprocess.run([promtool, "test", "rules", str(f)], capture_output=True, text=True)
            text = p.stdout + p.stderr
            if "no file match pattern" in text:  # every alert would read as "never fired"
                raise RuntimeError(f"promtool found no rule file for {f}:\n{text[:500]}")
        res = {}
        for m in re.finditer(r'exp: \{run="(\w+)"\} \S+\s+got: (nil|\{run="\w+"\} (\S+))', text):
            res[m.group(1)] = None if m.group(2) == "nil" else int(round(float(m.group(3))))
        m = re.search(r"exp: nil\s+got: (.*?)\n\s*\n", text, re.S)
        res["_healthy_fired"] = sorted(set(re.findall(r'alertname="(\w+)"', m.group(1)))) if m else []
        out[cadence] = res
    return out


def problems() -> list[str]:
    """Measured steps within budget; every warning/critical alert has a pathology."""
    out = []
    got = measured()
    for name in alert_names():
        if name not in PATHOLOGIES:
            out.append(f"{name}: no Pathology in exporter/alerts/cadence.py (the cadence matrix needs one)")
            continue
        for cadence in CADENCES:
            v = got.get(cadence, {}).get(name)
            b = PATHOLOGIES[name].budget[cadence]
            if v is None or v < 1 or v > b:
                out.append(f"{name} at {cadence}: fires after {v} steps, budget {b} "
                           "(run `rl-exporter alerts cadence --measure`)")
    for name in PATHOLOGIES:
        if name not in alert_names():
            out.append(f"{name}: pathology for an unknown or info alert")
    return out


def table() -> str:
    got = measured()
    rows = ["| Alert | Severity | " + " | ".join(f"{c} steps: fires after (budget)" for c in CADENCES) + " |",
            "|---|---|" + "---|" * len(CADENCES)]
    sev = {a.name: a.severity for a in ALERTS}
    for name in alert_names():
        pat = PATHOLOGIES.get(name)
        unit = " step-times" if pat and pat.timed else ""
        cells = [f"{got.get(c, {}).get(name, '?')} ({pat.budget[c] if pat else '?'}){unit}" for c in CADENCES]
        rows.append(f"| {name} | {sev[name]} | " + " | ".join(cells) + " |")
    notes = [f"- {name}: {PATHOLOGIES[name].note}" for name in alert_names()
             if name in PATHOLOGIES and PATHOLOGIES[name].note]
    return "\n".join(rows + ([""] + notes if notes else []))
