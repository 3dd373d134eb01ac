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

from exporter.promql import format_duration, parse_duration  # noqa: F401 (overrides read them)
from exporter.promql import metric_names as names

RUNBOOK_BASE_URL = "https://github.com/rl-exporter/rl-exporter/blob/main/exporter/rules/runbook.md"
SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True)
class Dur:
    """A duration in seconds; rendered as a Prometheus duration, scaled in tests."""
    seconds: float


# Named configuration. Durations are Dur; everything else is a plain number or a string.
CONFIG: dict[str, object] = {
    # ---- step windows (see "Step-aware windows" in docs/alerts.md)
    # A ladder of wall-clock windows. For each run the "recent" window is the shortest one
    # holding at least recent_min_steps step changes, so it spans 5-20 steps whether a step
    # takes 15 s or 30 min; its baseline is the BASELINE_FACTOR x longer window just before it.
    "step_window_1": Dur(300),
    "step_window_2": Dur(1200),
    "step_window_3": Dur(4800),
    "step_window_4": Dur(19200),
    # Evidence: a relative rule needs this many steps in its recent window, this many in its
    # baseline window, and the run past warm-up (seed 004: entropy and clip fraction move fast
    # in the first tens of steps).
    "recent_min_steps": 5,
    "baseline_min_steps": 20,
    "warmup_steps": 20,
    # ---- liveness
    # A run is stalled when no step advanced for max(stall_floor, stall_step_factor x the
    # longest step of the last step_window_4): a fixed floor alone pages on 30-minute steps of
    # big models; the floor covers a validation or checkpoint pause of up to 30 minutes.
    "stall_floor_seconds": Dur(1800),
    "stall_step_factor": 5,
    # ---- fleet (per-run series for the fleet dashboard): a run's targets are those whose
    # rl_run_info named it within fleet_window; restarts and step rates over fleet_rate_window.
    "fleet_window": Dur(3600),
    "fleet_rate_window": Dur(600),
    # Prometheus job(s) that scrape rl-exporter (Helm: the chart's job name).
    "exporter_job_selector": 'job=~".*rl-exporter.*"',
    # ---- numerics
    # A loss NaN/Inf on every sample of a window holding at least this many steps, or this many
    # updates in a row rejected by a finite-gradient guard (seed 000
    # optim/nonfinite_skips_consecutive): no update lands.
    "nonfinite_persist_steps": 3,
    "nonfinite_consecutive_skips": 5,
    # veRL and most trainers skip an update whose grad norm is not finite; one such step is
    # safe, this many within the recent window are worth a ticket.
    "nonfinite_grad_repeats": 2,
    # ---- reward / entropy (no healthy range is established, seed 000: relative rules)
    # Reward collapse: recent mean of the raw task score this fraction of |baseline| below the
    # baseline, and by at least reward_drop_min. Seed 002's healthy per-step range 0.53-0.87
    # puts a 6-step mean within about +-0.05 of the level, far inside 0.3 x 0.6.
    "reward_drop_ratio": 0.3,
    "reward_drop_min": 0.05,
    # Entropy collapse: recent mean entropy below this fraction of its baseline (seed 004
    # "entropy quickly falls to ~0" = premature convergence, seed 001: check entropy first).
    "entropy_collapse_ratio": 0.4,
    # ---- KL
    # seed 004 section 1.3: ppo_kl 0.001-0.01 healthy, 0.01-0.05 large, > 0.05 unstable.
    "policy_kl_high": 0.05,
    # Reference KL runaway. seed 004 section 1.6: actor/kl_loss 0.001-0.1 is normal. Relative:
    # the recent mean this many times its baseline, above the top of that range, and only once
    # the baseline itself is off the floor: every run starts at KL 0 (the policy is the
    # reference), so its first departure multiplies KL many times (a real healthy TRL GRPO run
    # went 0.01 -> 0.2 over steps 30-45). Absolute: a recent mean 10x the top of the range.
    "reference_kl_runaway_factor": 5,
    "reference_kl_min": 0.1,
    "reference_kl_baseline_min": 0.02,
    "reference_kl_high": 1.0,
    # seed 000 train/kl_max: "orders of magnitude above kl_mean together with a grad_norm
    # jump". The per-token KL tail is heavy, so kl_max/kl_mean > 100 alone is common: the
    # step's kl_max must also jump kl_max_jump_factor x above its own baseline and the grad
    # norm must exceed everything the run showed in its baseline window (seed 002: a healthy
    # run spans 14x, 0.35-4.95).
    "kl_max_over_mean": 100,
    "kl_max_jump_factor": 10,
    # ---- clipping
    # seed 004 section 1.2: clip fraction 0.05-0.30 ideal, 0.30-0.50 too much clipping,
    # > 0.50 severe; the issue names 0.3 as the heuristic default.
    "clip_ratio_high": 0.3,
    # GSPO (importance_sampling_level=sequence): the share of responses the clip touched is the
    # rate the objective acts on (posttrain metrics reference, train/seq_clip_frac). No source
    # gives a range for it; the token bound is the default. Tune it for your clip range.
    "sequence_clip_ratio_high": 0.3,
    # veRL metrics guide section 1.4: pg_clipfrac_lower (dual clip, clip_ratio_c = 3) is usually
    # below 0.1 and rarely triggers. Info: "usually" is no failure statement.
    "dual_clip_ratio_high": 0.1,
    # veRL metrics guide section 2.2: vf_clipfrac 0-0.5, usually < 0.2; > 0.5 restricts the
    # value update.
    "value_clip_ratio_high": 0.5,
    # ---- gradients
    # Gradient explosion: recent mean grad norm this many times its baseline mean (seed 002
    # measured 0.35-4.95 in one healthy run, so the absolute value says little).
    "grad_norm_explosion_factor": 10,
    # Grad norm pinned at the clip: the pre-clip norm at or above max_grad_norm on every
    # sample of a window holding this many steps (a healthy run crosses the clip now and then).
    "grad_clip_pinned_steps": 16,
    # Zero gradient: seed 000 expects some zero-grad skips in GRPO (tied groups); this share
    # of the recent steps skipped means no learning signal.
    "zero_grad_skip_share": 0.9,
    # veRL metrics guide section 1.7: grad_norm < 0.01 = vanishing gradient, learning stalls
    # (the RL metrics dictionary: "the slope is too small to walk"). Every step of the recent
    # window below it, and not exactly 0 (that is RLGradNormZero).
    "grad_norm_vanishing": 0.01,
    # posttrain metrics reference (PPO): policy and critic optimizer counters advance by the
    # same configured number of minibatches per collected batch. More than this many steps
    # apart over the recent window is a role that silently stopped (or skipped) updating.
    "optimizer_steps_divergence": 0.5,
    # ---- GRPO groups (seed 000: watch informative groups first)
    "informative_groups_min_ratio": 0.1,
    # Dynamic sampling (DAPO-style filtering): the share of draws the filter keeps.
    "dynamic_filter_pass_min_ratio": 0.05,
    # ---- lengths
    # seed 002 measured 0.02-0.43 truncated in a healthy 1,024-token run; seed 004 calls
    # 85 % at the limit a reason to raise the limit. Default just above the healthy max.
    "truncation_ratio_high": 0.5,
    # Without a truncation share: mean response length this close to the configured limit.
    "length_limit_mean_ratio": 0.9,
    # Reward hacking hint (seed 001: "eval flat but reward up -> is response_length moving?").
    "length_drop_ratio": 0.25,
    "reward_rise_ratio": 0.05,
    # Validation regression: best validation score of the validation_window minus this much,
    # with at least validation_min_changes new validation results in that window. Validation
    # runs every tens of steps (hours on slow steps), so the window is days, not an hour.
    "validation_window": Dur(172800),
    "validation_drop": 0.05,
    "validation_min_changes": 2,
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
    # The train/inference gap of stale samples includes policy drift, not only engine
    # disagreement (AReaL metrics tracking, train_infer): a mismatch rise that comes with a
    # staleness rise of at least this many versions over the same windows is drift.
    "mismatch_staleness_rise": 1,
    "dp_imbalance_ratio": 0.5,         # balanced_max / balanced_min - 1 (veRL after balancing)
    # MoE: a layer's max/ideal load this many times its own baseline. With 64-128 experts
    # max/ideal is routinely 2-4, so an absolute bound pages on healthy models.
    "moe_imbalance_rise_factor": 1.5,
    # ---- efficiency (seed 004 section 7.4: > 40 % excellent, 30-40 % good, < 20 % poor;
    # the issue names MFU > 30 % as the heuristic)
    "mfu_low": 0.3,
    "throughput_drop_ratio": 0.5,
    # Phase names a run uses to report a pause of the whole run (the Miles lab's heat guard:
    # `with exporter.timer("heat_guard"):` around the cool-down). The Miles lab ranges hold only
    # for steps no heat-guard pause touched, so a step window a pause touched is no timing
    # evidence: RLThroughputDrop skips it, and RLPhaseHung does not count a pause as a hang.
    "pause_phases": "pause|heat_guard|thermal_pause",
    # ---- GPU (seed 004 problem 3: max_memory close to total memory = OOM next)
    # NVML usage alone is ~95 % on a healthy RL job (the rollout engine pre-allocates its KV
    # cache, the caching allocator keeps what it reserved): read the trainer's peak allocated
    # bytes, or NVML usage that is near full AND still growing over the baseline.
    "gpu_memory_full_ratio": 0.95,
    "gpu_memory_growth_ratio": 0.03,
    # Fixed wall-clock window for hardware signals (they do not move with steps).
    "gpu_window": Dur(600),
    # Share of the gpu_window the clocks were held down (rate of the violation-time counter,
    # or the average of the sampled clock-event state). software_power_cap is left out: a GPU
    # at its power limit under full training load is normal; add it if your fleet runs below
    # its cap.
    "throttle_time_ratio": 0.2,
    "throttle_counter_reasons": "thermal",
    "throttle_reasons": "hardware_slowdown|hardware_thermal_slowdown|software_thermal_slowdown|"
                        "hardware_power_brake_slowdown",
    # ---- agentic: max turns this many times their baseline, and at least turns_runaway_min
    "turns_runaway_factor": 3,
    "turns_runaway_min": 8,
}

# Window tiers and the baseline length in recent windows.
TIERS = (1, 2, 3, 4)
BASELINE_FACTOR = 4


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
    labels: dict = field(default_factory=dict)
    why_critical: str = ""                 # docs/alerts.md: why this one may wake someone

    @property
    def metrics(self) -> tuple[str, ...]:
        """Catalog metrics the alert reads, through the recording rules it uses."""
        return tuple(sorted(reads(self.expr) - {"up"}))


R = "{{ $labels.run }}"
PRIMARY = '{{stat="", split=""}}'   # the mean/primary training series of a metric
STEP = "rl_training_step"
SEGMENT_START = "rl_run_segment_start_timestamp_seconds"


def _steps(i: int) -> str:
    return f"run:rl_training_step:changes_w{i}"


def _ladder(value: str, min_steps: str = "{recent_min_steps}", by: str = "run") -> str:
    """`value` (with {W}, {BW}: the window and its baseline window) over the shortest window
    tier holding at least `min_steps` step changes, per run."""
    parts = []
    for i in TIERS:
        v = value.replace("{W}", f"{{w{i}}}").replace("{BW}", f"{{bw{i}}}")
        parts.append(f"  ({v})\n  and on (run) ({_steps(i)} >= {min_steps})")
    return "(\n" + "\nor\n".join(parts) + "\n)"


def _over(fn: str, metric: str, sel: str = PRIMARY, by: str = "run", agg: str | None = None,
          baseline: bool = False) -> str:
    agg = agg or {"avg_over_time": "avg", "max_over_time": "max", "min_over_time": "min"}.get(fn, "max")
    rng = "[{BW}] offset {W}" if baseline else "[{W}]"
    if fn == "median":
        return f"max by ({by}) (quantile_over_time(0.5, {metric}{sel}{rng}))"
    return f"{agg} by ({by}) ({fn}({metric}{sel}{rng}))"


def _alternatives(fn, alts, by="run", baseline=False) -> str:
    """The first of several (metric, selector) sources a run has, per label set of `by`."""
    return " or ".join(_over(fn, m, sel, by, baseline=baseline) for m, sel in alts)


READY = "run:rl_step_window:baseline_steps"
# 1 where the recent and baseline windows the ladder picks reach back over the run's last
# segment start (a restart, a second run in the same log: rl_run_segment_start_timestamp_seconds),
# 0 where both begin after it; absent for a run with no seam. No baseline counts across a seam.
SEAM = "run:rl_step_window:crosses_segment_start"
STALE_SEL = '{{stat="", split="", reference=""}}'



def _pair(name: str, alts, by: str = "run", fn: str = "avg_over_time",
          base_fn: str = "avg_over_time") -> list[Recording]:
    """Recent level (`<level>:<name>:avg_recent`) and its baseline (`..:avg_baseline`, present only
    with enough baseline steps and past warm-up) of a step-windowed metric."""
    level = by.replace(", ", "_")
    op = fn.split("_")[0]
    bop = base_fn.split("_")[0]
    return [Recording(f"{level}:{name}:{op}_recent", _ladder(_alternatives(fn, alts, by), by=by)),
            Recording(f"{level}:{name}:{bop}_baseline",
                      _ladder(_alternatives(base_fn, alts, by, baseline=True), by=by)
                      + f"\nand on (run) {READY}")]


def _recordings() -> list[Recording]:
    out = [Recording(_steps(i), f"max by (run) (changes({STEP}[{{w{i}}}]))") for i in TIERS]
    out += [Recording(f"run:rl_training_step:changes_bw{i}",
                      f"max by (run) (changes({STEP}[{{bw{i}}}] offset {{w{i}}}))") for i in TIERS]
    # `< bool`: the tier the ladder picks has a 0 or 1 here, so `or` never falls through to a
    # longer tier whose windows reach back further
    out.append(Recording(SEAM, "(\n" + "\nor\n".join(
        f"  (time() - max by (run) ({SEGMENT_START}) < bool {{wbs{i}}})\n"
        f"  and on (run) ({_steps(i)} >= {{recent_min_steps}})" for i in TIERS) + "\n)"))
    out.append(Recording(READY, "(\n" + "\nor\n".join(
        f"  run:rl_training_step:changes_bw{i} and on (run) ({_steps(i)} >= {{recent_min_steps}})"
        for i in TIERS) + "\n) >= {baseline_min_steps}\n"
        f"and on (run) max by (run) ({STEP}) >= {{warmup_steps}}\n"
        f"unless on (run) {SEAM} == 1"))
    out += [
        # the raw task score first (veRL critic/score, slime/Miles rollout/raw_reward); the
        # trainer's reward (shaped, or group-normalised on slime/Miles) only where there is none
        *_pair("rl_task_reward", [("rl_score", PRIMARY), ("rl_reward", PRIMARY)]),
        *_pair("rl_entropy", [("rl_entropy", PRIMARY)]),
        # medians: one skipped step's Inf must not move the level
        *_pair("rl_grad_norm", [("rl_grad_norm", PRIMARY)], fn="median", base_fn="median"),
        Recording("run:rl_grad_norm:max_baseline",
                  _ladder(_over("max_over_time", "rl_grad_norm", baseline=True)) + f"\nand on (run) {READY}"),
        # one name for the KL to the reference (veRL actor/kl_loss, slime kl_loss, TRL kl)
        # ... or, where a run logs none, the KL it folds into the reward (veRL use_kl_in_reward:
        # actor/reward_kl_penalty, critic/kl; slime/Miles rollout/kl), before the coefficient.
        # AReaL's kl_rewards is the negative per-token penalty and never crosses a KL bound;
        # TRL's non_score_reward is a sum (stat="sum") and not selected.
        *_pair("rl_reference_kl", [("rl_reference_kl", PRIMARY), ("rl_reward_kl_penalty", PRIMARY)]),
        Recording("run:rl_reference_kl_max:avg_baseline",
                  _ladder(_over("avg_over_time", "rl_reference_kl", '{{stat="max", split=""}}', baseline=True))
                  + f"\nand on (run) {READY}"),
        *_pair("rl_response_length_tokens", [("rl_response_length_tokens", PRIMARY)]),
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
        # staleness against the last published checkpoint (AReaL theta, reference=""), not the
        # proximal policy's (reference="proximal"): two references, never averaged together
        *_pair("rl_sample_staleness_steps", [("rl_sample_staleness_steps", STALE_SEL)]),
        *_pair("rl_preference_reward_margin", [("rl_preference_reward_margin", PRIMARY)]),
        *_pair("rl_moe_load_imbalance_ratio", [("rl_moe_load_imbalance_ratio", PRIMARY)], by="run, layer"),
        # turns: the per-step maximum where logged (veRL num_turns/max), else the mean (AReaL
        # rollout/num_turns); recent maximum against the baseline mean
        *_pair("rl_turns", [("rl_turns", '{{stat="max", split=""}}'), ("rl_turns", PRIMARY)],
               fn="max_over_time"),
        *_pair("hw_gpu_memory_usage_bytes", [("hw_gpu_memory_usage_bytes", "")], by="run, instance, gpu"),
        Recording("run:rl_training_step_timestamp_seconds:age",
                  f"time() - max by (run) (rl_training_step_timestamp_seconds)"),
    ]
    return out


RECORDINGS: list[Recording] = _recordings()


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
_FLEET_TARGETS = "max by (job, instance, run) (last_over_time(rl_run_info[{fleet_window}]))"
_FLEET_UP_RATIO = f"avg by (run) ({_FLEET_TARGETS} * on (job, instance) group_left () up)"
_FLEET_AGE = "(time() - max by (run) (rl_training_step_timestamp_seconds))"
FLEET_STATES = {5: "finished", 4: "failed", 3: "stalled", 2: "restarting", 1: "running"}
_FLEET_WHEN = [
    (5, "max by (run) (last_over_time(rl_training_step[{fleet_window}]))\n"
        "  >= on (run) max by (run) (last_over_time(rl_config_value"
        '{{parameter="total_training_steps"}}[{fleet_window}]))'),
    (4, 'ALERTS{{alertstate="firing", severity="critical", alertname!~"RLRunStalled|RLExporterDown"}}\n'
        f"  or {_FLEET_UP_RATIO} == 0"),
    (3, 'ALERTS{{alertstate="firing", alertname="RLRunStalled"}}\n'
        f"  or {_FLEET_AGE} > on (run) clamp_min({{stall_step_factor}} * max by (run) "
        '(max_over_time(rl_step_duration_seconds{{stat="", split=""}}[{w4}])), '
        "{stall_floor_seconds})\n"
        f"  or ({_FLEET_AGE} > {{stall_floor_seconds}} unless on (run) rl_step_duration_seconds)"),
    (2, "resets(rl_exporter_frames_received_total[{fleet_rate_window}]) > 0\n"
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




def _recent(fn: str, metric: str, sel: str = PRIMARY, by: str = "run") -> str:
    return _ladder(_over(fn, metric, sel, by), by=by)


def _nonfinite_persists(metrics) -> str:
    """Where a metric was NaN/Inf on every sample of a window holding nonfinite_persist_steps
    steps. min_over_time and max_over_time skip NaN unless every sample is NaN, so both are
    non-finite exactly when no finite sample is left (x != x is NaN; abs(x) == +Inf is infinite)."""
    def nonfinite(fn, x):
        v = f"{fn}({x}[{{W}}])"
        return f"(({v} != bool {v}) + (abs({v}) == bool +Inf))"
    parts = []
    for m in metrics:
        x = f'{m}{{{{split=""}}}}'
        both = f"{nonfinite('min_over_time', x)} * {nonfinite('max_over_time', x)}"
        parts.append(f'label_replace(max by (run) ({both}), "metric", "{m}", "", "")')
    return _ladder(" or ".join(parts), "{nonfinite_persist_steps}") + " == 1"


def _increase_per_step(counter_sel: str) -> str:
    """How many times a counter rose per step change in the recent window (ladder)."""
    parts = []
    for i in TIERS:
        parts.append(f"  (max by (run) (increase({counter_sel}[{{w{i}}}])) / on (run) {_steps(i)})\n"
                     f"  and on (run) ({_steps(i)} >= {{recent_min_steps}})")
    return "(\n" + "\nor\n".join(parts) + "\n)"


def _increase_recent(counter_sel: str, by: str = "run") -> str:
    return _ladder(f"max by ({by}) (increase({counter_sel}[{{W}}]))", by=by)


_PAUSE_OPEN = 'rl_phase_in_progress_start_timestamp_seconds{{phase=~"{pause_phases}"}}'
_PAUSE_TIME = 'rl_phase_duration_seconds{{phase=~"{pause_phases}"}}'


def _paused() -> str:
    """Runs where a pause phase (pause_phases) was open at some scrape, or a pause's duration
    was published, in the recent step window or its baseline window (ladder)."""
    parts = []
    for rng in ("[{W}]", "[{BW}] offset {W}"):
        parts.append(f"max by (run) (max_over_time({_PAUSE_OPEN}{rng}) > 0)")
        parts.append(f"max by (run) (changes({_PAUSE_TIME}{rng}) > 0)")
    return _ladder(" or ".join(parts))


# A run that reached its configured total steps (rl_config_value{parameter="total_training_steps"},
# captured by the integrations) has finished, not stalled.
_FINISHED = ("(max by (run) (rl_training_step) >= on (run) max by (run) "
             "(rl_config_value{{parameter=\"total_training_steps\"}} > 0))")

TRUNC_SEL = '{{stat="", split="", subset=""}}'
CLIP_SEL = '{{stat="", split="", bound=""}}'
CONFIG_SEL = 'rl_config_value{{parameter="{}"}}'

ALERTS: list[Alert] = [
    # ============================================================ liveness (page)
    Alert("RLRunStalled", "critical",
          "run:rl_training_step_timestamp_seconds:age > on (run) (\n"
          "  clamp_min({stall_step_factor} * {time_scale}max by (run) "
          "(max_over_time(rl_step_duration_seconds{{stat=\"\", split=\"\"}}[{w4}])), "
          "{stall_floor_seconds})\n"
          "  or on (run) (0 * run:rl_training_step_timestamp_seconds:age + {stall_floor_seconds})\n)\n"
          # a finished run (last step == the configured total) whose exporter still serves
          "unless on (run)\n" + _FINISHED,
          Dur(300), "An RL run stopped advancing its training step while its exporter is up.",
          f"Run {R} has not advanced its training step for {{{{ $value | humanizeDuration }}}} "
          "(longer than max(floor, k x its longest recent step)).",
          why_critical="Certain: the step counter is the run's own, read from a live exporter, and "
                       "the run has not reached its configured total steps (a finished run whose "
                       "exporter keeps serving does not page). Persistent: no step for max(30 min, "
                       "5x the longest step of 5 h 20 min), so no checkpoint or validation pause "
                       "qualifies. Fatal: GPUs are held and nothing trains."),
    Alert("RLExporterDown", "critical",
          "max by (job, instance, run) (last_over_time(rl_run_info[{w4}]))\n"
          "* on (job, instance) group_left ()\n"
          "(up{{{exporter_job_selector}}} == 0)\n"
          "or\n(up{{{exporter_job_selector}}} == 0) unless on (job, instance) "
          "last_over_time(rl_run_info[{w3}])",
          Dur(300), "Prometheus cannot scrape an rl-exporter target (trainer crashed or exporter gone).",
          "Target {{ $labels.instance }} (run {{ if $labels.run }}{{ $labels.run }}{{ else }}unknown"
          "{{ end }}) has been down: up == {{ $value }}.",
          why_critical="Certain: Prometheus itself failed every scrape for 5 minutes of a target that "
                       "service discovery still lists (a finished pod leaves discovery, it does not go "
                       "down). Persistent: 5 minutes, many scrapes. Fatal: the trainer process that "
                       "serves /metrics is dead or hung, and every other alert is blind."),
    # ============================================================ numerics
    Alert("RLNonFiniteLoss", "critical",
          _nonfinite_persists(("rl_loss", "rl_policy_loss", "rl_value_loss")),
          Dur(60), "An RL run's loss has stayed NaN or infinite over several steps.",
          f"Run {R} reports {{{{ $labels.metric }}}} non-finite on every step of the last "
          "[[nonfinite_persist_steps]] or more (value {{ $value }}).",
          why_critical="Certain: NaN/Inf is not a statistical judgement. Persistent: every evaluation "
                       "over a window holding >= [[nonfinite_persist_steps]] steps saw it, so a lone skipped step "
                       "cannot page. "
                       "Fatal: a loss that stays non-finite means the weights or the optimizer state "
                       "are poisoned; every further step is wasted."),
    Alert("RLOptimizerNonFiniteSkips", "critical",
          "max by (run) (rl_optimizer_consecutive_nonfinite_skips{{split=\"\"}}) >= "
          "{nonfinite_consecutive_skips}",
          Dur(60), "The optimizer keeps rejecting updates for a non-finite loss or gradient.",
          f"Run {R} skipped {{{{ $value }}}} updates in a row for a non-finite loss or gradient.",
          why_critical="Certain: the trainer's own finite-gradient guard counts it. Persistent: >= "
                       "[[nonfinite_consecutive_skips]] rejections in a row (the counter resets on the first update that lands). "
                       "Fatal: no update lands, the run trains nothing."),
    Alert("RLNonFiniteGradSkipped", "warning",
          _increase_recent('rl_exporter_nonfinite_values_total{{metric="rl_grad_norm"}}')
          + " >= {nonfinite_grad_repeats}\nor\n"
          + _increase_recent("rl_optimizer_nonfinite_skips_total") + " >= {nonfinite_grad_repeats}",
          Dur(60), "Updates with a non-finite gradient norm keep being skipped.",
          f"Run {R}: {{{{ $value }}}} non-finite gradient norms (skipped updates) in the recent "
          "step window.",
          ),
    # ============================================================ outcome
    Alert("RLRewardCollapse", "warning",
          "(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_drop_ratio} * abs(run:rl_task_reward:avg_baseline)\n"
          "and\n(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_drop_min}",
          Dur(60), "The task reward dropped sharply below the run's own recent level.",
          f"Run {R}: mean task reward fell by {{{{ printf \"%.3f\" $value }}}} below its baseline "
          "over the preceding steps."),
    # ============================================================ policy causes (ticket)
    Alert("RLEntropyCollapse", "warning",
          "run:rl_entropy:avg_recent\n< {entropy_collapse_ratio} * run:rl_entropy:avg_baseline",
          Dur(60), "Policy entropy collapsed relative to the run's own recent level.",
          f"Run {R}: mean entropy is {{{{ printf \"%.3f\" $value }}}}, under "
          "[[entropy_collapse_ratio]]x its baseline over the preceding steps."),
    Alert("RLPolicyKLSpike", "warning",
          _recent("avg_over_time", "rl_policy_kl") + " > {policy_kl_high}",
          Dur(60), "KL between the sampling and the updated policy is far above its healthy range.",
          f"Run {R}: mean PPO KL (ppo_kl) is {{{{ printf \"%.4f\" $value }}}} over the recent steps."),
    Alert("RLReferenceKLRunaway", "warning",
          "(\n"
          "  run:rl_reference_kl:avg_recent\n"
          "  > {reference_kl_runaway_factor} * (run:rl_reference_kl:avg_baseline > {reference_kl_baseline_min})\n"
          "  and run:rl_reference_kl:avg_recent > {reference_kl_min}\n"
          ")\nor\n"
          "(run:rl_reference_kl:avg_recent > {reference_kl_high} and on (run) " + READY + ")",
          Dur(60), "KL to the reference policy is running away from its recent level.",
          f"Run {R}: mean KL to the reference is {{{{ printf \"%.4f\" $value }}}}: several "
          "times its baseline over the preceding steps, or far above the healthy range."),
    Alert("RLKLSingleTokenDominates", "warning",
          'max by (run) (rl_reference_kl{{stat="max", split=""}})\n'
          '/ max by (run) (rl_reference_kl{{stat="", split=""}}) > {kl_max_over_mean}\n'
          'and on (run)\nmax by (run) (rl_reference_kl{{stat="max", split=""}})\n'
          "> {kl_max_jump_factor} * run:rl_reference_kl_max:avg_baseline\n"
          "and on (run)\nmax by (run) (rl_grad_norm{{stat=\"\", split=\"\"}})\n"
          "> run:rl_grad_norm:max_baseline",
          Dur(60), "One token owns the step: kl_max jumped orders of magnitude above kl_mean with a "
          "grad-norm jump.",
          f"Run {R}: kl_max / kl_mean = {{{{ printf \"%.0f\" $value }}}}, kl_max far above its "
          "baseline, and the gradient norm above anything in the baseline window."),
    Alert("RLClipFractionHigh", "warning",
          _recent("avg_over_time", "rl_policy_clip_ratio", CLIP_SEL) + " > {clip_ratio_high}\nor\n"
          + _recent("avg_over_time", "rl_policy_sequence_clip_ratio") + " > {sequence_clip_ratio_high}",
          Dur(60), "The PPO ratio clip binds a large share of tokens (or, under GSPO, of responses) "
          "for many steps.",
          f"Run {R}: clip fraction is {{{{ printf \"%.2f\" $value }}}} on average over the recent steps."),
    Alert("RLDualClipFractionHigh", "info",
          _recent("avg_over_time", "rl_policy_clip_ratio", '{{stat="", split="", bound="dual"}}')
          + " > {dual_clip_ratio_high}",
          Dur(60), "The dual-clip lower bound binds more negative-advantage tokens than usual.",
          f"Run {R}: dual-clip fraction (pg_clipfrac_lower) is {{{{ printf \"%.2f\" $value }}}} on "
          "average over the recent steps."),
    Alert("RLClipFractionNonZeroOnPolicy", "warning",
          _recent("max_over_time", "rl_policy_clip_ratio", CLIP_SEL) + " > 0\n"
          "and on (run)\nmax by (run) (" + CONFIG_SEL.format("n_mini") + ") == 1",
          Dur(60), "Clip fraction is non-zero although the run takes one mini-batch per step (a bug).",
          f"Run {R} reports clip fraction {{{{ printf \"%.4f\" $value }}}} with one mini-batch per "
          "step, where the ratio is identically 1."),
    Alert("RLGradNormExplosion", "warning",
          "run:rl_grad_norm:median_recent\n> {grad_norm_explosion_factor} * run:rl_grad_norm:median_baseline",
          Dur(60), "Gradient norm exploded relative to the run's own baseline.",
          f"Run {R}: median gradient norm is {{{{ printf \"%.3g\" $value }}}}, more than "
          "[[grad_norm_explosion_factor]]x its baseline over the preceding steps."),
    Alert("RLGradNormPinnedAtClip", "info",
          _ladder(_over("min_over_time", "rl_grad_norm"), "{grad_clip_pinned_steps}") + "\n"
          ">= on (run) max by (run) (" + CONFIG_SEL.format("max_grad_norm") + " > 0)",
          Dur(60), "The gradient norm sits at or above the clip on every step: every update is clipped.",
          f"Run {R}: the smallest pre-clip gradient norm of the last [[grad_clip_pinned_steps]]+ "
          "steps is {{ printf \"%.3g\" $value }}, at or above max_grad_norm (learning rate too "
          "high?)."),
    Alert("RLGradNormZero", "warning",
          _recent("max_over_time", "rl_grad_norm") + " == 0\nor\n"
          + _increase_per_step("rl_optimizer_zero_grad_skips_total") + " >= {zero_grad_skip_share}",
          Dur(60), "The gradient has been exactly zero: the run gets no learning signal.",
          f"Run {R}: gradient norm (or zero-gradient skips per step) is {{{{ $value }}}} over the "
          "recent steps."),
    Alert("RLGradNormVanishing", "warning",
          "(\n" + _recent("max_over_time", "rl_grad_norm") + "\n< {grad_norm_vanishing}\n) > 0",
          Dur(60), "The gradient norm stayed below the vanishing-gradient bound on every recent step.",
          f"Run {R}: the largest gradient norm of the recent steps is {{{{ printf \"%.2g\" $value }}}}, "
          "under [[grad_norm_vanishing]] (learning stalls)."),
    Alert("RLOptimizerStepsDiverge", "warning",
          _ladder("abs(\n    max by (run) (increase(rl_optimizer_steps_total{{role=\"policy\"}}[{W}]))\n"
                  "    - on (run) max by (run) (increase(rl_optimizer_steps_total{{role=\"critic\"}}[{W}]))\n  )"
                  "\n  unless on (run) max by (run) (max_over_time(rl_actor_warmup[{W}]) > 0)")
          + " > {optimizer_steps_divergence}",
          Dur(60), "PPO's policy and critic optimizers no longer advance together.",
          f"Run {R}: policy and critic optimizer steps differ by {{{{ printf \"%.0f\" $value }}}} over "
          "the recent steps (they advance by the same number of minibatches)."),
    # the RL metrics dictionary, section 2.6: a learning rate that suddenly drops to 0 is a
    # configuration bug (a schedule decaying to 0 reaches it only at its last step)
    Alert("RLLearningRateZero", "warning",
          _recent("max_over_time", "rl_learning_rate") + " == 0\n"
          "and on (run)\n" + _ladder(_over("max_over_time", "rl_learning_rate", baseline=True)) + " > 0\n"
          f"unless on (run) {SEAM} == 1",
          Dur(60), "The learning rate dropped to exactly 0: the updates change nothing.",
          f"Run {R}: the learning rate is {{{{ $value }}}} on every recent step after a non-zero "
          "baseline (a schedule or configuration bug)."),
    Alert("RLNoInformativeGroups", "warning",
          "(\n"
          + _recent("avg_over_time", "rl_groups", '{{outcome="informative", split=""}}')
          + "\n/ on (run)\n" + _recent("avg_over_time", "rl_groups", '{{outcome="total", split=""}}')
          + "\n  unless on (run) max by (run) (rl_dynamic_sampling_refill_rounds or "
            "rl_dynamic_filter_pass_ratio or rl_dynamic_filter_dropped)\n"
          "or\n  1 - " + _recent("avg_over_time", "rl_group_zero_std_ratio") + "\n"
          "or\n  1 - " + _ladder('sum by (run) (avg_over_time(rl_group_outcome_ratio{{outcome=~"all_zero|all_one", '
                                 'split=""}}[{W}]))') + "\n"
          "or\n  1 - " + _ladder('avg by (run) (avg_over_time(rl_advantage_sign_ratio{{sign="zero", stat="", '
                                 'split=""}}[{W}]))') + "\n"
          ") < {informative_groups_min_ratio}\n"
          "or\n" + _recent("avg_over_time", "rl_dynamic_filter_pass_ratio") + " < {dynamic_filter_pass_min_ratio}\n"
          "or\n(\n" + _recent("max_over_time", "rl_score", '{{stat="max", split=""}}')
          + "\n  - " + _recent("min_over_time", "rl_score", '{{stat="min", split=""}}') + "\n) == 0",
          Dur(60), "Almost no GRPO group has differing rewards: the reward does not discriminate.",
          f"Run {R}: only {{{{ $value | humanizePercentage }}}} of GRPO groups (or draws kept by "
          "dynamic sampling) are informative."),
    # ============================================================ data (ticket)
    Alert("RLResponseTruncationHigh", "warning",
          _recent("avg_over_time", "rl_response_truncated_ratio", TRUNC_SEL) + " > {truncation_ratio_high}\n"
          "or\n(\n" + _recent("avg_over_time", "rl_response_length_tokens")
          + "\n  / on (run) max by (run) (" + CONFIG_SEL.format("max_response_length") + " > 0)\n"
          ") > {length_limit_mean_ratio}\n"
          "unless on (run) max by (run) (rl_response_truncated_ratio" + TRUNC_SEL + ")",
          Dur(60), "A large share of responses is cut at the length limit.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of responses hit the length limit (or the "
          "mean length is that share of the limit)."),
    Alert("RLLengthFallingRewardRising", "warning",
          "run:rl_response_length_tokens:avg_recent\n"
          "< (1 - {length_drop_ratio}) * run:rl_response_length_tokens:avg_baseline\n"
          "and on (run)\nrun:rl_task_reward:avg_recent\n"
          "> (1 + {reward_rise_ratio}) * run:rl_task_reward:avg_baseline",
          Dur(60), "Responses get shorter while reward rises: a reward-hacking hint.",
          f"Run {R}: mean response length fell to {{{{ printf \"%.0f\" $value }}}} tokens while "
          "reward rose above its baseline."),
    Alert("RLValidationRegressing", "warning",
          'max by (run, data_source) (\n'
          '  max_over_time(rl_validation_score{{stat="", tier!="aux"}}[{validation_window}])\n'
          '  - rl_validation_score{{stat="", tier!="aux"}}\n)\n> {validation_drop}\n'
          'and on (run, data_source)\nmax by (run, data_source) (changes(rl_validation_score{{stat="", '
          'tier!="aux"}}[{validation_window}])) >= {validation_min_changes}\n'
          "and on (run)\nrun:rl_task_reward:avg_recent >= run:rl_task_reward:avg_baseline",
          Dur(60), "Validation score is falling while training reward keeps rising.",
          f"Run {R}: validation on {{{{ $labels.data_source }}}} is {{{{ printf \"%.3f\" $value }}}} "
          "below its best of the validation window while train reward rises."),
    # ============================================================ critic / preference (ticket)
    Alert("RLCriticNotLearning", "warning",
          _recent("max_over_time", "rl_value_explained_variance") + " < 0\n"
          "and on (run)\nmax by (run) (rl_training_step) > {critic_warmup_steps}",
          Dur(60), "The critic explains less return variance than a constant after warm-up.",
          f"Run {R}: value explained variance is {{{{ printf \"%.3f\" $value }}}} (below 0) on every "
          "recent step after warm-up."),
    Alert("RLValueClipFractionHigh", "warning",
          _recent("avg_over_time", "rl_value_clip_ratio") + " > {value_clip_ratio_high}",
          Dur(60), "The value clip binds most value predictions: the critic update is restricted.",
          f"Run {R}: value clip fraction is {{{{ printf \"%.2f\" $value }}}} on average over the "
          "recent steps."),
    Alert("RLPreferenceOverfit", "warning",
          _recent("min_over_time", "rl_preference_accuracy_ratio") + "\n> {preference_accuracy_high}\n"
          "and on (run)\n(\n"
          + _recent("min_over_time", "rl_validation_loss", '{{stat=""}}') + "\n"
          "  >= (1 - {validation_flat_ratio}) * "
          + _ladder(_over("min_over_time", "rl_validation_loss", '{{stat=""}}', baseline=True))
          + f"\n  and on (run) {READY}\n)",
          Dur(60), "Preference accuracy is near 1.0 while validation does not improve (overfit).",
          f"Run {R}: training preference accuracy is {{{{ $value | humanizePercentage }}}} and the "
          "validation loss stopped improving."),
    Alert("RLRewardModelMarginCollapse", "warning",
          "run:rl_preference_reward_margin:avg_recent\n"
          "< {margin_collapse_ratio} * run:rl_preference_reward_margin:avg_baseline\n"
          "and run:rl_preference_reward_margin:avg_baseline > 0",
          Dur(60), "The chosen-minus-rejected reward margin is collapsing towards 0.",
          f"Run {R}: reward margin fell to {{{{ printf \"%.3f\" $value }}}}, a fraction of its "
          "baseline over the preceding steps."),
    # ============================================================ systems (ticket / info)
    Alert("RLTrainInferenceMismatchRising", "warning",
          "(\n(\n  run:rl_train_inference_logprob_abs_diff:avg_recent\n"
          "  / run:rl_train_inference_logprob_abs_diff:avg_baseline > {mismatch_rise_factor}\n"
          "  and run:rl_train_inference_logprob_abs_diff:avg_recent > {logprob_diff_min}\n)\n"
          "or\n(\n  run:rl_train_inference_kl:avg_recent\n"
          "  / run:rl_train_inference_kl:avg_baseline > {mismatch_rise_factor}\n"
          "  and run:rl_train_inference_kl:avg_recent > {train_inference_kl_min}\n)\n)\n"
          "unless on (run)\n(\n  run:rl_sample_staleness_steps:avg_recent - run:rl_sample_staleness_steps:avg_baseline\n"
          "  >= {mismatch_staleness_rise}\n)",
          Dur(60), "Trainer and inference engine disagree more and more on token log-probs.",
          f"Run {R}: train/inference mismatch is {{{{ printf \"%.1f\" $value }}}}x its baseline over "
          "the preceding steps."),
    # AReaL metrics tracking: the fraction of valid tokens whose trainer or engine log-prob is NaN
    # or infinite; with any, the tail ratios are NaN and the gap statistics are not comparable.
    Alert("RLTrainInferenceNonFinite", "warning",
          _recent("min_over_time", "rl_train_inference_nonfinite_ratio") + " > 0",
          Dur(60), "Trainer or engine log-probs are non-finite on valid tokens, step after step.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of valid tokens (at least) had a NaN or "
          "infinite log-prob on every recent step."),
    Alert("RLSampleStalenessHigh", "warning",
          "run:rl_sample_staleness_steps:avg_recent > {staleness_max_steps}",
          Dur(60), "Async samples come from policies many versions old.",
          f"Run {R}: samples are {{{{ printf \"%.1f\" $value }}}} policy versions stale on average."),
    Alert("RLDataParallelImbalance", "info",
          "(\n" + _recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="balanced_max", split=""}}')
          + "\n/ on (run) " + _recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="balanced_min", split=""}}')
          + "\nor\n" + _recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="max", split=""}}')
          + "\n/ on (run) " + _recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="min", split=""}}')
          + "\n) - 1 > {dp_imbalance_ratio}",
          Dur(1800), "Tokens per data-parallel rank are unbalanced after balancing: the busiest rank "
          "sets the pace.",
          f"Run {R}: the busiest data-parallel rank gets {{{{ $value | humanizePercentage }}}} more "
          "tokens than the least busy one (veRL balanced partition)."),
    Alert("RLMoEExpertImbalance", "warning",
          "run_layer:rl_moe_load_imbalance_ratio:avg_recent\n"
          "> {moe_imbalance_rise_factor} * run_layer:rl_moe_load_imbalance_ratio:avg_baseline",
          Dur(60), "One MoE layer's expert load drifted far from its own balance.",
          f"Run {R}: MoE layer {{{{ $labels.layer }}}} hottest expert carries {{{{ printf \"%.2f\" $value }}}}x "
          "its ideal load, [[moe_imbalance_rise_factor]]x that layer's baseline."),
    Alert("RLMFULow", "info",
          _recent("avg_over_time", "rl_mfu_ratio", '{{stat="", split="", phase="train"}}', by="run, role")
          + " < {mfu_low}",
          Dur(1800), "Training model-FLOPs utilisation has been low for a long time.",
          f"Run {R}: {{{{ $labels.role }}}} training MFU is {{{{ $value | humanizePercentage }}}}."),
    Alert("RLThroughputDrop", "warning",
          "run_phase:rl_throughput:avg_recent\n"
          "< {throughput_drop_ratio} * run_phase:rl_throughput:avg_baseline\n"
          "unless on (run)\n" + _paused(),
          Dur(60), "Tokens per second dropped well below the run's own baseline.",
          f"Run {R}: {{{{ $labels.phase }}}} throughput is {{{{ printf \"%.0f\" $value }}}} tokens/s, "
          "under half its baseline over the preceding steps."),
    Alert("RLGPUMemoryNearFull", "warning",
          "max by (run) (rl_gpu_memory_peak_bytes{{kind=\"allocated\"}})\n"
          "/ on (run) min by (run) (hw_gpu_memory_limit_bytes) > {gpu_memory_full_ratio}\n"
          "or\n(\n  run_instance_gpu:hw_gpu_memory_usage_bytes:avg_recent\n"
          "  / on (run, instance, gpu) max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > {gpu_memory_full_ratio}\n"
          "  and on (run, instance, gpu)\n"
          "  (run_instance_gpu:hw_gpu_memory_usage_bytes:avg_recent - run_instance_gpu:hw_gpu_memory_usage_bytes:avg_baseline)\n"
          "  / on (run, instance, gpu) max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > {gpu_memory_growth_ratio}\n)",
          Dur(60), "The trainer's own GPU memory peak is nearly the whole GPU, or usage is near full "
          "and still growing: the next long batch may OOM.",
          f"Run {R}: GPU memory is {{{{ $value | humanizePercentage }}}} of the device (allocated peak, "
          "or NVML usage still growing)."),
    Alert("RLGPUThrottling", "warning",
          'max by (run, instance, gpu) (rate(hw_gpu_clock_event_seconds_total{{reason=~"{throttle_counter_reasons}"}}'
          "[{gpu_window}])) > {throttle_time_ratio}\n"
          "or\nmax by (run, instance, gpu) (avg_over_time(hw_gpu_clock_event_active{{"
          'reason=~"{throttle_reasons}"}}[{gpu_window}])) > {throttle_time_ratio}',
          Dur(300), "A GPU is held back by thermal or hardware throttling for a good share of the time.",
          f"Run {R}: GPU {{{{ $labels.gpu }}}} clocks were held down {{{{ $value | humanizePercentage }}}} "
          "of the last window."),
    Alert("RLMultiTurnRunaway", "warning",
          "run:rl_turns:max_recent\n"
          "> {turns_runaway_factor} * run:rl_turns:avg_baseline\n"
          "and run:rl_turns:max_recent >= {turns_runaway_min}",
          Dur(60), "Multi-turn rollouts run far more turns than the run's own baseline.",
          f"Run {R}: a rollout took {{{{ $value }}}} turns, several times the recent level."),
]
# Config values in annotation text are written [[name]] (Go templates own the braces).
_CONFIG_IN_TEXT = re.compile(r"\[\[(\w+)\]\]")

# Alertmanager inhibitions where one alert explains another (source explains target, same run).
CAUSES: list[tuple[str, str]] = [
    ("RLEntropyCollapse", "RLClipFractionHigh"),      # seed 001: reward drop -> entropy, then clipfrac
    ("RLPolicyKLSpike", "RLClipFractionHigh"),        # seed 004: large KL comes with heavy clipping
    ("RLNoInformativeGroups", "RLGradNormZero"),      # seed 000: tied groups give a zero gradient
    ("RLNoInformativeGroups", "RLGradNormVanishing"),
    ("RLNonFiniteLoss", "RLGradNormExplosion"),       # NaN/Inf already explains the gradient
    ("RLGPUThrottling", "RLThroughputDrop"),          # clocks held down: steps are slow
    ("RLGPUThrottling", "RLMFULow"),
    ("RLDataParallelImbalance", "RLMFULow"),          # seed 001: slow -> global_seqlen/minmax_diff
    ("RLKLSingleTokenDominates", "RLGradNormExplosion"),
    # AReaL metrics tracking: for stale rollouts the train/inference gap includes policy drift
    ("RLSampleStalenessHigh", "RLTrainInferenceMismatchRising"),
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
    # Engine series and NVML phase time are sampled in wall time, not per step: one fixed
    # window, like the GPU alerts' gpu_window.
    "engine_window": Dur(600),
})

_ROLLOUT = '{{phase=~"{rollout_phases}"}}'


def _tail(metric: str) -> str:
    q = "histogram_quantile({q}, sum by (run, le) (rate(" + metric + "_bucket[{{engine_window}}])))"
    return q.format(q="0.99") + "\n/ " + q.format(q="0.5") + "\n> {long_tail_ratio}"


ALERTS += [
    # A warning, not a page: "6x the phase's own median" is a statistical judgement (a longer
    # response batch or a pause of the whole run also stretches an open phase). RLRunStalled
    # pages once no step advanced at all.
    Alert("RLPhaseHung", "warning",
          "(time() - max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds"
          '{{phase!~"{pause_phases}"}}))\n'
          "> on (run, instance, phase) (\n"
          "  clamp_min({phase_hung_factor} * max by (run, instance, phase) "
          "(rl_phase_recent_median_duration_seconds), {phase_hung_floor_seconds})\n"
          "  or on (run, instance, phase)\n"
          "  (0 * max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds) "
          "+ {phase_hung_no_history_seconds})\n)\n"
          # a pause of the whole run (heat guard) holds every open phase: not a hang
          "unless on (run) max by (run) (" + _PAUSE_OPEN + " > 0)",
          Dur(120), "A training phase has been open far longer than it usually takes: hung inside a step?",
          f"Run {R}: phase {{{{ $labels.phase }}}} has been open for {{{{ $value | humanizeDuration }}}}, "
          "over [[phase_hung_factor]]x its recent median and the floor."),
    Alert("RLRolloutGPUIdle", "warning",
          "(\n"
          f"  sum by (run) (rate(hw_gpu_phase_idle_seconds_total{_ROLLOUT}[{{engine_window}}]))\n"
          f"  / (sum by (run) (rate(hw_gpu_phase_idle_seconds_total{_ROLLOUT}[{{engine_window}}]))\n"
          f"     + sum by (run) (rate(hw_gpu_phase_busy_seconds_total{_ROLLOUT}[{{engine_window}}])))\n"
          "  > {rollout_gpu_idle_ratio}\n)\n"
          "or\n(\n"
          "  1 - clamp_max(sum by (run) (\n"
          "    max_over_time(vllm:num_requests_running[{engine_window}])\n"
          "    or max_over_time(sglang:num_running_reqs[{engine_window}])), 1) == 1\n"
          "  and on (run)\n"
          f"  max by (run) (time() - rl_phase_in_progress_start_timestamp_seconds{_ROLLOUT})"
          " > {rollout_engine_idle_seconds}\n)",
          Dur(600), "Rollout GPUs sit idle while the run waits for rollouts.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of rollout GPU time is idle while a rollout "
          "phase is in progress (NVML per-phase time, or engines running no request)."),
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
          "abort window."),
    Alert("RLRolloutKVCacheThrash", "warning",
          "(\n"
          "  max by (run, instance) (avg_over_time(vllm:kv_cache_usage_perc[{engine_window}]))"
          " > {kv_cache_high_ratio}\n"
          "  and on (run, instance)\n"
          "  sum by (run, instance) (increase(vllm:num_preemptions_total[{engine_window}]))"
          " > {kv_thrash_preemptions}\n)\nor\n(\n"
          "  max by (run, instance) (avg_over_time(sglang:token_usage[{engine_window}]))"
          " > {kv_cache_high_ratio}\n"
          "  and on (run, instance)\n"
          "  sum by (run, instance) (increase(sglang:num_retracted_requests_total[{engine_window}]))"
          " > {kv_thrash_preemptions}\n)",
          Dur(600), "A rollout engine's KV cache is full and it keeps preempting requests.",
          f"Run {R}: engine {{{{ $labels.instance }}}} KV cache is {{{{ $value | humanizePercentage }}}} "
          "full while it keeps preempting (recomputing) requests."),
    Alert("RLRolloutLongTail", "warning",
          "(\n" + _tail("vllm:e2e_request_latency_seconds") + "\n)\nor\n(\n" +
          _tail("sglang:e2e_request_latency_seconds") + "\n)",
          Dur(900), "A few very long rollout requests hold up every step (p99 far above p50).",
          f"Run {R}: rollout request latency p99 is {{{{ printf \"%.1f\" $value }}}}x the median."),
    # Every engine target of the run down: one engine of several down while the others serve
    # slows the rollout (RLThroughputDrop, RLRolloutGPUIdle) but is not fatal, so it does not page.
    Alert("RLRolloutEngineDown", "critical",
          "count by (run) (up{{{engine_job_selector}}} == 0)\n"
          "unless on (run) max by (run) (up{{{engine_job_selector}}} == 1)\n"
          "and on (run)\ncount by (run) (rl_run_info)",
          Dur(300), "Every rollout engine of a run is down while its trainer is still running.",
          f"Run {R}: all {{{{ $value }}}} rollout engine targets are down while the trainer still exports.",
          why_critical="Certain: every scrape of every engine target of the run that discovery still "
                       "lists failed. Persistent: 5 minutes, as RLExporterDown. Fatal: the trainer "
                       "waits on rollouts that no engine will produce. One engine of several down "
                       "while the others serve does not page."),
]

# A dead engine explains hung rollouts and idle GPUs. (RLPhaseHung, a warning, must not mute
# the RLRunStalled page.)
CAUSES += [
    ("RLRolloutEngineDown", "RLPhaseHung"),
    ("RLRolloutEngineDown", "RLRolloutGPUIdle"),
]


# ------------------------------------------------------------------ rendering
duration = format_duration  # the rule files' duration strings (exporter/promql.py)


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
    out = {"time_scale": "" if time_scale == 1 else f"{_num(time_scale)} * "}
    for k, v in cfg.items():
        if isinstance(v, Dur):
            out[k] = duration(v.seconds * time_scale) if "window" in k else _num(v.seconds * time_scale)
        else:
            out[k] = v if isinstance(v, str) else _num(v)
    for i in TIERS:
        w = cfg[f"step_window_{i}"].seconds * time_scale
        out[f"w{i}"] = duration(w)
        out[f"bw{i}"] = duration(w * BASELINE_FACTOR)
        out[f"wbs{i}"] = _num(w * (1 + BASELINE_FACTOR))  # both windows, in seconds
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
