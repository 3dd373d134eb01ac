"""Recording rules: the step-window ladder, each windowed metric's recent level and its
baseline, and one series per run for the fleet dashboard. Also the name queries over them
(which metrics an expression reads, through the recordings it uses).
"""
from __future__ import annotations

from exporter.promql import metric_names as names

from .config import TIERS
from .exprs import (FINISHED, PAUSED_NOW, PRIMARY, READY, RUN_FINISHED, RUN_PAUSED, RUN_STEP, SEAM, SEGMENT_START, STALE_SEL, STEP, STEP_AGE, alternatives, ladder,
                    over, run_state, step_changes)
from .model import Recording

_ROLLOUT_ID = 'max by (run) (rl_step_counter{{counter="rollout", stat="", split=""}})'
MILES_WEIGHT_LAG = (
    f"floor(\n  {_ROLLOUT_ID}\n  / on (run) (max by (run) "
    '(rl_config_value{{parameter="update_weights_interval"}} > 0)'
    f" or on (run) 0 * {_ROLLOUT_ID} + 1)\n) + 1\n"
    '- on (run) min by (run) (rl_sample_weight_version{{stat="min", split=""}})')
# assistant turns from veRL's message count (prompt + assistant + tool messages)
MESSAGES_TO_TURNS = "(($x - 1) / 2)"
# the KL from the signed, coefficient-scaled in-reward term: -term / kl_reward_coef
KL_FROM_TERM = ('(-1 * $x\n  / on (run) max by (run) (rl_config_value{{parameter="kl_reward_coef"}} > 0))')


def _pair(name: str, alts, by: str = "run", fn: str = "avg_over_time",
          base_fn: str = "avg_over_time", reward: bool = False) -> list[Recording]:
    """Recent level (`<level>:<name>:avg_recent`) and its baseline (`..:avg_baseline`, present only
    with enough baseline steps and past warm-up) of a step-windowed metric. `reward`: over the
    reward's longer windows (config.REWARD_WINDOW_FACTOR), never across a segment start."""
    level = by.replace(", ", "_")
    op = fn.split("_")[0]
    bop = base_fn.split("_")[0]
    base = alternatives(base_fn, alts, by, baseline=True, reward=reward)
    return [Recording(f"{level}:{name}:{op}_recent", ladder(alternatives(fn, alts, by, reward=reward), by=by)),
            Recording(f"{level}:{name}:{bop}_baseline",
                      ladder(f"{base}{_REWARD_BASELINE_GATE}" if reward else base, by=by)
                      + f"\nand on (run) {READY}")]


# the trend window and the baselines it reads (TW + W + BW, {TWS} seconds) all after the last
# segment start
_AFTER_SEAM = f"\n  unless on (run) (time() - max by (run) ({SEGMENT_START}) < {{TWS}})"
# The reward's longer baseline window holds baseline_min_steps steps of its own and begins after
# the last segment start ({RWBS} seconds: both its windows): the evidence gate
# (run:rl_step_window:baseline_steps) and the seam gate count the rung's own windows only.
_REWARD_BASELINE_GATE = (
    f"\n  and on (run) (max by (run) (changes({STEP}[{{RBW}}] offset {{RW}})) >= {{baseline_min_steps}})"
    f"\n  unless on (run) (time() - max by (run) ({SEGMENT_START}) < {{RWBS}})")
_REWARD = [("rl_score", PRIMARY), ("rl_reward", PRIMARY)]


def _recordings() -> list[Recording]:
    out = [Recording(step_changes(i), f"max by (run) (changes({STEP}[{{w{i}}}]))") for i in TIERS]
    out += [Recording(f"run:rl_training_step:changes_bw{i}",
                      f"max by (run) (changes({STEP}[{{bw{i}}}] offset {{w{i}}}))") for i in TIERS]
    # `< bool`: the tier the ladder picks has a 0 or 1 here, so `or` never falls through to a
    # longer tier whose windows reach back further
    out.append(Recording(SEAM, "(\n" + "\nor\n".join(
        f"  (time() - max by (run) ({SEGMENT_START}) < bool {{wbs{i}}})\n"
        f"  and on (run) ({step_changes(i)} >= {{recent_min_steps}})" for i in TIERS) + "\n)"))
    out.append(Recording(READY, "(\n" + "\nor\n".join(
        f"  run:rl_training_step:changes_bw{i} and on (run) ({step_changes(i)} >= {{recent_min_steps}})"
        for i in TIERS) + "\n) >= {baseline_min_steps}\n"
        f"and on (run) max by (run) ({STEP}) >= {{warmup_steps}}\n"
        f"unless on (run) {SEAM} == 1"))
    out += [
        # the raw task score first (veRL critic/score, slime/Miles rollout/raw_reward); the
        # trainer's reward (shaped, or group-normalised on slime/Miles) only where there is none
        *_pair("rl_task_reward", _REWARD, reward=True),
        # its per-step spread over the baseline window: a drop must stand out of the noise (a
        # sharp drop fires as soon as the recent window holds only the new level, before the
        # baseline window holds any of it)
        Recording("run:rl_task_reward:stddev_baseline",
                  ladder(alternatives("stddev_over_time", _REWARD, baseline=True, reward=True)
                         + _REWARD_BASELINE_GATE) + f"\nand on (run) {READY}"),
        # the best (lowest) baseline level over the trend window: a slow drift moves the
        # baseline along with it, so only the level it held earlier shows the drift
        # (never across a segment start: the level a previous run held is not this one's)
        Recording("run:rl_task_reward:max_baseline_trend",
                  ladder("max by (run) (max_over_time(run:rl_task_reward:avg_baseline[{RTW}]))"
                         + _AFTER_SEAM.replace("{TWS}", "{RTWS}"))),
        # the framework's own entropy first; the update pass only where it logs no other
        # (OpenRLHF entropy_loss is unlabelled; slime without --use-rollout-entropy)
        *_pair("rl_entropy", [("rl_entropy", '{{stat="", split="", phase=""}}'),
                              ("rl_entropy", '{{stat="", split="", phase="update"}}')]),
        # medians: one skipped step's Inf must not move the level
        *_pair("rl_grad_norm", [("rl_grad_norm", PRIMARY)], fn="median", base_fn="median"),
        Recording("run:rl_grad_norm:max_baseline",
                  ladder(over("max_over_time", "rl_grad_norm", baseline=True)) + f"\nand on (run) {READY}"),
        # one name for the KL to the reference (veRL actor/kl_loss, slime kl_loss, TRL kl)
        # ... or, where a run logs none, the KL it folds into the reward (veRL use_kl_in_reward:
        # actor/reward_kl_penalty, critic/kl; slime/Miles rollout/kl), before the coefficient;
        # or AReaL's kl_rewards (-kl_ctl x KL per token) divided by -kl_ctl, which the AReaL
        # integration captures as kl_reward_coef (0 without a reference model: nothing to read).
        # TRL's non_score_reward is a sum (stat="sum") and not selected.
        *_pair("rl_reference_kl", [("rl_reference_kl", PRIMARY), ("rl_reward_kl_penalty", PRIMARY),
                                   ("rl_reward_kl_term", PRIMARY, KL_FROM_TERM)]),
        Recording("run:rl_reference_kl_max:avg_baseline",
                  ladder(over("avg_over_time", "rl_reference_kl", '{{stat="max", split=""}}', baseline=True))
                  + f"\nand on (run) {READY}"),
        *_pair("rl_response_length_tokens", [("rl_response_length_tokens", PRIMARY)]),
        Recording("run:rl_response_length_tokens:min_baseline_trend",
                  ladder("min by (run) (min_over_time(run:rl_response_length_tokens:avg_baseline[{TW}]))"
                         + _AFTER_SEAM)),
        # every phase a framework reports: veRL phase="", slime phase="rollout", AReaL's run-wide
        # train_perf/tokens_per_second (rl_throughput_tokens_per_second{phase="train"})
        *_pair("rl_throughput", [("rl_gpu_throughput_tokens_per_second", PRIMARY),
                                 ("rl_throughput_tokens_per_second", PRIMARY)], by="run, phase"),
        *_pair("rl_train_inference_logprob_abs_diff", [("rl_train_inference_logprob_abs_diff", PRIMARY)]),
        # one estimator at a time (AReaL logs k1, k2 and k3; veRL k1 and k3): k3 where the run
        # logs it (Miles train_rollout_kl, veRL rollout_corr/k3_kl, AReaL kl_k3), k1 only where
        # it logs nothing else (OpenRLHF vllm_kl). k1 is signed, so a mean across estimators hides
        # a real k3 rise behind a negative k1.
        *_pair("rl_train_inference_kl", [("rl_train_inference_kl", '{{stat="", split="", estimator="k3"}}'),
                                         ("rl_train_inference_kl", '{{stat="", split="", estimator="k1"}}')]),
        # Miles logs the weight version of its samples, not their staleness: the weights are
        # pushed once before training and then every update_weights_interval rollouts
        # (miles/train.py:52, update_weight_from_tensor.py:241), so while rollout r trains the
        # engine's current version is 1 + floor(r / interval), and its oldest sample's lag, in
        # weight versions, is that minus the oldest version of the batch (0 in a synchronous
        # run, 1 one step off). rl_training_step counts optimizer steps (n_mini per rollout),
        # so training step minus version would grow through a healthy run.
        Recording("run:rl_sample_weight_version:lag", MILES_WEIGHT_LAG),
        # staleness against the last published checkpoint (AReaL theta, reference=""), not the
        # proximal policy's (reference="proximal"): two references, never averaged together;
        # Miles' lag in weight versions where a run logs no staleness
        *_pair("rl_sample_staleness_steps", [("rl_sample_staleness_steps", STALE_SEL),
                                             ("run:rl_sample_weight_version:lag", "")]),
        *_pair("rl_preference_reward_margin", [("rl_preference_reward_margin", PRIMARY)]),
        *_pair("rl_moe_load_imbalance_ratio", [("rl_moe_load_imbalance_ratio", PRIMARY)], by="run, layer"),
        # assistant turns: the per-step maximum where logged, else the mean (AReaL
        # rollout/num_turns); veRL counts messages, prompt included (num_turns/max): (m - 1) / 2.
        # Recent maximum against the baseline mean
        *_pair("rl_turns", [("rl_turns", '{{stat="max", split=""}}'),
                            ("rl_turn_messages", '{{stat="max", split=""}}', MESSAGES_TO_TURNS),
                            ("rl_turns", PRIMARY), ("rl_turn_messages", PRIMARY, MESSAGES_TO_TURNS)],
               fn="max_over_time"),
        *_pair("hw_gpu_memory_usage_bytes", [("hw_gpu_memory_usage_bytes", "")], by="run, instance, gpu"),
        Recording("run:rl_training_step_timestamp_seconds:age", STEP_AGE),
        # the run finished / is in a declared pause (exprs.py FINISHED, PAUSED_NOW): 1 per run
        Recording(RUN_FINISHED, f"group by (run) ({FINISHED})"),
        Recording(RUN_PAUSED, f"group by (run) ({PAUSED_NOW})"),
    ]
    return out


RECORDINGS: list[Recording] = _recordings()


# ------------------------------------------------------------------ fleet recording rules
# One series per run for the fleet dashboard (exporter/dashboards/fleet.py), so it reads a few
# series per run instead of every rank's. A run's targets are the (job, instance) pairs whose
# rl_run_info named it within the baseline window: a crashed rank still counts, as down.
# State code, first match wins: 5 finished (the run's last known state is finished, or its step
# reached its total_training_steps), 4 failed (its last known state is crashed, a critical alert
# other than the stall/down ones, or every target down), 3 stalled (as RLRunStalled, without its
# `for`; never in a declared pause), 2 restarting (its last known state is restarting, a rank's
# counters reset, or some ranks down), 1 running (a declared pause too: it is no fault). The
# lifecycle (rl_run_state, exporter/alerts/exprs.py run_state) where the exporter reports it, the
# older signs beside it. `a or b` keeps a run's first match, so each condition is evaluated once.
# The rules read scraped series only, never another recording: vmalert reads a recording it
# wrote itself one or more evaluations late (docs/fleet.md).
_FLEET_TARGETS = "max by (job, instance, run) (last_over_time(rl_run_info[{fleet_window}]))"
_FLEET_UP_RATIO = f"avg by (run) ({_FLEET_TARGETS} * on (job, instance) group_left () up)"
_FLEET_AGE = STEP_AGE
_FW = "[{fleet_window}]"
FLEET_STATES = {5: "finished", 4: "failed", 3: "stalled", 2: "restarting", 1: "running"}
_FLEET_WHEN = [
    (5, "max by (run) (last_over_time(rl_training_step[{fleet_window}]))\n"
        "  >= on (run) max by (run) (last_over_time(rl_config_value"
        '{{parameter="total_training_steps"}}[{fleet_window}]))\n'
        f"  or {run_state('finished', _FW)}"),
    (4, f"{run_state('crashed', _FW)}\n"
        '  or ALERTS{{alertstate="firing", severity="critical", alertname!~"RLRunStalled|RLExporterDown"}}\n'
        f"  or {_FLEET_UP_RATIO} == 0"),
    (3, '(ALERTS{{alertstate="firing", alertname="RLRunStalled"}}\n'
        f"  or {_FLEET_AGE} > on (run) clamp_min({{stall_step_factor}} * max by (run) "
        '(max_over_time(rl_step_duration_seconds{{stat="", split=""}}[{w4}])), '
        "{stall_floor_seconds})\n"
        f"  or ({_FLEET_AGE} > {{stall_floor_seconds}} unless on (run) rl_step_duration_seconds))\n"
        f"  unless on (run) {PAUSED_NOW}"),
    (2, f"{run_state('restarting', _FW)}\n"
        "  or resets(rl_exporter_frames_received_total[{fleet_rate_window}]) > 0\n"
        f"  or {_FLEET_UP_RATIO} < 1"),
    (1, _FLEET_UP_RATIO),
]
_FLEET_CODE = "\nor ".join(f"{code} * group by (run) (\n  {expr}\n)" for code, expr in _FLEET_WHEN)

RECORDINGS += [
    Recording("run:rl_fleet_targets:count", f"count by (run) ({_FLEET_TARGETS})"),
    Recording("run:rl_fleet_targets_up:count",
              f"count by (run) ({_FLEET_TARGETS} * on (job, instance) group_left () (up == 1))"),
    # also RLRestartWithoutProgress's: its resets() count restarts across the run's targets
    Recording(RUN_STEP, f"max by (run) ({STEP})"),
    Recording("run:rl_training_step:deriv10m",
              "max by (run) (deriv(rl_training_step[{fleet_rate_window}]))"),
    Recording("run:rl_mfu_ratio:max",
              'max by (run) (rl_mfu_ratio{{stat="", split="", phase="train"}})'),
    Recording("run:rl_gpu_throughput_tokens_per_second:max",
              'max by (run) (rl_gpu_throughput_tokens_per_second{{stat="", split="", phase=""}})'),
    Recording("run:hw_gpus:count", "count by (run) (hw_gpu_memory_limit_bytes)"),
    Recording("run_severity:alerts_firing:count",
              'count by (run, severity) (ALERTS{{alertstate="firing"}})'),
    Recording("run:rl_run_state:code", _FLEET_CODE),
    # GPUs of runs failed (4) or stalled (3) now, 0 for the other runs: summed over time,
    # GPU-hours. code % 5 >= 3 is 1 for codes 3 and 4 only.
    Recording("run:hw_gpus_failing:count",
              "count by (run) (hw_gpu_memory_limit_bytes) * on (run) group_left () (\n"
              f"(\n{_FLEET_CODE}\n) % 5 >= bool 3\n)"),
]


# ------------------------------------------------------------------ goodput (docs/goodput.md)
# Where the run's wall time went, from rl_goodput_seconds_total{bucket}. increase() handles the
# counter resets of a restarted process. Every rank's exporter keeps its own ledger of the same
# wall time, so a run's seconds per bucket are the largest rank's, not the sum over ranks.
# Like the fleet rules above, each reads scraped series only. An interval is accounted when
# its next step arrives, so a run with no accounted time in the window (stalled, or not
# started) has no ratio rather than 0/0.
_GOODPUT = "rl_goodput_seconds_total"


def _gp(sel: str = "", window: str = "{goodput_window}") -> str:
    return f"max by (run, bucket) (increase({_GOODPUT}{sel}[{window}]))"


_GP_TOTAL = "sum by (run) (" + _gp() + ")"


def _class_sel(cls: str) -> str:
    from exporter.core.goodput import CLASS_OF
    return '{{bucket=~"' + "|".join(b for b, c in CLASS_OF.items() if c == cls) + '"}}'


# a run with seconds whose class depends on a mode it did not report (docs/goodput.md): its
# ratio is not comparable with another run's
_GP_UNCLASSIFIED = "(sum by (run) (" + _gp('{{bucket="rollout_unclassified"}}') + ") > 0)"
# a run whose window holds no step time at all (a crash loop redoes steps: all restart) is 0
_GP_STEP = "(sum by (run) (" + _gp('{{bucket="step"}}') + f") or on (run) 0 * {_GP_TOTAL})"


def _gpus(window: str = "") -> str:
    """GPUs per run (run:hw_gpus:count's expression; with a window, the GPUs it saw in it, so a
    run that ended still weighs its GPUs); a run without GPU samples counts as one GPU."""
    def sel(metric):
        return f"last_over_time({metric}[{window}])" if window else metric
    return (f"(count by (run) ({sel('hw_gpu_memory_limit_bytes')})"
            f" or on (run) (0 * max by (run) ({sel(_GOODPUT)}) + 1))")


def _gpu_weighted(seconds: str) -> str:
    return f"sum({seconds} * on (run) group_left () {_gpus()})"


RECORDINGS += [
    Recording("run_bucket:rl_goodput_seconds:increase_1h", _gp()),
    # the productive share of the accounted time (bucket="step" over all buckets) ...
    Recording("run:rl_goodput:ratio_1h", f"{_GP_STEP}\n/ on (run) ({_GP_TOTAL} > 0)"),
    # ... and every bucket's
    Recording("run_bucket:rl_goodput:share_1h",
              f"{_gp()}\n/ on (run) group_left () ({_GP_TOTAL} > 0)"),
    # each class's share: productive, overhead (required), waste, unclassified
    Recording("run_class:rl_goodput:share_1h", "\nor\n".join(
        f'label_replace(\n  (sum by (run) ({_gp(_class_sel(c))}) or on (run) 0 * {_GP_TOTAL})\n'
        f'  / on (run) ({_GP_TOTAL} > 0),\n  "class", "{c}", "", "")'
        for c in ("productive", "overhead", "waste", "unclassified"))),
    # the ratio where every second is classified the way another framework's would be
    Recording("run:rl_goodput:comparable_ratio_1h",
              f"run:rl_goodput:ratio_1h\nunless on (run) {_GP_UNCLASSIFIED}"),
    # 1 - the waste share of a comparable run: what the dashboards colour (required overhead
    # is no badput to paint)
    Recording("run:rl_goodput:not_wasted_ratio_1h",
              f"1 - (sum by (run) ({_gp(_class_sel('waste'))}) or on (run) 0 * {_GP_TOTAL})\n"
              f"/ on (run) ({_GP_TOTAL} > 0)\nunless on (run) {_GP_UNCLASSIFIED}"),
    # fleet: productive GPU-seconds over accounted GPU-seconds of the comparable runs (a 64-GPU
    # run weighs 64 times a 1-GPU one)
    Recording(":rl_goodput:ratio_1h",
              f"{_gpu_weighted(f'({_GP_STEP} unless on (run) {_GP_UNCLASSIFIED})')}\n/\n"
              f"({_gpu_weighted(f'({_GP_TOTAL} unless on (run) {_GP_UNCLASSIFIED})')} > 0)"),
    # the fleet table: GPU-hours per run and bucket over the last day
    Recording("run_bucket:rl_goodput_gpu_hours:increase_1d",
              f"{_gp(window='{goodput_fleet_window}')}\n* on (run) group_left () {_gpus('{goodput_fleet_window}')} / 3600"),
]


# ------------------------------------------------------------------ ranks of one run
# Each rank's duration of each phase in its last step (and its step duration, as phase="step"),
# per (run, instance, phase), against the median over the run's ranks at the same evaluation:
# ranks step together, so the ratio compares one step across ranks and the step-to-step spread
# every rank shares (longer responses in one batch) cancels. Only phases at least
# straggler_min_ranks ranks report. Pause phases are the whole run's, not a rank's.
# RLRankStraggler takes the minimum of ratio and excess over a step window; the per-rank
# dashboard panel draws the median.
RANK_DURATION = ('max by (run, instance, phase) (rl_phase_duration_seconds{{phase!~"{pause_phases}"}})\n'
                 "  or label_replace(max by (run, instance) (rl_step_duration_seconds" + PRIMARY + "), "
                 '"phase", "step", "", "")')
RANK_MEDIAN = "run_phase:rl_rank_duration_seconds:median"
RANK_RATIO = "run_instance_phase:rl_rank_duration_seconds:ratio_to_median"
RANK_EXCESS = "run_instance_phase:rl_rank_duration_seconds:excess_over_median"
RECORDINGS += [
    Recording(RANK_MEDIAN, f"quantile by (run, phase) (0.5, (\n  {RANK_DURATION}\n))\n"
                           f"and on (run, phase) count by (run, phase) (\n  {RANK_DURATION}\n)"
                           " >= {straggler_min_ranks}"),
    Recording(RANK_RATIO, f"(\n  {RANK_DURATION}\n)\n/ on (run, phase) group_left () {RANK_MEDIAN}"),
    Recording(RANK_EXCESS, f"(\n  {RANK_DURATION}\n)\n- on (run, phase) group_left () {RANK_MEDIAN}"),
]


def alert_metrics(alert) -> tuple[str, ...]:
    """Catalog metrics an alert reads, through the recording rules it uses."""
    return tuple(sorted(reads(alert.expr) - {"up"}))


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects, this file's recording-rule names excluded (the
    engines' own vllm:*/sglang:* names have colons too). The one PromQL name extractor
    (exporter/promql.py) serves alerts, dashboards and doctor alike."""
    return set(names(expr)) - _RECORDED


def recording_names(expr: str) -> set[str]:
    return set(names(expr)) & _RECORDED


_RECORDED = frozenset(r.record for r in RECORDINGS)


def reads(expr: str) -> set[str]:
    """Every metric an expression reads, following the recording rules it uses."""
    by_name = {r.record: r.expr for r in RECORDINGS}
    out, todo, seen = set(), [expr], set()
    while todo:
        e = todo.pop()
        out |= metric_names(e)
        for rec in recording_names(e) - seen:
            seen.add(rec)
            if rec in by_name:
                todo.append(by_name[rec])
    return out
