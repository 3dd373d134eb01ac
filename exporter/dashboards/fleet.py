"""Fleet: the dashboard to open first. Runs by state, firing alerts by run and severity,
MFU and throughput per run, GPU-hours burned by failing runs, the top runs per diagnosis
signal; every run links to its overview and diagnosis dashboards.

It reads the per-run series the fleet recording rules pre-aggregate (exporter/alerts/recordings.py,
`run:*`), so a fleet of hundreds of ranks costs it a few series per run. Recorded series
carry only `run`, so the `job` and `namespace` variables do not narrow them.
"""
from __future__ import annotations
from .common import (ALERTS, CONSISTENCY, GPU, S, STALL_RED, STALL_YELLOW, bars, q, qi, stall_ratio, stat,
                     table, timeline, ts)
from .model import Dashboard, Row
from exporter.alerts.recordings import FLEET_STATES  # code -> state of run:rl_run_state:code
from exporter.core.goodput import CLASS_OF, UNCLASSIFIED_ROLLOUT, WASTE

_GP_HOURS = "run_bucket:rl_goodput_gpu_hours:increase_1d"
WASTE_BUCKETS = "|".join(b for b, c in CLASS_OF.items() if c == WASTE)
_UNCLASSIFIED = f'({_GP_HOURS}{{bucket="{UNCLASSIFIED_ROLLOUT}"}} > 0)'

R = 'run=~"$run"'
TIME = "${__url_time_range}&var-datasource=${datasource}"
OVERVIEW = "/d/rl-overview/rl-run-overview?" + TIME + "&var-run="
DIAGNOSIS = "/d/rl-diagnosis/rl-diagnosis?" + TIME + "&var-run="
BASELINE = "the run has more than the short window of history (baselines are the hour before it)"
STATES = (("Running", "running", "green"), ("Restarting", "restarting", "yellow"),
          ("Stalled", "stalled", "red"), ("Failed", "failed", "red"), ("Finished", "finished", "blue"))


def run_links(field: str = "run", value: str = "${__value.raw}") -> list[dict]:
    """One override putting both run links on `field`."""
    return [{"matcher": {"id": "byName", "options": field}, "properties": [{"id": "links", "value": [
        {"title": "Open the run overview", "url": OVERVIEW + value},
        {"title": "Open the run diagnosis", "url": DIAGNOSIS + value}]}]}]


def series_links() -> list[dict]:
    """Both run links on every series of a bar gauge or time series (the run is a label)."""
    return [{"matcher": {"id": "byFrameRefID", "options": "A"}, "properties": [{"id": "links", "value": [
        {"title": "Open the overview of ${__field.labels.run}", "url": OVERVIEW + "${__field.labels.run}"},
        {"title": "Open the diagnosis of ${__field.labels.run}",
         "url": DIAGNOSIS + "${__field.labels.run}"}]}]}]


def state_stat(title: str, state: str, color: str):
    bad = [(None, "green"), (1, color)] if color != "green" else [(None, "green")]
    code = next(c for c, s in FLEET_STATES.items() if s == state)
    return stat(title, f"Runs whose state is {state} now (run:rl_run_state:code == {code}).",
                {"running": "most runs (a run in a declared pause counts here: no fault).",
                 "restarting": "0; a run restarting again and again is crash-looping.",
                 "stalled": "0.", "failed": "0 (a crash the exporter reported counts here).",
                 "finished": "runs whose exporter reported the end of training, or that reached "
                             "their total_training_steps."}[state],
                qi(f"count(run:rl_run_state:code{{{R}}} == {code}) or vector(0)", state),
                unit="short", min=0, width=3, thresholds=bad)


# -------------------------------------------------------------------- the runs table
COLUMNS = [  # (column, expr, gate, unit, decimals)
    ("step", f"run:rl_training_step:max{{{R}}}", None, "short", 0),
    ("steps/min", f"run:rl_training_step:deriv10m{{{R}}} * 60", None, "short", 2),
    ("silence (steps)", f"max by (run) ({stall_ratio()})", None, "none", 1),
    ("train MFU", f"run:rl_mfu_ratio:max{{{R}}}", None, "percentunit", 1),
    ("tokens/s/GPU", f"run:rl_gpu_throughput_tokens_per_second:max{{{R}}}", None, "short", 0),
    ("GPUs", f"run:hw_gpus:count{{{R}}}", GPU, "short", 0),
    ("ranks up", f"run:rl_fleet_targets_up:count{{{R}}}", None, "short", 0),
    ("critical", f'sum by (run) (run_severity:alerts_firing:count{{severity="critical", {R}}})', ALERTS, "short", 0),
    ("warning", f'sum by (run) (run_severity:alerts_firing:count{{severity="warning", {R}}})', ALERTS, "short", 0),
]
REFS = "CDEFGHIJK"
STATE_COLORS = {s: c for _, s, c in STATES}
STATE_MAPPINGS = [{"type": "value", "options": {
    str(code): {"text": state, "color": STATE_COLORS[state], "index": i}
    for i, (code, state) in enumerate(sorted(FLEET_STATES.items()))}}]
TRANSFORMS = [
    {"id": "merge", "options": {}},
    {"id": "organize", "options": {
        "excludeByName": {"Time": True, "Value #A": True, "host": True, "rank": True,
                          "version": True, "__name__": True, "instance": True, "job": True,
                          "namespace": True},
        "indexByName": {"run": 0, "Value #B": 1, "framework": 2, "algorithm": 3, "model": 4,
                        **{f"Value #{r}": 5 + i for i, r in enumerate(REFS)}},
        "renameByName": {"Value #B": "state", **{f"Value #{r}": c for r, (c, *_) in zip(REFS, COLUMNS)}}}},
]
OVERRIDES = run_links() + [
    {"matcher": {"id": "byName", "options": c}, "properties": [
        {"id": "unit", "value": unit}, {"id": "decimals", "value": dec}]}
    for c, _, _, unit, dec in COLUMNS] + [
    {"matcher": {"id": "byName", "options": "state"}, "properties": [
        {"id": "custom.cellOptions", "value": {"type": "color-background"}},
        {"id": "mappings", "value": STATE_MAPPINGS}]},
    {"matcher": {"id": "byName", "options": "silence (steps)"}, "properties": [
        {"id": "custom.cellOptions", "value": {"type": "color-background"}},
        {"id": "thresholds", "value": {"mode": "absolute", "steps": [
            {"color": "green", "value": None}, {"color": "yellow", "value": STALL_YELLOW},
            {"color": "red", "value": STALL_RED}]}}]},
    *[{"matcher": {"id": "byName", "options": c}, "properties": [
        {"id": "custom.cellOptions", "value": {"type": "color-background"}}, {"id": "noValue", "value": "0"},
        {"id": "thresholds", "value": {"mode": "absolute", "steps": [
            {"color": "green", "value": None}, {"color": color, "value": 1}]}}]}
      for c, color in (("critical", "red"), ("warning", "orange"))],
]
# One number per run and time for the state timeline (run:rl_run_state:code).
STATE_CODE = f"max by (run) (run:rl_run_state:code{{{R}}})"
RUN_INFO = f"max by (run, framework, algorithm, model) (rl_run_info{{{S}}})"

# -------------------------------------------------------------------- top-N per diagnosis signal
TOP = 5
SIGNALS = [  # (title, what, expr, unit, gate)
    ("Reward drop vs baseline", "Fall of the recent mean task reward (5-20 steps) below its "
     "baseline (the 4x longer window before), as a fraction of it (RLRewardCollapse reads the "
     "same recordings).",
     f"(run:rl_task_reward:avg_baseline{{{R}}} - run:rl_task_reward:avg_recent{{{R}}})"
     f" / abs(run:rl_task_reward:avg_baseline{{{R}}})", "percentunit", BASELINE),
    ("Entropy collapse", "1 - recent mean entropy / its baseline (RLEntropyCollapse).",
     f"1 - run:rl_entropy:avg_recent{{{R}}} / run:rl_entropy:avg_baseline{{{R}}}",
     "percentunit", BASELINE),
    ("Gradient norm vs baseline", "Recent median gradient norm over its baseline median "
     "(RLGradNormExplosion).",
     f"run:rl_grad_norm:median_recent{{{R}}} / run:rl_grad_norm:median_baseline{{{R}}}",
     "none", BASELINE),
    ("Policy KL", "10-minute mean PPO KL (RLPolicyKLSpike).",
     f'max by (run) (avg_over_time(rl_policy_kl{{{S}, stat="", split=""}}[10m]))', "none", None),
    ("Clip fraction", "10-minute mean clip fraction (RLClipFractionHigh).",
     f'max by (run) (avg_over_time(rl_policy_clip_ratio{{{S}, stat="", split="", bound=""}}[10m]))',
     "percentunit", None),
    ("Responses truncated", "10-minute mean share of responses cut at the length limit "
     "(RLResponseTruncationHigh).",
     f'max by (run) (avg_over_time(rl_response_truncated_ratio{{{S}, stat="", split="", subset=""}}[10m]))',
     "percentunit", None),
    ("Throughput drop vs baseline", "1 - recent tokens/s over its baseline, the worst phase "
     "(RLThroughputDrop).",
     f"max by (run) (1 - run_phase:rl_throughput:avg_recent{{{R}}}"
     f" / run_phase:rl_throughput:avg_baseline{{{R}}})", "percentunit", BASELINE),
    ("Train/inference mismatch vs baseline", "Recent train/inference KL over its baseline "
     "(RLTrainInferenceMismatchRising).",
     f"run:rl_train_inference_kl:avg_recent{{{R}}} / run:rl_train_inference_kl:avg_baseline{{{R}}}",
     "none", CONSISTENCY),
    ("Silence in step lengths", "Time since the step advanced over max(6 min, the run's longest "
     "recent step); RLRunStalled fires at 5.",
     f"max by (run) ({stall_ratio()})", "none", None),
]


def top_panel(title, what, expr, unit, gate):
    return bars(f"Top {TOP}: {title}", f"The {TOP} runs highest on this signal. {what} "
                "Click a bar for the run's overview or diagnosis.",
                "small values; a run far above the others is the one to open.",
                qi(f"topk({TOP}, {expr})", "{{run}}", gate=gate), unit=unit, width=8, height=7,
                overrides=series_links())


ROWS = [
    Row("Runs by state", [
        stat("Runs", "Runs known in the last hour (every target that exported rl_run_info).",
             "the runs you expect.", qi(f"count(run:rl_fleet_targets:count{{{R}}}) or vector(0)", "runs"),
             unit="short", min=0, width=4),
        *[state_stat(title, state, color) for title, state, color in STATES],
        stat("Critical alerts firing", "Firing critical alerts over all runs.", "0.",
             qi(f'sum(run_severity:alerts_firing:count{{severity="critical", {R}}}) or vector(0)',
                "critical", gate=ALERTS), unit="short", min=0, width=5,
             thresholds=[(None, "green"), (1, "red")]),
    ]),
    Row("Cost of failing runs", [
        stat("GPU-hours burned by failing runs", "GPU-hours (over the dashboard's time range) of the "
             "runs while they were failed or stalled: run:hw_gpus_failing:count summed per minute.",
             "close to 0; every GPU-hour here bought nothing.",
             qi(f"sum(sum_over_time(run:hw_gpus_failing:count{{{R}}}[$__range:1m])) / 60 or vector(0)",
                "GPU-hours", gate=GPU), unit="short", min=0, decimals=1, width=6,
             thresholds=[(None, "green"), (8, "orange"), (64, "red")]),
        stat("GPUs in failing runs now", "GPUs held by runs that are failed or stalled now.", "0.",
             qi(f"sum(run:hw_gpus_failing:count{{{R}}}) or vector(0)", "GPUs", gate=GPU),
             unit="short", min=0, width=6, thresholds=[(None, "green"), (1, "red")]),
        ts("GPUs held by failing runs", "GPUs of each failed or stalled run over time (stacked): the "
           "area is the GPU-hours burned.", "empty.",
           q(f"run:hw_gpus_failing:count{{{R}}} > 0", gate=GPU), unit="short", min=0, width=12,
           stack=True, overrides=series_links()),
    ]),
    Row("All runs", [
        table("Runs",
              "One row per run: state, identity (framework, algorithm, model), step, steps per "
              "minute, seconds since the step advanced, train MFU, tokens/s per GPU, GPUs, ranks "
              "up, firing critical and warning alerts. Sort by any column; click a run for its "
              "overview or diagnosis.",
              "state running (or finished), age below a few step durations, no firing alerts.",
              qi(RUN_INFO, "", format="table"),
              qi(f"max by (run) (run:rl_run_state:code{{{R}}})", "", format="table"),
              *[qi(expr, "", format="table", gate=gate) for _, expr, gate, _, _ in COLUMNS],
              transformations=TRANSFORMS, overrides=OVERRIDES, sort_by="silence (steps)", height=12),
        table("Firing alerts by run and severity",
              "Firing alerts per run and severity (run_severity:alerts_firing:count). Click a run "
              "for its overview or diagnosis.", "empty.",
              qi(f"sum by (run, severity) (run_severity:alerts_firing:count{{{R}}})", "",
                 format="table", gate=ALERTS),
              transformations=[{"id": "organize", "options": {
                  "excludeByName": {"Time": True}, "renameByName": {"Value": "firing"}}}],
              overrides=run_links(), sort_by="firing", width=12, height=8),
        bars("Firing alerts per run", "Firing alerts per run, by severity.", "empty.",
             qi(f"sum by (run, severity) (run_severity:alerts_firing:count{{{R}}})",
                "{{run}} {{severity}}", gate=ALERTS), unit="short", min=0, width=12, height=8,
             overrides=series_links()),
    ]),
    Row("Efficiency per run", [
        bars("Train MFU per run", "Model-FLOPs utilisation of training, per run (max over roles).",
             "30-40 % good, > 40 % excellent (the veRL metrics guide, section 7.4).",
             qi(f"sort_desc(run:rl_mfu_ratio:max{{{R}}})"), unit="percentunit", min=0, max=1,
             width=12, height=10, thresholds=[(None, "red"), (0.2, "orange"), (0.3, "green")],
             overrides=series_links()),
        bars("Throughput per run (tokens/s per GPU)", "Tokens per second per GPU, per run.",
             "steady per run; compare runs of the same model and hardware only.",
             qi(f"sort_desc(run:rl_gpu_throughput_tokens_per_second:max{{{R}}})"), unit="short",
             min=0, width=12, height=10, overrides=series_links()),
    ]),
    Row("Where the GPU time went", [
        stat("Fleet GPU time not wasted (last day)",
             "1 - the waste share (an async trainer idle, stalls, redone steps) of the selected "
             "runs' GPU-hours in the last day, over the runs whose time is fully classified (a run "
             "weighs its GPUs; a run with rollout_unclassified hours did not say whether it is "
             "synchronous and is left out). Required overhead (pi_old and reference passes, "
             "weight sync, offload) is not waste. The rule :rl_goodput:ratio_1h records the "
             "productive share of the same runs over the last hour.",
             "close to 1; the table beside says which run and bucket took the rest.",
             qi(f"1 - (sum({_GP_HOURS}{{bucket=~\"{WASTE_BUCKETS}\", {R}}} unless on (run) {_UNCLASSIFIED})"
                f" or vector(0)) / sum({_GP_HOURS}{{{R}}} unless on (run) {_UNCLASSIFIED})",
                "not wasted"), unit="percentunit", min=0, max=1, decimals=1,
             thresholds=[(None, "red"), (0.5, "orange"), (0.8, "green")], width=4, height=10),
        table("GPU-hours by bucket per run",
              "GPU-hours of each run over the last day, per goodput bucket "
              "(run_bucket:rl_goodput_gpu_hours:increase_1d: wall seconds per bucket x the run's "
              "GPUs). step is productive; rollout_wait, stalled and restart are waste; the others "
              "are required overhead, and rollout_unclassified a run's rollout calls of unknown "
              "mode (docs/goodput.md). Click a run for its overview.",
              "step the largest column of every run; a run whose restart or stalled column rivals "
              "its step column is burning its GPUs.",
              qi(f"run_bucket:rl_goodput_gpu_hours:increase_1d{{{R}}}", "", format="table"),
              transformations=[{"id": "groupingToMatrix", "options": {
                  "columnField": "bucket", "rowField": "run", "valueField": "Value"}}],
              overrides=run_links("run\\bucket"), sort_by="step", width=20, height=10),
    ]),
    Row("Top runs per diagnosis signal", [top_panel(*s) for s in SIGNALS]),
    Row("Progress", [
        ts("Training step per run", "Latest training step of every run.", "every line rising.",
           q(f"run:rl_training_step:max{{{R}}}"), unit="short", min=0, width=12,
           overrides=series_links()),
        timeline("State of each run over time", "Each run's state (run:rl_run_state:code) along "
                 "the time range.", "running (green) or finished (blue) bands.",
                 q(STATE_CODE), width=12, mappings=STATE_MAPPINGS),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-fleet", title="RL fleet",
    description="Open first: runs by state (running, restarting, stalled, failed, finished), "
                "firing alerts by run and severity, MFU and throughput per run, GPU-hours burned "
                "by failing runs, the top runs per diagnosis signal; every run links to its "
                "overview and diagnosis. Reads the fleet recording rules (run:*).",
    rows=ROWS, tags=["rl-exporter", "rl"])
