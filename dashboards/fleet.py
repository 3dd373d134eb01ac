"""Fleet: every run in one sortable table, linking to its overview."""
from __future__ import annotations

from .common import (ALERTS, LINK_OVERVIEW, S, STALL_RED, STALL_YELLOW, mean, q, qi, sel, stall_ratio, stat,
                     steps_per_minute, table, ts)
from .model import Dashboard, Row

BY = "max by (run)"
COLUMNS = [  # (column, expr, gate)
    ("step", f"{BY} ({sel('rl_training_step')})", None),
    ("steps/min", f"{BY} ({steps_per_minute()})", None),
    ("last step age", f"{BY} ({stall_ratio()})", None),
    ("reward", f"{BY} ({mean('rl_reward')})", None),
    ("train MFU", BY + " (" + sel("rl_mfu_ratio", 'phase="train"') + ")", None),
    ("firing alerts", 'count by (run) (ALERTS{alertstate="firing", run=~"$run"})', ALERTS),
]

REFS = "BCDEFG"
TRANSFORMS = [
    {"id": "merge", "options": {}},
    {"id": "organize", "options": {
        "excludeByName": {"Time": True, "Value #A": True, "host": True, "rank": True,
                          "version": True, "__name__": True, "instance": True},
        "indexByName": {"run": 0, "framework": 1, "algorithm": 2, "model": 3, "job": 4,
                        "namespace": 5, **{f"Value #{r}": 6 + i for i, r in enumerate(REFS)}},
        "renameByName": {f"Value #{r}": c for r, (c, _, _) in zip(REFS, COLUMNS)}}},
]
OVERRIDES = [
    {"matcher": {"id": "byName", "options": "last step age"},
     "properties": [{"id": "unit", "value": "none"}, {"id": "decimals", "value": 1},
                    {"id": "custom.cellOptions", "value": {"type": "color-background"}},
                    {"id": "thresholds", "value": {"mode": "absolute", "steps": [
                        {"color": "green", "value": None}, {"color": "yellow", "value": STALL_YELLOW},
                        {"color": "red", "value": STALL_RED}]}}]},
    {"matcher": {"id": "byName", "options": "train MFU"},
     "properties": [{"id": "unit", "value": "percentunit"}, {"id": "decimals", "value": 1}]},
    {"matcher": {"id": "byName", "options": "reward"}, "properties": [{"id": "decimals", "value": 3}]},
    {"matcher": {"id": "byName", "options": "steps/min"}, "properties": [{"id": "decimals", "value": 2}]},
    {"matcher": {"id": "byName", "options": "firing alerts"},
     "properties": [{"id": "custom.cellOptions", "value": {"type": "color-background"}},
                    {"id": "noValue", "value": "0"},
                    {"id": "thresholds", "value": {"mode": "absolute", "steps": [
                        {"color": "green", "value": None}, {"color": "red", "value": 1}]}}]},
]

RUN_INFO = f"max by (run, framework, algorithm, model, job, namespace) (rl_run_info{{{S}}})"

ROWS = [
    Row("Runs", [
        stat("Runs", "Runs reporting to Prometheus now.", "the runs you expect.",
             qi(f"count(rl_run_info{{{S}}})", "runs"), unit="short", min=0, width=6),
        stat("Stalled runs", "Runs silent for 5 step lengths (max(30 min, 5 x the longest step)): "
             "RLRunStalled's condition.",
             "0.",
             qi(f"count(({stall_ratio()}) > {STALL_RED}) or vector(0)",
                "stalled"), unit="short", min=0, width=6, thresholds=[(None, "green"), (1, "red")]),
        stat("Runs with firing alerts", "Runs with at least one firing alert.", "0.",
             qi('count(count by (run) (ALERTS{alertstate="firing", run=~"$run"})) or vector(0)',
                "alerting"), unit="short", min=0, width=6, thresholds=[(None, "green"), (1, "red")]),
        stat("Steps per minute (all runs)", "Training steps per minute summed over the runs.",
             "steady; a drop is a stalled or slowed run.",
             qi(f"sum({steps_per_minute()})", "steps/min"),
             unit="short", min=0, width=6, decimals=2),
        table("All runs",
              "One row per run: identity (framework, algorithm, model), step, steps per minute, "
              "seconds since the step last advanced, mean reward, train MFU and firing alerts. "
              "Sort by any column; click a run to open its overview.",
              "every run advancing (age below a few step durations, 10 minutes is a stall), no "
              "firing alerts.",
              qi(RUN_INFO, "", format="table"),
              *[qi(expr, "", format="table", gate=gate) for _, expr, gate in COLUMNS],
              transformations=TRANSFORMS, overrides=OVERRIDES, sort_by="last step age", height=12,
              links=[{"field": "run", "title": "Open the run overview",
                      "url": LINK_OVERVIEW + "&var-run=${__value.raw}"}]),
    ]),
    Row("Progress", [
        ts("Training step per run", "Latest training step of every run.", "every line rising.",
           q(mean("rl_training_step")), unit="short", min=0, width=12),
        ts("Reward per run", "Mean training reward of every run.", "rising or stable.",
           q(mean("rl_reward")), unit="none", decimals=3, width=12),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-fleet", title="RL fleet",
    description="Every run in a sortable table (framework, step, steps/min, last step age, "
                "reward, MFU, firing alerts), each linking to its run overview.",
    rows=ROWS, tags=["rl-exporter", "rl"])
