"""The one source of rl-exporter's Prometheus rules (monitoring-mixin style).

Alerts and recording rules are data; every threshold, window and `for:` is a named
entry of CONFIG with a comment saying where the number comes from. `render()` turns
them into a rule file; overrides (thresholds, per-alert for/severity/disabled, the
runbook base URL) come in as a mapping so nobody edits generated YAML:

    from alerts.rules import render
    groups = render({"thresholds": {"clip_ratio_high": 0.4},
                     "alerts": {"RLMFULow": {"for": "2h", "severity": "warning"}}})

`time_scale` shrinks every window, `for:` and time-valued threshold by the same
factor (the end-to-end test runs a day of alerting in a minute with the same
expressions).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

RUNBOOK_BASE_URL = "https://github.com/rl-exporter/rl-exporter/blob/main/alerts/runbook.md"
SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True)
class Dur:
    """A duration in seconds; rendered as a Prometheus duration, scaled in tests."""
    seconds: float


# Named configuration. Durations are Dur; everything else is a plain number.
CONFIG: dict[str, object] = {
    # ---- windows
    # The "recent level" of a run and the baseline it is compared with. A healthy step
    # takes 30 s to 3 min (seed 002: 152.6 s median), so 10 m holds a few steps and 1 h a
    # few dozen; the baseline ends where the recent window starts.
    "short_window": Dur(600),
    "baseline_window": Dur(3600),
    # ---- liveness
    # A run is stalled when no step advanced for max(stall_floor, stall_step_factor x the
    # longest recent step): a fixed floor alone pages on 30-minute steps of big models.
    "stall_floor_seconds": Dur(900),
    "stall_step_factor": 5,
    # Prometheus job(s) that scrape rl-exporter (Helm: the chart's job name).
    "exporter_job_selector": 'job=~".*rl-exporter.*"',
    # ---- numerics
    # posttrain's finite-gradient guard skips an update on a non-finite loss/gradient
    # (seed 000 optim/nonfinite_skips_consecutive); a few in a row means no update lands.
    "nonfinite_consecutive_skips": 3,
    # ---- reward / entropy (no healthy range is established, seed 000: relative rules)
    # Reward collapse: recent mean reward this fraction of |baseline| below the baseline,
    # and by at least reward_drop_min in absolute terms (reward scales differ by task).
    "reward_drop_ratio": 0.3,
    "reward_drop_min": 0.05,
    # Entropy collapse: recent mean entropy below this fraction of its baseline (seed 004
    # "entropy quickly falls to ~0" = premature convergence, seed 001: check entropy first).
    "entropy_collapse_ratio": 0.4,
    # ---- KL
    # seed 004 section 1.3: ppo_kl 0.001-0.01 healthy, 0.01-0.05 large, > 0.05 unstable.
    "policy_kl_high": 0.05,
    # Reference KL runaway: recent mean this many times its baseline (no range established).
    "reference_kl_runaway_factor": 5,
    "reference_kl_min": 0.01,
    # seed 000 train/kl_max: "orders of magnitude above kl_mean together with a grad_norm
    # jump is the one-token-owns-the-step signature".
    "kl_max_over_mean": 100,
    "grad_norm_jump_factor": 3,
    # ---- clipping
    # seed 004 section 1.2: clip fraction 0.05-0.30 ideal, 0.30-0.50 too much clipping,
    # > 0.50 severe; the issue names 0.3 as the heuristic default.
    "clip_ratio_high": 0.3,
    # ---- gradients
    # Gradient explosion: grad norm this many times its own baseline (seed 002 measured
    # 0.35-4.95 in one healthy run, so the absolute value says little).
    "grad_norm_explosion_factor": 10,
    # ---- GRPO groups (seed 000: watch informative groups first)
    "informative_groups_min_ratio": 0.1,
    # ---- lengths
    # seed 002 measured 0.02-0.43 truncated in a healthy 1,024-token run; seed 004 calls
    # 85 % at the limit a reason to raise the limit. Default just above the healthy max.
    "truncation_ratio_high": 0.5,
    # Reward hacking hint (seed 001: "eval flat but reward up -> is response_length moving?").
    "length_drop_ratio": 0.25,
    "reward_rise_ratio": 0.05,
    # Validation regression: best validation score of the baseline window minus this much.
    "validation_drop": 0.05,
    # ---- critic (seed 004 section 2.4: < 0 = critic learned nothing; early -1.0..0.2)
    "critic_warmup_steps": 50,
    # ---- preference (seed 001 section 12: accuracy 99 %+ with flat eval = overfit)
    "preference_accuracy_high": 0.98,
    "validation_flat_ratio": 0.01,
    "margin_collapse_ratio": 0.3,
    # ---- train/infer consistency (seed 002: |logprob diff| 0.0136-0.0164, KL
    # 0.00063-0.00076 with plain sampling; seed 000/003: rising on MoE = routing flips)
    "mismatch_rise_factor": 2,
    "logprob_diff_min": 0.03,
    "train_inference_kl_min": 0.002,
    # ---- async / balance (no seed gives a range; set to your trainer's bound)
    "staleness_max_steps": 4,
    "dp_imbalance_ratio": 0.5,         # (max - mean) / mean of tokens per DP rank
    "moe_imbalance_ratio": 2.0,        # hottest expert load / ideal load (1 = perfect)
    # ---- efficiency (seed 004 section 7.4: > 40 % excellent, 30-40 % good, < 20 % poor;
    # the issue names MFU > 30 % as the heuristic)
    "mfu_low": 0.3,
    "throughput_drop_ratio": 0.5,
    # ---- GPU (seed 004 problem 3: max_memory close to total memory = OOM next)
    "gpu_memory_full_ratio": 0.95,
    # NVML clock-event reasons that count as throttling (hw_gpu_clock_event_active{reason}).
    # software_power_cap is left out: a GPU at its power limit under full training load is
    # normal; add it if your fleet runs below its cap.
    "throttle_reasons": "hardware_slowdown|hardware_thermal_slowdown|software_thermal_slowdown|"
                        "hardware_power_brake_slowdown",
    # ---- agentic: max turns this many times their baseline, and at least turns_runaway_min
    "turns_runaway_factor": 3,
    "turns_runaway_min": 8,
}



@dataclass
class Recording:
    record: str
    expr: str


@dataclass
class Alert:
    name: str
    severity: str
    expr: str
    for_: Dur
    summary: str
    description: str
    metrics: tuple[str, ...] = ()          # catalog metrics the alert reads (documentation)
    labels: dict = field(default_factory=dict)


def _sel(**kw) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in kw.items()) + "}"


PRIMARY = '{stat="", split=""}'   # the mean/primary training series of a metric
CLIP_SEL = '{stat="", split="", bound=""}'
TRUNC_SEL = '{stat="", split="", subset=""}'


def _avg(metric: str, window: str, selector: str = PRIMARY, by: str = "run", offset: str = "") -> str:
    off = f" offset {{{offset}}}" if offset else ""
    return f"avg by ({by}) (avg_over_time({metric}{selector}[{{{window}}}]{off}))"


# ------------------------------------------------------------------ recording rules
def _pair(metric: str, short: str = "10m", base: str = "1h_offset10m", selector: str = PRIMARY,
          by: str = "run") -> list[Recording]:
    level = by.replace(", ", "_")
    return [Recording(f"{level}:{metric}:avg_over_time{short}", _avg(metric, "short_window", selector, by)),
            Recording(f"{level}:{metric}:avg_over_time{base}",
                      _avg(metric, "baseline_window", selector, by, offset="short_window"))]


RECORDINGS: list[Recording] = [
    *_pair("rl_reward", selector=TRUNC_SEL),  # the trained-on reward, not subset="generated"
    *_pair("rl_entropy"),
    *_pair("rl_grad_norm"),
    *_pair("rl_reference_kl"),
    *_pair("rl_response_length_tokens"),
    *_pair("rl_gpu_throughput_tokens_per_second", selector='{stat="", split="", phase=""}'),
    *_pair("rl_train_inference_logprob_abs_diff"),
    *_pair("rl_train_inference_kl", selector='{stat="", split="", estimator="k3"}'),
    *_pair("rl_preference_reward_margin"),
    # turns: both over the per-step maximum (rl_turns{stat="max"}), the runaway signal
    Recording("run:rl_turns:max_over_time10m",
              'max by (run) (max_over_time(rl_turns{stat="max", split=""}[{short_window}]))'),
    Recording("run:rl_turns:avg_over_time1h_offset10m",
              'avg by (run) (avg_over_time(rl_turns{stat="max", split=""}[{baseline_window}] '
              'offset {short_window}))'),
    Recording("run:rl_training_step_timestamp_seconds:age",
              "time() - max by (run) (rl_training_step_timestamp_seconds)"),
]

# ------------------------------------------------------------------ fleet recording rules
# One series per run for the fleet dashboard (dashboards/fleet.py), so it reads a few
# series per run instead of every rank's. A run's targets are the (job, instance) pairs whose
# rl_run_info named it within the baseline window: a crashed rank still counts, as down.
# State code, first match wins: 5 finished (step reached the run's total_training_steps),
# 4 failed (a critical alert other than the stall/down ones, or every target down), 3 stalled
# (as RLRunStalled, without its `for`), 2 restarting (a rank's counters reset, or some ranks
# down), 1 running. `a or b` keeps a run's first match, so each condition is evaluated once.
# The rules read scraped series only, never another recording: vmalert reads a recording it
# wrote itself one or more evaluations late (docs/fleet.md).
_FLEET_TARGETS = "max by (job, instance, run) (last_over_time(rl_run_info[{baseline_window}]))"
_FLEET_UP_RATIO = f"avg by (run) ({_FLEET_TARGETS} * on (job, instance) group_left () up)"
_FLEET_AGE = "(time() - max by (run) (rl_training_step_timestamp_seconds))"
FLEET_STATES = {5: "finished", 4: "failed", 3: "stalled", 2: "restarting", 1: "running"}
_FLEET_WHEN = [
    (5, "max by (run) (last_over_time(rl_training_step[{baseline_window}]))\n"
        "  >= on (run) max by (run) (last_over_time(rl_config_value"
        '{{parameter="total_training_steps"}}[{baseline_window}]))'),
    (4, 'ALERTS{{alertstate="firing", severity="critical", alertname!~"RLRunStalled|RLExporterDown"}}\n'
        f"  or {_FLEET_UP_RATIO} == 0"),
    (3, 'ALERTS{{alertstate="firing", alertname="RLRunStalled"}}\n'
        f"  or {_FLEET_AGE} > on (run) clamp_min({{stall_step_factor}} * max by (run) "
        '(max_over_time(rl_step_duration_seconds{{stat="", split=""}}[{baseline_window}])), '
        "{stall_floor_seconds})\n"
        f"  or ({_FLEET_AGE} > {{stall_floor_seconds}} unless on (run) rl_step_duration_seconds)"),
    (2, "resets(rl_exporter_frames_received_total[{short_window}]) > 0\n"
        f"  or {_FLEET_UP_RATIO} < 1"),
    (1, _FLEET_UP_RATIO),
]
_FLEET_CODE = "\nor ".join(f"{code} * group by (run) (\n  {expr}\n)" for code, expr in _FLEET_WHEN)

RECORDINGS += [
    Recording("run:rl_fleet_targets:count", f"count by (run) ({_FLEET_TARGETS})"),
    Recording("run:rl_fleet_targets_up:count",
              f"count by (run) ({_FLEET_TARGETS} * on (job, instance) group_left () (up == 1))"),
    Recording("run:rl_training_step:max", "max by (run) (rl_training_step)"),
    Recording("run:rl_training_step:deriv10m",
              "max by (run) (deriv(rl_training_step[{short_window}]))"),
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

R = "{{ $labels.run }}"


def _nonfinite(metrics) -> str:
    parts = []
    for m in metrics:
        parts.append(f'label_replace({m}{{split=""}} != {m}{{split=""}}, "metric", "{m}", "", "")')
        parts.append(f'label_replace(abs({m}{{split=""}}) == +Inf, "metric", "{m}", "", "")')
    return "max by (run, metric) (\n  " + "\n  or ".join(parts) + "\n)"


ALERTS: list[Alert] = [
    # ============================================================ liveness (page)
    Alert("RLRunStalled", "critical",
          "run:rl_training_step_timestamp_seconds:age > on (run) (\n"
          "  clamp_min({stall_step_factor} * {time_scale}max by (run) "
          "(max_over_time(rl_step_duration_seconds{{stat=\"\", split=\"\"}}[{baseline_window}])), "
          "{stall_floor_seconds})\n"
          "  or on (run) (0 * run:rl_training_step_timestamp_seconds:age + {stall_floor_seconds})\n)",
          Dur(300), "An RL run stopped advancing its training step while its exporter is up.",
          f"Run {R} has not advanced its training step for {{{{ $value | humanizeDuration }}}} "
          "(longer than max(floor, k x its longest recent step)).",
          ("rl_training_step_timestamp_seconds", "rl_step_duration_seconds")),
    Alert("RLExporterDown", "critical",
          "max by (job, instance, run) (last_over_time(rl_run_info[{baseline_window}]))\n"
          "* on (job, instance) group_left ()\n"
          "(up{{{exporter_job_selector}}} == 0)\n"
          "or\n(up{{{exporter_job_selector}}} == 0) unless on (job, instance) "
          "last_over_time(rl_run_info[{baseline_window}])",
          Dur(300), "Prometheus cannot scrape an rl-exporter target (trainer crashed or exporter gone).",
          "Target {{ $labels.instance }} (run {{ if $labels.run }}{{ $labels.run }}{{ else }}unknown"
          "{{ end }}) has been down: up == {{ $value }}.",
          ("rl_run_info",)),
    # ============================================================ numerics (page)
    Alert("RLNonFiniteLoss", "critical",
          _nonfinite(("rl_loss", "rl_policy_loss", "rl_value_loss", "rl_grad_norm")),
          Dur(60), "An RL run reports a NaN or infinite loss or gradient norm.",
          f"Run {R} reports {{{{ $labels.metric }}}} = {{{{ $value }}}}.",
          ("rl_loss", "rl_policy_loss", "rl_value_loss", "rl_grad_norm")),
    Alert("RLOptimizerNonFiniteSkips", "critical",
          "max by (run) (rl_optimizer_consecutive_nonfinite_skips{{split=\"\"}}) >= "
          "{nonfinite_consecutive_skips}",
          Dur(60), "The optimizer keeps rejecting updates for a non-finite loss or gradient.",
          f"Run {R} skipped {{{{ $value }}}} updates in a row for a non-finite loss or gradient.",
          ("rl_optimizer_consecutive_nonfinite_skips",)),
    # ============================================================ outcome (page)
    Alert("RLRewardCollapse", "critical",
          "(\n  run:rl_reward:avg_over_time1h_offset10m - run:rl_reward:avg_over_time10m\n)\n"
          "> {reward_drop_ratio} * abs(run:rl_reward:avg_over_time1h_offset10m)\n"
          "and\n(\n  run:rl_reward:avg_over_time1h_offset10m - run:rl_reward:avg_over_time10m\n)\n"
          "> {reward_drop_min}",
          Dur(300), "Training reward dropped sharply below the run's own recent level.",
          f"Run {R}: mean reward fell by {{{{ printf \"%.3f\" $value }}}} below its baseline of the "
          "previous hour.",
          ("rl_reward",)),
    # ============================================================ policy causes (ticket)
    Alert("RLEntropyCollapse", "warning",
          "run:rl_entropy:avg_over_time10m\n< {entropy_collapse_ratio} * run:rl_entropy:avg_over_time1h_offset10m",
          Dur(300), "Policy entropy collapsed relative to the run's own recent level.",
          f"Run {R}: mean entropy is {{{{ printf \"%.3f\" $value }}}}, under "
          "[[entropy_collapse_ratio]]x its baseline of the previous hour.",
          ("rl_entropy",)),
    Alert("RLPolicyKLSpike", "warning",
          f"{_avg('rl_policy_kl', 'short_window')} > {{policy_kl_high}}",
          Dur(300), "KL between the sampling and the updated policy is far above its healthy range.",
          f"Run {R}: mean PPO KL (ppo_kl) is {{{{ printf \"%.4f\" $value }}}} over the last window.",
          ("rl_policy_kl",)),
    Alert("RLReferenceKLRunaway", "warning",
          "run:rl_reference_kl:avg_over_time10m\n"
          "> {reference_kl_runaway_factor} * run:rl_reference_kl:avg_over_time1h_offset10m\n"
          "and run:rl_reference_kl:avg_over_time10m > {reference_kl_min}",
          Dur(300), "KL to the reference policy is running away from its recent level.",
          f"Run {R}: mean KL to the reference (kl_mean) is {{{{ printf \"%.4f\" $value }}}}, several "
          "times its baseline of the previous hour.",
          ("rl_reference_kl",)),
    Alert("RLKLSingleTokenDominates", "warning",
          'max by (run) (rl_reference_kl{{stat="max", split=""}})\n'
          '/ max by (run) (rl_reference_kl{stat_empty}) > {kl_max_over_mean}\n'
          "and on (run)\nmax by (run) (rl_grad_norm{{stat=\"\", split=\"\"}})\n"
          "> {grad_norm_jump_factor} * run:rl_grad_norm:avg_over_time1h_offset10m",
          Dur(60), "One token owns the step: kl_max is orders of magnitude above kl_mean with a "
          "grad-norm jump.",
          f"Run {R}: kl_max / kl_mean = {{{{ printf \"%.0f\" $value }}}} with the gradient norm "
          "jumping above its baseline.",
          ("rl_reference_kl", "rl_grad_norm")),
    Alert("RLClipFractionHigh", "warning",
          f"{_avg('rl_policy_clip_ratio', 'short_window', CLIP_SEL)}"
          " > {clip_ratio_high}",
          Dur(900), "The PPO ratio clip binds a large share of tokens for a long time.",
          f"Run {R}: clip fraction is {{{{ printf \"%.2f\" $value }}}} on average over the last window.",
          ("rl_policy_clip_ratio",)),
    Alert("RLClipFractionNonZeroOnPolicy", "warning",
          'max by (run) (rl_policy_clip_ratio{{stat="", split="", bound=""}}) > 0\n'
          'and on (run)\nmax by (run) (rl_config_value{{parameter="n_mini", split=""}}) == 1',
          Dur(120), "Clip fraction is non-zero although the run takes one mini-batch per step (a bug).",
          f"Run {R} reports clip fraction {{{{ printf \"%.4f\" $value }}}} with one mini-batch per "
          "step, where the ratio is identically 1.",
          ("rl_policy_clip_ratio", "rl_config_value")),
    Alert("RLGradNormExplosion", "warning",
          'max by (run) (rl_grad_norm{{stat="", split=""}})\n'
          "> {grad_norm_explosion_factor} * run:rl_grad_norm:avg_over_time1h_offset10m",
          Dur(120), "Gradient norm exploded relative to the run's own baseline.",
          f"Run {R}: gradient norm is {{{{ printf \"%.3g\" $value }}}}, more than "
          "[[grad_norm_explosion_factor]]x its baseline of the previous hour.",
          ("rl_grad_norm",)),
    Alert("RLGradNormZero", "warning",
          'max by (run) (max_over_time(rl_grad_norm{{stat="", split=""}}[{short_window}])) == 0',
          Dur(300), "The gradient norm has been exactly zero: the run gets no learning signal.",
          f"Run {R}: gradient norm has been exactly {{{{ $value }}}} for the whole window.",
          ("rl_grad_norm",)),
    Alert("RLNoInformativeGroups", "warning",
          'max by (run) (avg_over_time(rl_groups{{outcome="informative", split=""}}[{short_window}]))\n'
          '/ max by (run) (avg_over_time(rl_groups{{outcome="total", split=""}}[{short_window}]))\n'
          "< {informative_groups_min_ratio}\n"
          "or\n1 - max by (run) (avg_over_time(rl_group_zero_std_ratio{{stat=\"\", split=\"\"}}"
          "[{short_window}])) < {informative_groups_min_ratio}\n"
          "or\n(\n  max by (run) (max_over_time(rl_score{{stat=\"max\", split=\"\"}}[{short_window}]))\n"
          "  - min by (run) (min_over_time(rl_score{{stat=\"min\", split=\"\"}}[{short_window}]))\n) == 0",
          Dur(300), "Almost no GRPO group has differing rewards: the reward does not discriminate.",
          f"Run {R}: only {{{{ $value | humanizePercentage }}}} of GRPO groups are informative.",
          ("rl_groups", "rl_group_zero_std_ratio", "rl_score")),
    # ============================================================ data (ticket)
    Alert("RLResponseTruncationHigh", "warning",
          f"{_avg('rl_response_truncated_ratio', 'short_window', TRUNC_SEL)}"
          " > {truncation_ratio_high}",
          Dur(600), "A large share of responses is cut at the length limit.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of responses hit the length limit.",
          ("rl_response_truncated_ratio",)),
    Alert("RLLengthFallingRewardRising", "warning",
          "run:rl_response_length_tokens:avg_over_time10m\n"
          "< (1 - {length_drop_ratio}) * run:rl_response_length_tokens:avg_over_time1h_offset10m\n"
          "and on (run)\nrun:rl_reward:avg_over_time10m\n"
          "> (1 + {reward_rise_ratio}) * run:rl_reward:avg_over_time1h_offset10m",
          Dur(600), "Responses get shorter while reward rises: a reward-hacking hint.",
          f"Run {R}: mean response length fell to {{{{ printf \"%.0f\" $value }}}} tokens while "
          "reward rose above its baseline.",
          ("rl_response_length_tokens", "rl_reward")),
    Alert("RLValidationRegressing", "warning",
          'max by (run, data_source) (\n'
          '  max_over_time(rl_validation_score{{stat="", tier!="aux"}}[{baseline_window}])\n'
          '  - rl_validation_score{{stat="", tier!="aux"}}\n)\n> {validation_drop}\n'
          "and on (run)\nrun:rl_reward:avg_over_time10m >= run:rl_reward:avg_over_time1h_offset10m",
          Dur(600), "Validation score is falling while training reward keeps rising.",
          f"Run {R}: validation on {{{{ $labels.data_source }}}} is {{{{ printf \"%.3f\" $value }}}} "
          "below its best of the previous hour while train reward rises.",
          ("rl_validation_score", "rl_reward")),
    # ============================================================ critic / preference (ticket)
    Alert("RLCriticNotLearning", "warning",
          'max by (run) (max_over_time(rl_value_explained_variance{{stat="", split=""}}[{short_window}])) < 0\n'
          "and on (run)\nmax by (run) (rl_training_step) > {critic_warmup_steps}",
          Dur(900), "The critic explains less return variance than a constant after warm-up.",
          f"Run {R}: value explained variance is {{{{ printf \"%.3f\" $value }}}} (below 0) after "
          "warm-up.",
          ("rl_value_explained_variance", "rl_training_step")),
    Alert("RLPreferenceOverfit", "warning",
          'min by (run) (min_over_time(rl_preference_accuracy_ratio{{stat="", split=""}}[{short_window}]))\n'
          "> {preference_accuracy_high}\n"
          "and on (run)\n(\n"
          '  min by (run) (min_over_time(rl_validation_loss{{stat=""}}[{short_window}]))\n'
          '  >= (1 - {validation_flat_ratio}) * min by (run) (min_over_time(rl_validation_loss{{stat=""}}'
          "[{baseline_window}] offset {short_window}))\n)",
          Dur(1800), "Preference accuracy is near 1.0 while validation does not improve (overfit).",
          f"Run {R}: training preference accuracy is {{{{ $value | humanizePercentage }}}} and the "
          "validation loss stopped improving.",
          ("rl_preference_accuracy_ratio", "rl_validation_loss")),
    Alert("RLRewardModelMarginCollapse", "warning",
          "run:rl_preference_reward_margin:avg_over_time10m\n"
          "< {margin_collapse_ratio} * run:rl_preference_reward_margin:avg_over_time1h_offset10m\n"
          "and run:rl_preference_reward_margin:avg_over_time1h_offset10m > 0",
          Dur(600), "The chosen-minus-rejected reward margin is collapsing towards 0.",
          f"Run {R}: reward margin fell to {{{{ printf \"%.3f\" $value }}}}, a fraction of its "
          "baseline of the previous hour.",
          ("rl_preference_reward_margin",)),
    # ============================================================ systems (ticket / info)
    Alert("RLTrainInferenceMismatchRising", "warning",
          "(\n  run:rl_train_inference_logprob_abs_diff:avg_over_time10m\n"
          "  / run:rl_train_inference_logprob_abs_diff:avg_over_time1h_offset10m > {mismatch_rise_factor}\n"
          "  and run:rl_train_inference_logprob_abs_diff:avg_over_time10m > {logprob_diff_min}\n)\n"
          "or\n(\n  run:rl_train_inference_kl:avg_over_time10m\n"
          "  / run:rl_train_inference_kl:avg_over_time1h_offset10m > {mismatch_rise_factor}\n"
          "  and run:rl_train_inference_kl:avg_over_time10m > {train_inference_kl_min}\n)",
          Dur(600), "Trainer and inference engine disagree more and more on token log-probs.",
          f"Run {R}: train/inference mismatch is {{{{ printf \"%.1f\" $value }}}}x its baseline of the "
          "previous hour.",
          ("rl_train_inference_logprob_abs_diff", "rl_train_inference_kl")),
    Alert("RLSampleStalenessHigh", "warning",
          f"{_avg('rl_sample_staleness_steps', 'short_window')} > {{staleness_max_steps}}",
          Dur(600), "Async samples come from policies many versions old.",
          f"Run {R}: samples are {{{{ printf \"%.1f\" $value }}}} policy versions stale on average.",
          ("rl_sample_staleness_steps",)),
    Alert("RLDataParallelImbalance", "info",
          'max by (run) (avg_over_time(rl_dp_rank_tokens{{stat="max", split=""}}[{short_window}]))\n'
          '/ max by (run) (avg_over_time(rl_dp_rank_tokens{{stat="", split=""}}[{short_window}])) - 1\n'
          "> {dp_imbalance_ratio}",
          Dur(1800), "Tokens per data-parallel rank are unbalanced: the busiest rank sets the pace.",
          f"Run {R}: the busiest data-parallel rank gets {{{{ $value | humanizePercentage }}}} more "
          "tokens than the mean.",
          ("rl_dp_rank_tokens",)),
    Alert("RLMoEExpertImbalance", "warning",
          'max by (run) (avg_over_time(rl_moe_load_imbalance_ratio{{stat="", split=""}}[{short_window}]))'
          " > {moe_imbalance_ratio}",
          Dur(1800), "MoE expert load is far from balanced.",
          f"Run {R}: the hottest MoE expert carries {{{{ printf \"%.2f\" $value }}}}x its ideal load.",
          ("rl_moe_load_imbalance_ratio",)),
    Alert("RLMFULow", "info",
          'max by (run, role) (avg_over_time(rl_mfu_ratio{{stat="", split="", phase="train"}}'
          "[{short_window}])) < {mfu_low}",
          Dur(3600), "Training model-FLOPs utilisation has been low for a long time.",
          f"Run {R}: {{{{ $labels.role }}}} training MFU is {{{{ $value | humanizePercentage }}}}.",
          ("rl_mfu_ratio",)),
    Alert("RLThroughputDrop", "warning",
          "run:rl_gpu_throughput_tokens_per_second:avg_over_time10m\n"
          "< {throughput_drop_ratio} * run:rl_gpu_throughput_tokens_per_second:avg_over_time1h_offset10m",
          Dur(900), "Tokens per second per GPU dropped well below the run's own baseline.",
          f"Run {R}: throughput is {{{{ printf \"%.0f\" $value }}}} tokens/s/GPU, under half its "
          "baseline of the previous hour.",
          ("rl_gpu_throughput_tokens_per_second",)),
    Alert("RLGPUMemoryNearFull", "warning",
          "max by (run, instance, gpu) (hw_gpu_memory_usage_bytes)\n"
          "/ max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > {gpu_memory_full_ratio}",
          Dur(300), "GPU memory is nearly full: the next long batch may OOM.",
          f"Run {R}: GPU {{{{ $labels.gpu }}}} memory is {{{{ $value | humanizePercentage }}}} full.",
          ("hw_gpu_memory_usage_bytes", "hw_gpu_memory_limit_bytes")),
    Alert("RLGPUThrottling", "warning",
          'max by (run, instance, gpu, reason) (min_over_time(hw_gpu_clock_event_active{{'
          'reason=~"{throttle_reasons}"}}[{short_window}])) == 1',
          Dur(300), "A GPU is held back by thermal or power throttling.",
          f"Run {R}: GPU {{{{ $labels.gpu }}}} has been throttled ({{{{ $labels.reason }}}} = {{{{ $value }}}}) "
          "for the whole window.",
          ("hw_gpu_clock_event_active",)),
    Alert("RLMultiTurnRunaway", "warning",
          "run:rl_turns:max_over_time10m\n"
          "> {turns_runaway_factor} * run:rl_turns:avg_over_time1h_offset10m\n"
          "and run:rl_turns:max_over_time10m >= {turns_runaway_min}",
          Dur(300), "Multi-turn rollouts run far more turns than the run's own baseline.",
          f"Run {R}: a rollout took {{{{ $value }}}} turns, several times the recent maximum.",
          ("rl_turns",)),
]

# Config values in annotation text are written [[name]] (Go templates own the braces).
_CONFIG_IN_TEXT = re.compile(r"\[\[(\w+)\]\]")

# Alertmanager inhibitions where one alert explains another (source explains target, same run).
CAUSES: list[tuple[str, str]] = [
    ("RLEntropyCollapse", "RLClipFractionHigh"),      # seed 001: reward drop -> entropy, then clipfrac
    ("RLPolicyKLSpike", "RLClipFractionHigh"),        # seed 004: large KL comes with heavy clipping
    ("RLNoInformativeGroups", "RLGradNormZero"),      # seed 000: tied groups give a zero gradient
    ("RLNonFiniteLoss", "RLGradNormExplosion"),       # NaN/Inf already explains the gradient
    ("RLGPUThrottling", "RLThroughputDrop"),          # seed 002 heat guard: throttled steps are slow
    ("RLGPUThrottling", "RLMFULow"),
    ("RLDataParallelImbalance", "RLMFULow"),          # seed 001: slow -> global_seqlen/minmax_diff
    ("RLKLSingleTokenDominates", "RLGradNormExplosion"),
]


# ================================================================== phases in progress, GPU time by
# phase, rollout engines. One self-contained block: thresholds, alerts and an inhibition.
# Engine series (vllm:*, sglang:*) are named in exporter/catalog/engines.py, copied from the
# engines' source; they reach Prometheus with the run's `run` label through the PodMonitor
# relabelling (docs/rollout-engines.md).
CONFIG.update({
    # A phase is hung when open longer than max(floor, factor x its median over its last 20
    # occurrences). Miles' advisory uses 6x and 30 min; the floor here is 10 min so a hang
    # inside gen pages before RLRunStalled (max(15 min, 5 x longest step) + 5 min) on the usual
    # 1-5 min steps. A phase with no closed occurrence yet (the first step) waits for the
    # longer no-history limit: first steps compile and warm up.
    "phase_hung_factor": 6,
    "phase_hung_floor_seconds": Dur(600),
    "phase_hung_no_history_seconds": Dur(3600),
    # Phase names that mean "generating rollouts" (veRL gen, slime/Miles rollout, AReaL
    # rollout, TRL generate).
    "rollout_phases": "gen|generate|generation|rollout|generate_sequences",
    # Rollout GPUs idle: idle fraction of NVML-sampled GPU time during rollout phases. 0.8 is
    # this project's heuristic for "waiting, not generating" (a tuned rollout runs 50-90 % busy).
    "rollout_gpu_idle_ratio": 0.8,
    # ... or a rollout phase open this long while every engine of the run runs 0 requests.
    "rollout_engine_idle_seconds": Dur(300),
    # Miles' advisory: aborts > 5 % over 30 min with >= 100 requests.
    "abort_window": Dur(1800),
    "engine_abort_ratio": 0.05,
    "engine_abort_min_requests": 100,
    # KV-cache thrash: Miles flags KV > 90 % with concurrency < 50 % of the cap; the cap
    # (max_num_seqs) is not in the engines' exposition, so preemptions (vLLM) / retractions
    # (SGLang) in the window stand in for "the cache, not the cap, limits concurrency".
    "kv_cache_high_ratio": 0.9,
    "kv_thrash_preemptions": 10,
    # Long tail: p99 over p50 of end-to-end request latency (no source gives a bound; a
    # lognormal healthy rollout measures 2-3 in the stand-in, 5 means stragglers hold the step).
    "long_tail_ratio": 5,
    # Prometheus job(s) that scrape the rollout engines (Helm: the PodMonitor sets job).
    "engine_job_selector": 'job=~".*(rollout-engine|vllm|sglang).*"',
})

_ROLLOUT = '{{phase=~"{rollout_phases}"}}'


def _tail(metric: str) -> str:
    q = "histogram_quantile({q}, sum by (run, le) (rate(" + metric + "_bucket[{{short_window}}])))"
    return q.format(q="0.99") + "\n/ " + q.format(q="0.5") + "\n> {long_tail_ratio}"


ALERTS += [
    Alert("RLPhaseHung", "critical",
          "(time() - max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds))\n"
          "> on (run, instance, phase) (\n"
          "  clamp_min({phase_hung_factor} * max by (run, instance, phase) "
          "(rl_phase_recent_median_duration_seconds), {phase_hung_floor_seconds})\n"
          "  or on (run, instance, phase)\n"
          "  (0 * max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds) "
          "+ {phase_hung_no_history_seconds})\n)",
          Dur(120), "A training phase has been open far longer than it usually takes: hung inside a step.",
          f"Run {R}: phase {{{{ $labels.phase }}}} has been open for {{{{ $value | humanizeDuration }}}}, "
          "over [[phase_hung_factor]]x its recent median and the floor.",
          ("rl_phase_in_progress_start_timestamp_seconds", "rl_phase_recent_median_duration_seconds")),
    Alert("RLRolloutGPUIdle", "warning",
          "(\n"
          f"  sum by (run) (rate(hw_gpu_phase_idle_seconds_total{_ROLLOUT}[{{short_window}}]))\n"
          f"  / (sum by (run) (rate(hw_gpu_phase_idle_seconds_total{_ROLLOUT}[{{short_window}}]))\n"
          f"     + sum by (run) (rate(hw_gpu_phase_busy_seconds_total{_ROLLOUT}[{{short_window}}])))\n"
          "  > {rollout_gpu_idle_ratio}\n)\n"
          "or\n(\n"
          "  1 - clamp_max(sum by (run) (\n"
          "    max_over_time(vllm:num_requests_running[{short_window}])\n"
          "    or max_over_time(sglang:num_running_reqs[{short_window}])), 1) == 1\n"
          "  and on (run)\n"
          f"  max by (run) (time() - rl_phase_in_progress_start_timestamp_seconds{_ROLLOUT})"
          " > {rollout_engine_idle_seconds}\n)",
          Dur(600), "Rollout GPUs sit idle while the run waits for rollouts.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of rollout GPU time is idle while a rollout "
          "phase is in progress (NVML per-phase time, or engines running no request).",
          ("rl_phase_in_progress_start_timestamp_seconds",)),
    Alert("RLRolloutAbortsHigh", "warning",
          "(\n"
          '  sum by (run) (increase(vllm:request_success_total{{finished_reason="abort"}}[{abort_window}]))\n'
          "  / sum by (run) (increase(vllm:request_success_total[{abort_window}])) > {engine_abort_ratio}\n"
          "  and on (run) sum by (run) (increase(vllm:request_success_total[{abort_window}]))"
          " >= {engine_abort_min_requests}\n)\nor\n(\n"
          "  sum by (run) (increase(sglang:num_aborted_requests_total[{abort_window}]))\n"
          "  / (sum by (run) (increase(sglang:num_requests_total[{abort_window}]))\n"
          "     + sum by (run) (increase(sglang:num_aborted_requests_total[{abort_window}])))"
          " > {engine_abort_ratio}\n"
          "  and on (run) (sum by (run) (increase(sglang:num_requests_total[{abort_window}]))\n"
          "     + sum by (run) (increase(sglang:num_aborted_requests_total[{abort_window}])))"
          " >= {engine_abort_min_requests}\n)",
          Dur(300), "The rollout engines abort a large share of requests.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of rollout requests were aborted over the "
          "abort window.",
          ()),
    Alert("RLRolloutKVCacheThrash", "warning",
          "(\n"
          "  max by (run, instance) (avg_over_time(vllm:kv_cache_usage_perc[{short_window}]))"
          " > {kv_cache_high_ratio}\n"
          "  and on (run, instance)\n"
          "  sum by (run, instance) (increase(vllm:num_preemptions_total[{short_window}]))"
          " > {kv_thrash_preemptions}\n)\nor\n(\n"
          "  max by (run, instance) (avg_over_time(sglang:token_usage[{short_window}]))"
          " > {kv_cache_high_ratio}\n"
          "  and on (run, instance)\n"
          "  sum by (run, instance) (increase(sglang:num_retracted_requests_total[{short_window}]))"
          " > {kv_thrash_preemptions}\n)",
          Dur(600), "A rollout engine's KV cache is full and it keeps preempting requests.",
          f"Run {R}: engine {{{{ $labels.instance }}}} KV cache is {{{{ $value | humanizePercentage }}}} "
          "full while it keeps preempting (recomputing) requests.",
          ()),
    Alert("RLRolloutLongTail", "warning",
          "(\n" + _tail("vllm:e2e_request_latency_seconds") + "\n)\nor\n(\n" +
          _tail("sglang:e2e_request_latency_seconds") + "\n)",
          Dur(900), "A few very long rollout requests hold up every step (p99 far above p50).",
          f"Run {R}: rollout request latency p99 is {{{{ printf \"%.1f\" $value }}}}x the median.",
          ()),
    Alert("RLRolloutEngineDown", "critical",
          "max by (run, job, instance) (up{{{engine_job_selector}}} == 0)\n"
          "and on (run)\ncount by (run) (rl_run_info)",
          Dur(120), "A rollout engine target is down while its trainer is still running.",
          f"Run {R}: rollout engine {{{{ $labels.instance }}}} is down (up == {{{{ $value }}}}) while "
          "the trainer still exports.",
          ("rl_run_info",)),
]

# A hung phase explains the run-level stall; a dead engine explains hung rollouts and idle GPUs.
CAUSES += [
    ("RLPhaseHung", "RLRunStalled"),
    ("RLRolloutEngineDown", "RLPhaseHung"),
    ("RLRolloutEngineDown", "RLRolloutGPUIdle"),
]


# ------------------------------------------------------------------ rendering
def duration(seconds: float) -> str:
    """Prometheus duration string, largest exact units (e.g. 5400 -> 1h30m, 0.25 -> 250ms)."""
    ms = int(round(seconds * 1000))
    if ms <= 0:
        return "0s"
    out = ""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out


def parse_duration(text) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"((\d+)d)?((\d+)h)?((\d+)m(?!s))?((\d+)s)?((\d+)ms)?", str(text).strip())
    if not m or not str(text).strip():
        raise ValueError(f"bad duration {text!r} (use e.g. 90s, 15m, 1h30m)")
    d, h, mi, s, ms = (int(m.group(i) or 0) for i in (2, 4, 6, 8, 10))
    return d * 86400 + h * 3600 + mi * 60 + s + ms / 1000


class OverrideError(ValueError):
    pass


def _apply_overrides(overrides: dict | None):
    cfg = dict(CONFIG)
    per_alert: dict[str, dict] = {}
    base_url = RUNBOOK_BASE_URL
    if not overrides:
        return cfg, per_alert, base_url
    unknown = set(overrides) - {"thresholds", "alerts", "runbook_base_url"}
    if unknown:
        raise OverrideError(f"unknown override sections {sorted(unknown)}; "
                            "use thresholds, alerts, runbook_base_url")
    for k, v in (overrides.get("thresholds") or {}).items():
        if k not in CONFIG:
            raise OverrideError(f"unknown threshold {k!r}; known: {', '.join(sorted(CONFIG))}")
        if isinstance(CONFIG[k], Dur):
            cfg[k] = Dur(parse_duration(v))
        elif isinstance(CONFIG[k], str):
            cfg[k] = str(v)
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise OverrideError(f"threshold {k!r} must be a number, got {v!r}")
            cfg[k] = v
    names = {a.name for a in ALERTS}
    for name, o in (overrides.get("alerts") or {}).items():
        if name not in names:
            raise OverrideError(f"unknown alert {name!r}")
        bad = set(o) - {"for", "severity", "disabled", "runbook_url"}
        if bad:
            raise OverrideError(f"{name}: unknown keys {sorted(bad)} (for, severity, disabled, runbook_url)")
        if "severity" in o and o["severity"] not in SEVERITIES:
            raise OverrideError(f"{name}: severity must be one of {SEVERITIES}")
        if "for" in o:
            parse_duration(o["for"])
        per_alert[name] = o
    base_url = overrides.get("runbook_base_url") or base_url
    return cfg, per_alert, base_url


def _values(cfg: dict, time_scale: float) -> dict:
    out = {"time_scale": "" if time_scale == 1 else f"{_num(time_scale)} * ",
           "stat_empty": '{stat="", split=""}'}
    for k, v in cfg.items():
        if isinstance(v, Dur):
            out[k] = duration(v.seconds * time_scale) if k.endswith("window") else _num(v.seconds * time_scale)
        else:
            out[k] = v if isinstance(v, str) else _num(v)
    return out


def _num(x) -> str:
    return repr(float(x)).rstrip("0").rstrip(".") if float(x) != int(x) else str(int(x))


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _fmt(expr: str, values: dict) -> str:
    """Fill {name} placeholders, then turn doubled braces into PromQL's single ones."""
    def sub(m):
        if m.group(1) not in values:
            raise KeyError(f"unknown placeholder {m.group(0)} in {expr!r}")
        return values[m.group(1)]
    return _PLACEHOLDER.sub(sub, expr).replace("{{", "{").replace("}}", "}")


THRESHOLD_SENTINEL = "__threshold_{}__"


def numeric_thresholds(overrides: dict | None = None) -> dict[str, str]:
    """Every plain-number setting of CONFIG (not windows or durations), as rendered."""
    cfg, _, _ = _apply_overrides(overrides)
    return {k: _num(v) for k, v in cfg.items() if not isinstance(v, (Dur, str))}


def render(overrides: dict | None = None, time_scale: float = 1.0,
           parameterised: bool = False) -> dict:
    """The rule file as a dict: {"groups": [...]} ready for yaml.safe_dump.

    parameterised=True leaves every plain-number threshold as a named sentinel
    (THRESHOLD_SENTINEL) in expressions and descriptions: the Helm chart fills them from
    `prometheusRule.thresholds` or numeric_thresholds(), so users tune by name."""
    cfg, per_alert, base_url = _apply_overrides(overrides)
    vals = _values(cfg, time_scale)
    if parameterised:
        vals.update({k: THRESHOLD_SENTINEL.format(k) for k in numeric_thresholds(overrides)})
    records = [{"record": r.record, "expr": _fmt(r.expr, vals)} for r in RECORDINGS]
    alerts = []
    for a in ALERTS:
        o = per_alert.get(a.name, {})
        if o.get("disabled"):
            continue
        for_s = parse_duration(o["for"]) if "for" in o else a.for_.seconds
        desc = _CONFIG_IN_TEXT.sub(lambda m: vals[m.group(1)], a.description)
        alerts.append({
            "alert": a.name,
            "expr": _fmt(a.expr, vals),
            "for": duration(for_s * time_scale),
            "labels": {"severity": o.get("severity", a.severity), **a.labels},
            "annotations": {
                "summary": a.summary,
                "description": desc,
                "runbook_url": o.get("runbook_url") or f"{base_url}#{a.name.lower()}",
            },
        })
    # One group: rules of a group run in order, so every alert reads recording rules of the
    # same evaluation (separate groups run independently and would read them one tick late).
    return {"groups": [{"name": "rl-exporter", "rules": records + alerts}]}


def alert(name: str) -> Alert:
    for a in ALERTS:
        if a.name == name:
            return a
    raise KeyError(name)


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects (rl_* plus up); recording-rule names are excluded."""
    expr = re.sub(r'"[^"]*"', '""', expr)  # drop label values (e.g. "rl_loss" in label_replace)
    names = set()
    for m in re.finditer(r"(?<![:\w])(rl_[a-z0-9_]+|up)(?![:\w])", expr):
        names.add(m.group(1))
    return names


def yaml_text(doc: dict) -> str:
    import yaml

    class _D(yaml.SafeDumper):
        pass

    def _str(dumper, s):
        if "\n" in s:
            return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|")
        return dumper.represent_scalar("tag:yaml.org,2002:str", s)

    _D.add_representer(str, _str)
    head = ("# Generated by `python -m alerts render` from alerts/rules.py. Do not edit by hand:\n"
            "# change the source (or pass --overrides) and re-render; `python -m alerts --check` "
            "fails on drift.\n")
    return head + yaml.dump(doc, Dumper=_D, sort_keys=False, width=120, allow_unicode=True)
