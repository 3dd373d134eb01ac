"""promtool unit tests as data: for every alert a series that fires it (full labels and
annotations asserted) and a healthy series that must stay silent (seed 002's measured
ranges, seed 004's healthy ranges, the demo's healthy run). Rendered to
exporter/alerts/tests/rl-exporter.test.yaml by `python -m exporter.alerts test-file` (generated, not committed)."""
from __future__ import annotations
from .rules import ALERTS
from .render import render, yaml_text
from .paths import RULES_FROM_TESTS

from .series import alt, s


# name -> (fire series, eval, extra labels, description), (silent series, eval)
CASES: dict[str, dict] = {
    "RLRunStalled": dict(
        fire=[s("rl_training_step_timestamp_seconds", "0+60x10 600x50"),
              s("rl_step_duration_seconds", "60x60")],
        at="50m", desc="Run r has not advanced its training step for 40m 0s (longer than max(floor, k x "
                       "its longest recent step)).",
        # 10-minute steps: 40 minutes without a step is under 5 x 600 s, not a stall
        silent=[s("rl_training_step_timestamp_seconds", "0+60x10 600x40"),
                s("rl_step_duration_seconds", "600x50")], silent_at="50m"),
    "RLExporterDown": dict(
        fire=[{"series": 'up{job="rl-exporter", instance="h:9464"}', "values": "1x10 0x20"},
              {"series": 'rl_run_info{job="rl-exporter", instance="h:9464", run="r", framework="verl"}',
               "values": "1x10 _x20"}],
        at="25m", labels={"job": "rl-exporter", "instance": "h:9464"},
        desc="Target h:9464 (run r) has been down: up == 0.",
        silent=[{"series": 'up{job="rl-exporter", instance="h:9464"}', "values": "1x30"},
                {"series": 'rl_run_info{job="rl-exporter", instance="h:9464", run="r"}', "values": "1x30"}],
        silent_at="25m"),
    # a crash loop from minute 60: every process resumes from the checkpoint at step 60, gets to
    # step 64 and dies. At 100m the 20-minute window holds 5 step decreases (84, 88, ..., 100m)
    # and its highest step (64) is no higher than the one before it.
    "RLRestartWithoutProgress": dict(
        fire=[s("rl_training_step", "1+1x59 " + " ".join(["61 62 63 64"] * 12))], at="100m",
        desc="Run r restarted 5 times within a recent step window and its step never got past the "
             "highest it had reached before: each restart redoes the same steps.",
        # a flaky node: a restart every 15 minutes, each resuming 5 steps back and moving on (the
        # exporter's counters reset too); 7 restarts, and every window's step is past the last
        silent=[s("rl_training_step", " ".join(str(m + 1 - 5 * (m // 15)) for m in range(121))),
                s("rl_exporter_frames_received_total", " ".join(str(10 * (m % 15)) for m in range(121)))],
        silent_at="120m"),
    "RLNonFiniteLoss": dict(
        fire=[s("rl_policy_loss", "0.01 0.01 " + " ".join(["NaN"] * 14)), s("rl_grad_norm", "0.5x15")],
        at="15m", labels={"metric": "rl_policy_loss"}, desc='Run r reports rl_policy_loss non-finite on every step of the last 3 or more (value 1).',
        silent=[s("rl_policy_loss", "0.01 -0.01 0.005 0 0.01 0.002"), s("rl_grad_norm", "0.35 4.95 1 2 0.5 0.6"),
                s("rl_loss", "0.3x5")], silent_at="5m"),
    "RLOptimizerNonFiniteSkips": dict(
        fire=[s("rl_optimizer_consecutive_nonfinite_skips", "0 0 1+1x14")],
        at="15m", desc="Run r skipped 14 updates in a row for a non-finite loss or gradient.",
        silent=[s("rl_optimizer_consecutive_nonfinite_skips", "1 0 2 0 1 0 2 0")], silent_at="7m"),
    "RLRewardCollapse": dict(
        fire=[s("rl_reward", "0.6x80 0.2x20")], at="90m",
        desc='Run r: mean task reward fell by 0.364 below its baseline over the preceding steps.',
        silent=[s("rl_reward", " ".join(str(round(0.53 + 0.0035 * i + (0.03 if i % 2 else -0.03), 4))
                                        for i in range(100)))], silent_at="95m"),
    # 10 steps of warm-up, then a slow slide 0.6 -> 0.3 over 120 steps: each step-to-step
    # comparison stays under RLRewardCollapse's bar, the best level held earlier does not
    "RLRewardDeclining": dict(
        fire=[s("rl_reward", "0.6x30 0.6-0.0025x119")], at="150m",
        desc='Run r: mean task reward is 0.282 below the best level it held over the last tens of '
             'steps: a slow decline the step-to-step baseline follows.',
        silent=[s("rl_reward", " ".join(str(round(0.53 + 0.0015 * i + (0.03 if i % 2 else -0.03), 4))
                                        for i in range(150)))], silent_at="150m"),
    "RLEntropyCollapse": dict(
        fire=[s("rl_entropy", "1x80 0.2x20")], at="95m",
        desc='Run r: mean entropy is 0.200, under 0.4x its baseline over the preceding steps.',
        silent=[s("rl_entropy", "1.2-0.008x99")], silent_at="95m"),
    "RLPolicyKLSpike": dict(
        fire=[s("rl_policy_kl", "0.004x30 0.08x20")], at="45m",
        desc='Run r: mean PPO KL (ppo_kl) is 0.0800 over the recent steps.',
        silent=[s("rl_policy_kl", alt(0.001, 0.01, 25))], silent_at="45m"),
    "RLClipFractionHigh": dict(
        fire=[s("rl_policy_clip_ratio", "0.12x30 0.45x30")], at="55m",
        desc='Run r: clip fraction is 0.45 on average over the recent steps.',
        silent=[s("rl_policy_clip_ratio", alt(0.05, 0.3, 30)),
                s("rl_policy_clip_ratio", "0.6x60", bound="dual")], silent_at="55m"),
    "RLGradNormExplosion": dict(
        fire=[s("rl_grad_norm", "0.6x80 15x15")], at="90m",
        desc='Run r: median gradient norm is 15, more than 10x its baseline over the preceding steps.',
        silent=[s("rl_grad_norm", alt(0.35, 4.95, 45))], silent_at="85m"),
    "RLGradNormZero": dict(
        fire=[s("rl_grad_norm", "0.5x20 0x20")], at="40m",
        desc='Run r: gradient norm (or zero-gradient skips per step) is 0 over the recent steps.',
        silent=[s("rl_grad_norm", alt(0.5, 0, 20))], silent_at="40m"),
    "RLNoInformativeGroups": dict(
        fire=[s("rl_groups", "45x10 2x20", outcome="informative"), s("rl_groups", "64x30", outcome="total")],
        at="30m", desc='Run r: only 3.125% of GRPO groups (or draws kept by dynamic sampling) are informative.',
        silent=[s("rl_groups", "45x30", outcome="informative"), s("rl_groups", "64x30", outcome="total"),
                s("rl_group_zero_std_ratio", "0.3x30"), s("rl_score", "1x30", stat="max"),
                s("rl_score", "0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", stat="min")],
        silent_at="30m"),
    # veRL logs no group counts: a batch whose best and worst score tie has no informative group
    "RLNoInformativeGroups (veRL score spread)": dict(
        alert="RLNoInformativeGroups",
        fire=[s("rl_score", "1x10 0x20", stat="max"), s("rl_score", "0x30", stat="min")], at="30m",
        desc='Run r: only 0% of GRPO groups (or draws kept by dynamic sampling) are informative.',
        silent=[s("rl_score", "1x30", stat="max"), s("rl_score", "0x30", stat="min")], silent_at="30m"),
    "RLResponseTruncationHigh": dict(
        fire=[s("rl_response_truncated_ratio", "0.02x10 0.8x30")], at="40m",
        desc='Run r: 80% of responses hit the length limit (or the mean length is that share of the limit).',
        silent=[s("rl_response_truncated_ratio", "0.02+0.01x40"),
                s("rl_response_truncated_ratio", "0.9x40", subset="non_aborted")], silent_at="40m"),
    # length triples from 1,000 tokens in 60 steps while truncation climbs past 0.2 and the
    # reward stays flat; silent: the same growth with the reward rising (a run learning to reason)
    "RLResponseLengthRunaway": dict(
        fire=[s("rl_response_length_tokens", "1000x30 1000+40x60"),
              s("rl_response_truncated_ratio", "0.02x30 0.02+0.005x60"), s("rl_reward", "0.5x90")],
        at="90m",
        desc='Run r: mean response length is 3260 tokens, over 2x its lowest level of the last tens of '
             'steps, with more than 0.2 of responses truncated and no reward gain.',
        silent=[s("rl_response_length_tokens", "1000x30 1000+40x60"),
                s("rl_response_truncated_ratio", "0.02x30 0.02+0.005x60"),
                s("rl_reward", "0.3x30 0.3+0.008x60")], silent_at="90m"),
    "RLValidationRegressing": dict(
        fire=[s("rl_validation_score", "0.5+0.005x60 0.8-0.01x40", data_source="gsm8k", var="acc",
                estimator="mean", n="1", tier="core"),
              s("rl_reward", "0.5+0.003x100")],
        at="100m", labels={"data_source": "gsm8k"},
        desc='Run r: validation on gsm8k is 0.390 below its best of the validation window while train reward rises.',
        silent=[s("rl_validation_score", "0.3+0.004x100", data_source="gsm8k", var="acc", estimator="mean",
                  n="1", tier="core"), s("rl_reward", "0.2+0.006x100")], silent_at="100m"),
    "RLCriticNotLearning": dict(
        fire=[s("rl_value_explained_variance", "-0.3x40"), s("rl_training_step", "0+5x40")], at="40m",
        desc='Run r: value explained variance is -0.300 (below 0) on every recent step after warm-up.',
        silent=[s("rl_value_explained_variance", "-0.5+0.03x40"), s("rl_training_step", "0+5x40")],
        silent_at="40m"),
    "RLPreferenceOverfit": dict(
        fire=[s("rl_preference_accuracy_ratio", "0.99x120"), s("rl_validation_loss", "0.6x120")], at="110m",
        desc="Run r: training preference accuracy is 99% and the validation loss stopped improving.",
        silent=[s("rl_preference_accuracy_ratio", "0.99x120"), s("rl_validation_loss", "0.9-0.004x120")],
        silent_at="110m"),
    "RLSampleStalenessHigh": dict(
        fire=[s("rl_sample_staleness_steps", "1x10 7x30")], at="40m",
        desc="Run r: samples are 7.0 policy versions stale on average.",
        silent=[s("rl_sample_staleness_steps", alt(1, 3, 20))], silent_at="40m"),
    "RLDataParallelImbalance": dict(
        fire=[s("rl_dp_rank_tokens", "1000x60", stat="balanced_min"),
              s("rl_dp_rank_tokens", "2000x60", stat="balanced_max")], at="50m",
        desc="Run r: the busiest data-parallel rank gets 100% more tokens than the least busy one "
             "(veRL balanced partition).",
        # veRL's global_seqlen/max,min are the split before balancing: far apart on a healthy run
        silent=[s("rl_dp_rank_tokens", "1000x60", stat="balanced_min"),
                s("rl_dp_rank_tokens", "1080x60", stat="balanced_max"),
                s("rl_dp_rank_tokens", "2200x60", stat="max"), s("rl_dp_rank_tokens", "500x60", stat="min")],
        silent_at="50m"),
    # every step clipped: the pre-clip norm never comes below max_grad_norm over 16+ steps
    "RLGradNormPinnedAtClip": dict(
        fire=[s("rl_grad_norm", "0.5x20 2x40"), s("rl_config_value", "1x60", parameter="max_grad_norm")],
        at="55m", desc="Run r: the smallest pre-clip gradient norm of the last 16+ steps is 2, at or above "
                       "max_grad_norm (learning rate too high?).",
        # seed 002: 0.35-4.95 with a 1.0 clip, crossing it on many steps but not all
        silent=[s("rl_grad_norm", alt(0.35, 4.95, 30)), s("rl_config_value", "1x60", parameter="max_grad_norm")],
        silent_at="55m"),
    "RLMFULow": dict(
        fire=[s("rl_mfu_ratio", "0.15x100", role="actor", phase="train", source="framework")], at="80m",
        labels={"role": "actor"}, desc="Run r: actor training MFU is 15%.",
        silent=[s("rl_mfu_ratio", "0.38x100", role="actor", phase="train", source="framework"),
                s("rl_mfu_ratio", "0.22x100", role="actor", phase="inference", source="framework")],
        silent_at="80m"),
    "RLGPUThrottling": dict(
        fire=[s("hw_gpu_clock_event_active", "1x30", gpu="0", reason="hardware_thermal_slowdown")], at="20m",
        labels={"gpu": "0"},
        desc='Run r: GPU 0 clocks were held down 100% of the last window.',
        # a rare slowdown, idle clocks and the power cap of a fully loaded GPU are not throttling
        silent=[s("hw_gpu_clock_event_active", "0 0 0 0 0 0 0 0 0 1 " * 3, gpu="0", reason="software_thermal_slowdown"),
                s("hw_gpu_clock_event_active", "1x30", gpu="0", reason="gpu_idle"),
                s("hw_gpu_clock_event_active", "1x30", gpu="1", reason="software_power_cap")],
        silent_at="20m"),
    # ---- framework-specific inputs (the review's faults): each fires from its own source
    "RLNoInformativeGroups (dynamic sampling: the pass ratio, not the draws)": dict(
        alert="RLNoInformativeGroups",
        fire=[s("rl_groups", "2x40", outcome="informative"), s("rl_groups", "64x40", outcome="total"),
              s("rl_dynamic_filter_pass_ratio", "0.3x10 0.02x30")], at="30m", desc='Run r: only 2% of GRPO groups (or draws kept by dynamic sampling) are informative.',
        # DAPO-style filtering: group counts cover every draw; the kept batch is informative
        silent=[s("rl_groups", "2x40", outcome="informative"), s("rl_groups", "64x40", outcome="total"),
                s("rl_dynamic_filter_pass_ratio", "0.3x40")], silent_at="30m"),
    "RLNoInformativeGroups (Miles zero-std shares)": dict(
        alert="RLNoInformativeGroups",
        fire=[s("rl_group_outcome_ratio", "0.1x10 0.6x30", outcome="all_zero"),
              s("rl_group_outcome_ratio", "0.05x10 0.38x30", outcome="all_one")], at="30m", desc='Run r: only 2% of GRPO groups (or draws kept by dynamic sampling) are informative.',
        silent=[s("rl_group_outcome_ratio", "0.3x40", outcome="all_zero"),
                s("rl_group_outcome_ratio", "0.2x40", outcome="all_one")], silent_at="30m"),
    "RLNoInformativeGroups (AReaL zero-advantage tokens)": dict(
        alert="RLNoInformativeGroups",
        fire=[s("rl_advantage_sign_ratio", "0.2x10 0.95x30", sign="zero")],
        at="30m", desc='Run r: only 5% of GRPO groups (or draws kept by dynamic sampling) are informative.',
        silent=[s("rl_advantage_sign_ratio", "0.4x40", sign="zero")],
        silent_at="30m"),
    "RLMultiTurnRunaway (AReaL logs the mean only)": dict(
        alert="RLMultiTurnRunaway",
        fire=[s("rl_turns", "3x80 30x20")], at="90m", desc='Run r: a rollout took 30 turns, several times the recent level.',
        silent=[s("rl_turns", "3x100")], silent_at="90m"),
    # seed 001: "KL should grow slowly and steadily; a sudden jump (e.g. 0.02 -> 0.15) is a sharp
    # turn". The first departure from KL 0 (a real healthy TRL run: 0.01 -> 0.2) is not one.
    "RLReferenceKLRunaway (a sharp turn from an established level)": dict(
        alert="RLReferenceKLRunaway",
        fire=[s("rl_reference_kl", "0.025x80 0.15+0.05x20")], at="90m",
        desc="Run r: mean KL to the reference is 0.4750: several times its baseline over the preceding "
             "steps, or far above the healthy range.",
        silent=[s("rl_reference_kl", "0.002x80 0.15+0.002x20")], silent_at="90m"),
    "RLReferenceKLRunaway (far above the healthy range from the start)": dict(
        alert="RLReferenceKLRunaway",
        fire=[s("rl_reference_kl", "3x100")], at="90m",
        desc="Run r: mean KL to the reference is 3.0000: several times its baseline over the preceding "
             "steps, or far above the healthy range.",
        silent=[s("rl_reference_kl", "0.08x100")], silent_at="90m"),
    # veRL use_kl_in_reward (the veRL metrics guide, section 3.6): the KL to the reference is
    # actor/reward_kl_penalty; no actor/kl_loss is logged
    "RLReferenceKLRunaway (veRL's in-reward KL)": dict(
        alert="RLReferenceKLRunaway",
        fire=[s("rl_reward_kl_penalty", "3x100")], at="90m",
        desc="Run r: mean KL to the reference is 3.0000: several times its baseline over the preceding "
             "steps, or far above the healthy range.",
        silent=[s("rl_reward_kl_penalty", "0.08x100")], silent_at="90m"),
    "RLThroughputDrop (slime rollout phase)": dict(
        alert="RLThroughputDrop",
        fire=[s("rl_gpu_throughput_tokens_per_second", "1200x80 300x20", phase="rollout")], at="90m",
        labels={"phase": "rollout"}, desc='Run r: rollout throughput is 300 tokens/s, under half its baseline over the preceding steps.',
        silent=[s("rl_gpu_throughput_tokens_per_second", "1200x100", phase="rollout")], silent_at="90m"),
    "RLRewardCollapse (slime: the raw score, not the group-normalised reward)": dict(
        alert="RLRewardCollapse",
        fire=[s("rl_score", "0.7x80 0.1x20"), s("rl_reward", "0x100")], at="90m", desc='Run r: mean task reward fell by 0.545 below its baseline over the preceding steps.',
        # the normalised reward swings around 0; the raw score holds
        silent=[s("rl_score", "0.7x100"), s("rl_reward", "0x80 -0.3x20")], silent_at="90m"),
    "RLGPUThrottling (violation-time counter)": dict(
        alert="RLGPUThrottling",
        fire=[s("hw_gpu_clock_event_seconds_total", "0+30x30", gpu="0", reason="thermal")], at="25m",
        labels={"gpu": "0"}, desc='Run r: GPU 0 clocks were held down 50% of the last window.',
        # at its power cap under full load: normal
        silent=[s("hw_gpu_clock_event_seconds_total", "0+50x30", gpu="0", reason="power")], silent_at="25m"),
    "RLMoEExpertImbalance (each layer against itself)": dict(
        alert="RLMoEExpertImbalance",
        fire=[s("rl_moe_load_imbalance_ratio", "2x80 4x20", layer="1"),
              s("rl_moe_load_imbalance_ratio", "3.8x100", layer="2")], at="90m",
        labels={"layer": "1"}, desc="Run r: MoE layer 1 hottest expert carries 4.00x its ideal load, 1.5x that layer's baseline.",
        # 128 experts: max/ideal of 2-4 on every layer is the healthy norm
        silent=[s("rl_moe_load_imbalance_ratio", "2.2x100", layer="1"),
                s("rl_moe_load_imbalance_ratio", "3.8x100", layer="2")], silent_at="90m"),
    # AReaL metrics tracking: "the k1 sample estimate can be negative"; compare one estimator
    # at a time. A k3 rise (Miles lab: 0.00063-0.00076 healthy) next to a steady negative k1.
    "RLTrainInferenceMismatchRising (k3 rises beside a negative k1)": dict(
        alert="RLTrainInferenceMismatchRising",
        fire=[s("rl_train_inference_kl", "0.0007x80 0.003x20", estimator="k3"),
              s("rl_train_inference_kl", "-0.0005x100", estimator="k1")], at="90m",
        desc="Run r: train/inference mismatch is 2.4x its baseline over the preceding steps.",
        # k1 moves, k3 holds: the k3 estimate is the one compared
        silent=[s("rl_train_inference_kl", "0.0007x100", estimator="k3"),
                s("rl_train_inference_kl", "-0.0005x80 0.004x20", estimator="k1")], silent_at="90m"),
    # AReaL metrics tracking: "for stale rollouts, differences include policy drift"
    "RLTrainInferenceMismatchRising (the gap doubles while staleness holds)": dict(
        alert="RLTrainInferenceMismatchRising",
        fire=[s("rl_train_inference_logprob_abs_diff", "0.015x80 0.06x20"),
              s("rl_sample_staleness_steps", "1x100")], at="90m",
        desc="Run r: train/inference mismatch is 2.3x its baseline over the preceding steps.",
        silent=[s("rl_train_inference_logprob_abs_diff", "0.015x80 0.06x20"),
                s("rl_sample_staleness_steps", "1x80 5x20")], silent_at="90m"),
    "RLSampleStalenessHigh (theta staleness, not the proximal reference)": dict(
        alert="RLSampleStalenessHigh",
        fire=[s("rl_sample_staleness_steps", "1x10 7x30"),
              s("rl_sample_staleness_steps", "0x40", reference="proximal")], at="40m",
        desc="Run r: samples are 7.0 policy versions stale on average.",
        silent=[s("rl_sample_staleness_steps", "1x40"),
                s("rl_sample_staleness_steps", "9x40", reference="proximal")], silent_at="40m"),
    # the run reached its configured total steps and its exporter (a sidecar) keeps serving
    "RLRunStalled (a finished run is not stalled)": dict(
        alert="RLRunStalled",
        fire=[s("rl_training_step_timestamp_seconds", "0+60x10 600x50"), s("rl_step_duration_seconds", "60x60"),
              s("rl_training_step", "1+1x10 11x50"), s("rl_config_value", "100x60", parameter="total_training_steps")],
        at="50m", desc="Run r has not advanced its training step for 40m 0s (longer than max(floor, k x "
                       "its longest recent step)).",
        silent=[s("rl_training_step_timestamp_seconds", "0+60x10 600x50"), s("rl_step_duration_seconds", "60x60"),
                s("rl_training_step", "1+1x10 11x50"), s("rl_config_value", "11x60", parameter="total_training_steps")],
        silent_at="50m"),
    # Miles lab ranges: time values hold only for steps no heat-guard pause touched
    "RLThroughputDrop (steps a heat-guard pause touched are no evidence)": dict(
        alert="RLThroughputDrop",
        fire=[s("rl_gpu_throughput_tokens_per_second", "1200x80 300x20"),
              s("rl_phase_in_progress_start_timestamp_seconds", " ".join(["NaN"] * 100), phase="gen")], at="90m",
        desc="Run r:  throughput is 300 tokens/s, under half its baseline over the preceding steps.",
        silent=[s("rl_gpu_throughput_tokens_per_second", "1200x80 300x20"),
                s("rl_phase_in_progress_start_timestamp_seconds",
                  " ".join(["NaN"] * 84 + ["5040"] * 3 + ["NaN"] * 13), phase="heat_guard")],
        silent_at="90m"),
    # posttrain metrics reference: under GSPO the sequence-level rate is the one the objective acts on
    "RLClipFractionHigh (GSPO: the sequence clip fraction)": dict(
        alert="RLClipFractionHigh",
        fire=[s("rl_policy_sequence_clip_ratio", "0.1x30 0.5x30"), s("rl_policy_clip_ratio", "0.02x60")],
        at="55m", desc='Run r: clip fraction is 0.50 on average over the recent steps.',
        silent=[s("rl_policy_sequence_clip_ratio", "0.1x60"), s("rl_policy_clip_ratio", "0.02x60")],
        silent_at="55m"),
    # veRL metrics guide section 1.4: pg_clipfrac_lower usually < 0.1
    "RLDualClipFractionHigh": dict(
        fire=[s("rl_policy_clip_ratio", "0.02x30 0.3x30", bound="dual")], at="55m",
        desc="Run r: dual-clip fraction (pg_clipfrac_lower) is 0.30 on average over the recent steps.",
        silent=[s("rl_policy_clip_ratio", "0.02x60", bound="dual"), s("rl_policy_clip_ratio", "0.25x60")],
        silent_at="55m"),
    # veRL metrics guide section 1.7: < 0.01 is a vanishing gradient
    "RLGradNormVanishing": dict(
        # fired while the baseline window still holds the earlier level (its median above 0.01)
        fire=[s("rl_grad_norm", "0.5x25 0.004x20")], at="42m",
        desc="Run r: the largest gradient norm of the recent steps is 0.004, under 0.01 (learning stalls).",
        # exactly 0 is RLGradNormZero's
        silent=[s("rl_grad_norm", "0.5x25 0x20")], silent_at="42m"),
    "RLGradNormVanishing (a gradient always under the bound: a small LoRA adapter)": dict(
        alert="RLGradNormVanishing",
        fire=[s("rl_grad_norm", "0.5x25 0.004x20")], at="42m",
        desc="Run r: the largest gradient norm of the recent steps is 0.004, under 0.01 (learning stalls).",
        silent=[s("rl_grad_norm", " ".join(("0.004", "0.009", "0.02", "0.001", "0.006")[i % 5]
                                           for i in range(60)))], silent_at="55m"),
    # posttrain metrics reference (PPO): both optimizer counters advance by the same minibatches
    "RLOptimizerStepsDiverge": dict(
        fire=[s("rl_optimizer_steps_total", "0+4x40", role="policy"),
              s("rl_optimizer_steps_total", "0+4x20 80x20", role="critic")], at="40m",
        desc="Run r: policy and critic optimizer steps differ by 20 over the recent steps (they advance "
             "by the same number of minibatches).",
        # critic-only warmup (train/actor_warmup = 1): the policy counter rightly stands still
        silent=[s("rl_optimizer_steps_total", "0x40", role="policy"),
                s("rl_optimizer_steps_total", "0+4x40", role="critic"), s("rl_actor_warmup", "1x40")],
        silent_at="15m"),
    # veRL metrics guide section 2.2: vf_clipfrac 0-0.5; > 0.5 restricts the value update
    "RLValueClipFractionHigh": dict(
        fire=[s("rl_value_clip_ratio", "0.1x30 0.7x30")], at="55m",
        desc="Run r: value clip fraction is 0.70 on average over the recent steps.",
        silent=[s("rl_value_clip_ratio", "0.384x60")], silent_at="55m"),
    # AReaL metrics tracking: nonfinite_logp_fraction
    "RLTrainInferenceNonFinite": dict(
        fire=[s("rl_train_inference_nonfinite_ratio", "0x20 0.002x20")], at="40m",
        desc="Run r: 0.2% of valid tokens (at least) had a NaN or infinite log-prob on every recent step.",
        silent=[s("rl_train_inference_nonfinite_ratio", alt(0, 0.01, 20))], silent_at="40m"),
    # the RL metrics dictionary, section 2.6: the LR suddenly at 0 is a configuration bug
    "RLLearningRateZero": dict(
        fire=[s("rl_learning_rate", "1e-6x30 0x20")], at="45m",
        desc="Run r: the learning rate is 0 on every recent step after a non-zero baseline (a schedule "
             "or configuration bug).",
        # warm-up from 0: the baseline was 0 too, so nothing was zeroed
        silent=[s("rl_learning_rate", "0x10 1e-7+1e-7x9 1e-6x30")], silent_at="9m"),
    "RLGPUMemoryNearFull (the trainer's peak, not NVML)": dict(
        alert="RLGPUMemoryNearFull",
        fire=[s("rl_gpu_memory_peak_bytes", "78e9x30", kind="allocated"),
              s("hw_gpu_memory_limit_bytes", "80e9x30", gpu="0")], at="20m", desc='Run r: GPU memory is 97.5% of the device (allocated peak, or NVML usage still growing).',
        # the rollout engine pre-allocated its KV cache: NVML at 96 %, flat
        silent=[s("hw_gpu_memory_usage_bytes", "76.8e9x100", gpu="0"),
                s("hw_gpu_memory_limit_bytes", "80e9x100", gpu="0"),
                s("rl_gpu_memory_peak_bytes", "52e9x100", kind="allocated")], silent_at="90m"),
}


def _steps(series: list[dict]) -> list[dict]:
    """Add a training step per minute (1-minute steps) unless the case brings its own."""
    if any(x["series"].startswith("rl_training_step{") for x in series):
        return series
    return series + [s("rl_training_step", "1+1x200")]


def missing_cases() -> list[str]:
    from .cadence import PATHOLOGIES
    names = {a.name for a in ALERTS}
    covered = {c.get("alert", k) for k, c in CASES.items()} | set(PATHOLOGIES)
    out = [f"{n}: no promtool test case in exporter/alerts/testcases.py" for n in sorted(names - covered)]
    out += [f"{n}: test case for an unknown alert" for n in sorted(covered - names)]
    return out


def render_tests() -> str:
    rules = {r["alert"]: r for g in render()["groups"] for r in g["rules"] if "alert" in r}
    tests = []
    for case, c in CASES.items():
        name = c.get("alert", case)
        r = rules[name]
        labels = {"severity": r["labels"]["severity"]}
        labels["run"] = "r"
        labels.update(c.get("labels", {}))
        tests.append({
            "name": f"{case} fires",
            "interval": "1m",
            "input_series": _steps(c["fire"]),
            "alert_rule_test": [{
                "eval_time": c["at"], "alertname": name,
                "exp_alerts": [{"exp_labels": labels, "exp_annotations": {
                    "summary": r["annotations"]["summary"], "description": c["desc"],
                    "runbook_url": r["annotations"]["runbook_url"]}}],
            }],
        })
        tests.append({
            "name": f"{case} stays silent on healthy series",
            "interval": "1m",
            "input_series": _steps(c["silent"]),
            "alert_rule_test": [{"eval_time": c["silent_at"], "alertname": name, "exp_alerts": []}],
        })
    # recording rules: the step-window ladder, the recent level, its baseline, none in warm-up
    tests.append({
        "name": "recording rules: window chosen by steps, recent level, baseline after warm-up",
        "interval": "1m",
        "input_series": [s("rl_reward", "0.6x80 0.2x20"), s("rl_reward", "1x100", stat="max"),
                         s("rl_training_step", "1+1x100")],
        "promql_expr_test": [
            {"expr": "run:rl_training_step:changes_w1", "eval_time": "100m",
             "exp_samples": [{"labels": 'run:rl_training_step:changes_w1{run="r"}', "value": 5}]},
            {"expr": "run:rl_task_reward:avg_recent", "eval_time": "100m",
             "exp_samples": [{"labels": 'run:rl_task_reward:avg_recent{run="r"}', "value": 0.2}]},
            # 5m holds 5 changes (both ends inclusive): baseline = the 20m before the last 5m
            {"expr": "run:rl_task_reward:avg_baseline", "eval_time": "80m",
             "exp_samples": [{"labels": 'run:rl_task_reward:avg_baseline{run="r"}', "value": 0.6}]},
            {"expr": "run:rl_task_reward:avg_baseline", "eval_time": "15m", "exp_samples": []},
        ],
    })
    # restarts: no baseline across a segment start (exporter/alerts/segment_cases.py)
    from .segment_cases import segment_tests
    tests += segment_tests(rules)
    # goodput: run r (8 GPUs) spends 45 s of each minute stepping and 15 s redoing steps, and its
    # process restarts at 31m (the counters start again from 0); run q (no GPU series: weight 1)
    # spends all of its 59 s a minute redoing steps. Read at 61m, the rules are those of the 60m
    # evaluation (every 5m): the windows hold the samples of 0m-60m, r's step 1350 + 1305 = 2655 s
    # and restart 450 + 435 = 885 s (increase() adds back what the reset dropped; a counter that
    # starts at 0 is not extrapolated), q's restart 59 x 60 s.
    tests.append({
        "name": "recording rules: goodput ratio, bucket shares, fleet ratio by GPUs, GPU-hours",
        "interval": "1m",
        "input_series": [s("rl_goodput_seconds_total", "0+45x30 0+45x30", bucket="step"),
                         s("rl_goodput_seconds_total", "0+15x30 0+15x30", bucket="restart"),
                         {"series": 'rl_goodput_seconds_total{run="q", bucket="restart"}', "values": "0+59x61"}]
        + [s("hw_gpu_memory_limit_bytes", "80e9x61", gpu=str(g)) for g in range(8)],
        "promql_expr_test": [
            {"expr": "run:rl_goodput:ratio_1h", "eval_time": "61m",
             "exp_samples": [{"labels": 'run:rl_goodput:ratio_1h{run="r"}', "value": 0.75},
                             {"labels": 'run:rl_goodput:ratio_1h{run="q"}', "value": 0}]},
            {"expr": 'run_bucket:rl_goodput:share_1h{run="r"}', "eval_time": "61m",
             "exp_samples": [{"labels": 'run_bucket:rl_goodput:share_1h{run="r", bucket="step"}', "value": 0.75},
                             {"labels": 'run_bucket:rl_goodput:share_1h{run="r", bucket="restart"}',
                              "value": 0.25}]},
            # productive GPU-seconds over accounted GPU-seconds: 8 x 2655 / (8 x 3540 + 1 x 3540)
            {"expr": ":rl_goodput:ratio_1h", "eval_time": "61m",
             "exp_samples": [{"labels": ":rl_goodput:ratio_1h", "value": 8 * 2655 / (8 * 3540 + 3540)}]},
            {"expr": 'run_bucket:rl_goodput_gpu_hours:increase_1d{run="r"}', "eval_time": "61m",
             "exp_samples": [{"labels": 'run_bucket:rl_goodput_gpu_hours:increase_1d{run="r", bucket="step"}',
                              "value": 2655 * 8 / 3600},
                             {"labels": 'run_bucket:rl_goodput_gpu_hours:increase_1d{run="r", bucket="restart"}',
                              "value": 885 * 8 / 3600}]},
        ],
    })
    # Rules are evaluated every 5m (series are sampled every 1m): promtool evaluates every rule of
    # the file at every tick of every test group, and 1m ticks made this file take ~1 min on 2 cores.
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": "5m", "tests": tests}
    return yaml_text(doc).replace("# Generated by `python -m exporter.alerts render` from exporter/alerts/.",
                                  "# Generated by `python -m exporter.alerts test-file` from exporter/alerts/testcases.py.")


# Phases in progress, GPU time by phase and rollout engines (exporter/alerts/phase_cases.py).
from .phase_cases import PHASE_CASES  # noqa: E402

CASES.update(PHASE_CASES)

# Ranks of one run against each other (exporter/alerts/rank_cases.py).
from .rank_cases import RANK_CASES  # noqa: E402

CASES.update(RANK_CASES)


def write_test_files() -> list:
    """Write the promtool unit tests (these cases and the cadence matrix) into exporter/alerts/tests/.
    They are generated, not committed: the tests write them before running promtool."""
    from . import cadence
    from .paths import TEST_FILE
    TEST_FILE.write_text(render_tests())
    out = [TEST_FILE]
    for c in cadence.CADENCES:
        cadence.cadence_file(c).write_text(cadence.render_cadence(c))
        out.append(cadence.cadence_file(c))
    return out
