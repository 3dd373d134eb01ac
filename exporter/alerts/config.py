"""Every threshold, window and `for:` of rl-exporter's rules, named in one place (the
monitoring-mixin `_config`): each entry says where its number comes from. Overrides
(`render({"thresholds": ...})`, the chart's `prometheusRule.thresholds`) address them by name.
"""
from __future__ import annotations

from dataclasses import dataclass

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
    # ... and by this many per-step standard deviations of the baseline window: the recent mean
    # of >= 5 steps against a 4x longer baseline has a standard error of at most 0.5 sigma, so
    # 1.5 sigma is three of them. A reward that swings 0-2.5 from one prompt to the next (TRL
    # with one prompt a step) drops 30 % over five steps by chance; a collapse does not need luck.
    "reward_noise_sigmas": 1.5,
    # ---- trends: a slow drift moves the baseline along with it, so recent-vs-baseline rules
    # never see it; the best baseline level of the trend window (TREND_FACTOR recent windows,
    # 50-200 steps) does. Reward declining: the recent mean this fraction of |best| below the
    # best (and by reward_drop_min): RLRewardCollapse's ratio, against the level held earlier.
    "reward_decline_ratio": 0.3,
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
    # (a baseline median at or under grad_norm_vanishing is no normal level to multiply: runs
    # whose gradient is exactly 0 on most steps of a window have a baseline median of ~0)
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
    # Length runaway: mean length grown this factor over the trend while at least this share
    # is truncated (the veRL metrics guide: 0.1-0.3 acceptable, over 0.5 raise the limit) and
    # the reward did not improve: the cap binds and the extra tokens buy nothing.
    "length_runaway_factor": 2,
    "length_runaway_truncation": 0.2,
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
# The trend window, in recent windows (a structural constant like the two above: the windows
# are computed at render time, so it is not a tunable threshold).
TREND_FACTOR = 10
# The task reward is judged over windows this many times the rung's (10-40 steps, baselines
# and the trend window with them): it is the noisiest series a trainer logs (a mean over a few
# groups, in multiples of 1/group size), and some trainers log it on rollout steps only, every
# other step, so five steps would hold two or three values of it.
REWARD_WINDOW_FACTOR = 2


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


# ================================================================== goodput and restarts
# Goodput (rl_goodput_seconds_total{bucket}, docs/goodput.md) and the crash loop. Restart
# numbers follow NVIDIA's Resiliency Extension (the fault-tolerance launcher's progress
# tracker stops a job whose restarts never advance the checkpoint; Megatron Bridge's
# FaultTolerancePlugin allows 3 in-job restarts by default).
CONFIG.update({
    # Goodput ratio and per-bucket shares per run and per fleet: one hour, the window of the
    # ratio the overview's stat shows. (The recording names say 1h: the default.)
    "goodput_window": Dur(3600),
    # GPU-hours by bucket per run for the fleet table: the last day.
    "goodput_fleet_window": Dur(86400),
    # A crash loop: this many restarts (the run's step went back, or its exporter's counters
    # reset) within a step window (the ladder's tiers, so a loop of 30 s steps and one of
    # 10 min steps are both seen) ... the launcher's default budget of in-job restarts: past
    # it an ordinary restart policy gives up, and a looping one does not.
    "restart_loop_count": 3,
    # ... while the highest step of the window got past the highest before it by fewer than
    # this many steps (the launcher's --ft-min-progress-iterations defaults to 1).
    "restart_min_progress_steps": 1,
})


# ================================================================== ranks of one run
# Every rank that exports (the hook on each rank: `Exporter(rank=...)` or RANK from the launcher,
# one endpoint per rank) is its own scrape target: its `instance` tells ranks apart and its
# rl_run_info carries the `rank` label the alert joins on.
CONFIG.update({
    # A rank is a straggler in a phase when every one of its durations over the shortest step
    # window holding straggler_steps steps is above straggler_factor x the run's median rank
    # (each rank's median over the same window). NVIDIA's resiliency extension (straggler
    # detection) scores each rank's section time relative to a reference rank and leaves the
    # threshold to the user; the median of ranks is the reference here, so one unusually fast
    # rank does not make every other rank look slow. 1.5: every synchronous step waits a third
    # of that phase again for the one rank, while healthy per-rank jitter of a phase (uneven
    # sequence lengths after balancing, veRL's global_seqlen/minmax_diff) stays within
    # +-20 %, so the slowest healthy step of one rank is not 1.5x the median rank's.
    "straggler_factor": 1.5,
    "straggler_steps": 5,
    # The median of two ranks cannot tell the slow rank from the one that waits for it: in a
    # synchronous run the fast rank's wait lands in the phase holding the next collective,
    # which then looks as slow on the fast rank as the straggler's own phase. From three
    # ranks on the median is a rank that neither straggles nor waits alone.
    "straggler_min_ranks": 3,
    # The rank must also lose this much time per step over the median rank: a 20 ms phase
    # that takes 60 ms on one rank is 3x slower and costs nothing.
    "straggler_min_excess_seconds": Dur(5),
})
