"""Shared vocabulary of the dashboard modules: the scope selector, variables, and short
constructors for panels and queries."""
from __future__ import annotations

from exporter.alerts.baseline import BAND_LOWER, BAND_UPPER
from exporter.postmortem.baseline import series_key

from .model import (BARGAUGE, HEATMAP, STAT, STATE_TIMELINE, TABLE, TEXT, TIMESERIES, Panel,
                    Query)

# Every per-run query is scoped by the dashboard's variables. Prometheus adds `job` and
# (in Kubernetes) `namespace` from the target; the exporter adds `run` to every series.
S = 'job=~"$job", namespace=~"$namespace", run=~"$run"'
RATE = "$__rate_interval"
LINK_OVERVIEW = "/d/rl-overview/rl-run-overview?${__url_time_range}&var-datasource=${datasource}"

# Feature gates: what a trainer must log/enable for a panel to have data. The demo run
# (`rl-exporter demo`) feeds everything not gated.
GPU = "the NVML GPU sampler runs (pip install rl-exporter[gpu], a GPU is visible)"
ALERTS = "alert rules from exporter/alerts/rules are loaded and one is firing for the selected runs"
CRITIC = "the algorithm trains a critic (PPO/GAE; GRPO has none)"
PREFERENCE = "the run trains on preference pairs (DPO/KTO/SimPO, reward-model training)"
AGENTIC = "the run is multi-turn/agentic (veRL num_turns, tool calls)"
ASYNC = "the run samples asynchronously (AReaL, veRL fully-async, Miles weight-version lag)"
MOE = "the model is MoE and the framework logs router balance (AReaL moe_balance, TRL aux_loss)"
CONSISTENCY = ("the framework logs train/rollout log-prob agreement (slime/Miles, posttrain, "
               "AReaL, TRL, veRL rollout_corr)")
RANKS = "every rank exports (an Exporter on each rank, one scrape target each: docs/integrations.md)"
TIMER = "the trainer records phases with Exporter.timer() (histograms; logged timings feed the gauges)"
EVAL_LOSS = "the trainer evaluates a held-out loss (HF/TRL eval_loss, posttrain val/loss_avg)"
PASS_AT_K = "the framework logs pass@k (slime/Miles passrate, held-out pass@k)"
TOTAL_LOSS = "the framework logs its total loss (veRL actor/loss, HF/TRL loss, slime train/loss)"
ENTROPY_UPDATE = ("the framework logs the updated policy's entropy beside its rollout entropy "
                  "(veRL actor/entropy_loss, slime/Miles train/entropy_loss)")
REFERENCE_KL = "the framework logs KL to the reference (TRL kl, OpenRLHF kl, posttrain kl_mean)"
ZERO_STD = "the framework logs the tied-group fraction (TRL frac_reward_zero_std, posttrain)"
ABORTED = "the framework logs aborted samples (veRL response/aborted_ratio)"
RUN_THROUGHPUT = "the framework logs whole-run tokens/s or a token counter (AReaL, TRL num_tokens)"
FLOPS = "the framework logs achieved FLOP/s (AReaL, slime perf/*_tflops)"
NEXT_LR = "the framework logs the LR left for the next update (OpenRLHF, slime/Miles, posttrain PPO)"
REWARD_STD = "the framework logs the reward standard deviation (TRL reward_std, veRL std stats)"
REWARD = ("the framework logs its reward before KL shaping (TRL, OpenRLHF, AReaL, posttrain; veRL logs "
          "the raw score and the shaped reward instead)")
SKIP_REASON = "an update was skipped (posttrain optim/skip_reason); healthy runs never fill it"
ERRORS = "the exporter hit an internal error (healthy: never)"
QUEUE_DROPS = "frames were dropped (healthy: never)"
SIDECAR = "metrics come from `rl-exporter serve` following log files (the sidecar)"
BASELINE = ("a baseline of the run's recipe is loaded (docs/baselines.md); with several runs "
            "selected the shaded band is their envelope, select one to read its own")


def sel(metric: str, extra: str = "") -> str:
    """`metric{<scope>, extra}`."""
    return f"{metric}{{{S}{', ' + extra if extra else ''}}}"


# Stall panels: seconds since the step advanced, in units of max(6 min, the run's longest step of
# the last 5h20m). 5 is exactly where RLRunStalled pages (max(30 min, 5 x the longest step)), so
# one threshold fits 15-second and 30-minute steps, and checkpoint pauses stay below it.
STALL_YELLOW, STALL_RED = 3, 5


def stall_ratio(timestamp: str = "rl_training_step_timestamp_seconds") -> str:
    age = f"time() - max by (run) ({sel(timestamp)})"
    step = mean("rl_step_duration_seconds")
    longest = f"clamp_min(max by (run) (max_over_time({step}[5h20m])), 360)"
    return f"({age}) / on (run) ({longest} or on (run) (0 * ({age}) + 360))"


# Steps per minute at any cadence: 60 / the last step's duration where logged, else the step
# gauge's slope over an hour (a 5-minute deriv reads 0 whenever a step takes longer than 5 min).
def steps_per_minute() -> str:
    return (f"60 / max by (run) ({mean('rl_step_duration_seconds')} > 0) "
            f"or on (run) max by (run) (deriv({sel('rl_training_step')}[1h]) * 60)")


def mean(metric: str, extra: str = "") -> str:
    """The primary (mean) series of a gauge: no `stat`, training split."""
    return sel(metric, 'stat="", split=""' + (", " + extra if extra else ""))


def q(expr: str, legend: str = "{{run}}", **kw) -> Query:
    return Query(expr, legend, **kw)


def qi(expr: str, legend: str = "{{run}}", **kw) -> Query:
    """An instant query (stat, bar gauge and table panels)."""
    return Query(expr, legend, instant=True, **kw)


def ts(title, shows, healthy, *queries, band=(), **kw) -> Panel:
    """band: metrics whose baseline band (with_band) the panel also draws."""
    return with_band(Panel(TIMESERIES, title, shows, healthy, list(queries), **kw), *band)


def stat(title, shows, healthy, *queries, **kw) -> Panel:
    kw.setdefault("width", 4)
    kw.setdefault("height", 5)
    return Panel(STAT, title, shows, healthy, list(queries), **kw)


def table(title, shows, healthy, *queries, **kw) -> Panel:
    kw.setdefault("width", 24)
    return Panel(TABLE, title, shows, healthy, list(queries), **kw)


def heatmap(title, shows, healthy, *queries, **kw) -> Panel:
    return Panel(HEATMAP, title, shows, healthy, list(queries), **kw)


def timeline(title, shows, healthy, *queries, **kw) -> Panel:
    return Panel(STATE_TIMELINE, title, shows, healthy, list(queries), **kw)


def bars(title, shows, healthy, *queries, **kw) -> Panel:
    return Panel(BARGAUGE, title, shows, healthy, list(queries), **kw)


def text(title, content, *, width=6, height=8) -> Panel:
    return Panel(TEXT, title, "How to read this row.", "see the text.", [], content=content,
                 width=width, height=height)


def hist_heatmap(title, shows, healthy, bucket_metric: str, extra: str = "", **kw) -> Panel:
    """A heatmap of a Prometheus histogram: bucket increases per interval, by `le`."""
    expr = f"sum by (le) (increase({sel(bucket_metric, extra)}[{RATE}]))"
    kw.setdefault("unit", "s")
    return heatmap(title, shows, healthy, Query(expr, "{{le}}", format="heatmap",
                                                gate=kw.pop("query_gate", None)), **kw)


# The baseline band (exporter/alerts/baseline.py records it per run for the recipe's own runs only;
# nothing without a baseline). Grafana shades between two series named in the panel's
# overrides (fillBelowTo), so each band is one fixed-name pair: the envelope over the
# selected runs.
def band_legends(metric: str) -> tuple[str, str]:
    return f"{metric} baseline lower", f"{metric} baseline upper"


def with_band(panel: Panel, *metrics: str) -> Panel:
    """`panel` with the baseline band of each metric's primary series (mean, training split)
    drawn as a shaded band under the same unit and axis."""
    overrides = list(panel.overrides or [])
    for metric in metrics:
        lower, upper = band_legends(metric)
        match = f'run=~"$run", series="{series_key(metric, {})}"'
        panel.queries += [Query(f"min({BAND_LOWER}{{{match}}})", lower, gate=BASELINE),
                          Query(f"max({BAND_UPPER}{{{match}}})", upper, gate=BASELINE)]
        color = {"id": "color", "value": {"mode": "fixed", "fixedColor": "green"}}
        overrides += [
            {"matcher": {"id": "byName", "options": upper},
             "properties": [{"id": "custom.fillBelowTo", "value": lower},
                            {"id": "custom.fillOpacity", "value": 15},
                            {"id": "custom.lineWidth", "value": 0}, color]},
            {"matcher": {"id": "byName", "options": lower},
             "properties": [{"id": "custom.fillOpacity", "value": 0},
                            {"id": "custom.lineWidth", "value": 0}, color]}]
    panel.overrides = overrides
    return panel


# Named threshold sets.
def steps(*pairs) -> list[tuple[float | None, str]]:
    return list(pairs)
