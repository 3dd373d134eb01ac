"""Which alerts each `rl-exporter demo --scenario` must fire (the end-to-end test's table).

scenario -> {alert: catalog metrics the scenario must feed for the alert to be expected}.
An alert whose metrics come from a vocabulary the catalog lacks is expected silent (and
reported), exactly as it would be for a real run of that framework. `crash` is a healthy run
whose trainer dies after 30 steps (`--steps 30 --exit-after`).
"""
from __future__ import annotations

EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    "healthy": {},
    # the reward falls by 85 %: the best level held earlier shows it too
    "entropy-collapse": {"RLEntropyCollapse": (), "RLClipFractionHigh": (), "RLRewardCollapse": (),
                         "RLRewardDeclining": ()},
    # one bad update moves the policy (ppo_kl), not its distance to the reference (kl_loss x1.5)
    "kl-spike": {"RLPolicyKLSpike": (), "RLClipFractionHigh": ()},
    "nan-loss": {"RLNonFiniteLoss": (),
                 "RLOptimizerNonFiniteSkips": ("rl_optimizer_consecutive_nonfinite_skips",),
                 "RLNonFiniteGradSkipped": ()},
    "grad-explosion": {"RLGradNormExplosion": (), "RLGradNormPinnedAtClip": ()},
    # once the reward plateaus, answers at the cap with 90 % cut are a runaway too
    "length-truncation": {"RLResponseTruncationHigh": (), "RLResponseLengthRunaway": ()},
    "no-signal": {"RLNoInformativeGroups": (), "RLGradNormZero": (), "RLRewardCollapse": (),
                  "RLRewardDeclining": ()},
    "stall": {"RLRunStalled": ()},
    "kl-token-spike": {"RLKLSingleTokenDominates": ("rl_reference_kl",)},
    "reference-kl-runaway": {"RLReferenceKLRunaway": ("rl_reference_kl",)},
    "on-policy-clip": {"RLClipFractionNonZeroOnPolicy": ()},
    "critic-not-learning": {"RLCriticNotLearning": ()},
    "dpo-overfit": {"RLPreferenceOverfit": ("rl_preference_accuracy_ratio", "rl_validation_loss")},
    "rm-margin-collapse": {"RLRewardModelMarginCollapse": ("rl_preference_reward_margin",)},
    "train-infer-mismatch": {"RLTrainInferenceMismatchRising": ()},
    "async-staleness": {"RLSampleStalenessHigh": ()},
    "load-imbalance": {"RLDataParallelImbalance": ()},
    "moe-imbalance": {"RLMoEExpertImbalance": ("rl_moe_load_imbalance_ratio",)},
    "mfu-low": {"RLMFULow": ()},
    "throughput-drop": {"RLThroughputDrop": ()},
    "gpu-memory-full": {"RLGPUMemoryNearFull": ()},
    "gpu-throttle": {"RLGPUThrottling": ()},
    "multi-turn-runaway": {"RLMultiTurnRunaway": ()},
    "reward-hacking": {"RLLengthFallingRewardRising": ()},
    "reward-decline": {"RLRewardDeclining": ()},
    "length-runaway": {"RLResponseLengthRunaway": ()},
    "validation-regression": {"RLValidationRegressing": ()},
    "lr-zero": {"RLLearningRateZero": ()},
    "grad-vanishing": {"RLGradNormVanishing": ()},
    "dual-clip": {"RLDualClipFractionHigh": ()},
    "value-clip": {"RLValueClipFractionHigh": ("rl_value_clip_ratio",)},
    "optimizer-diverge": {"RLOptimizerStepsDiverge": ("rl_optimizer_steps_total",)},
    "nonfinite-logprob": {"RLTrainInferenceNonFinite": ("rl_train_inference_nonfinite_ratio",)},
    # a healthy trainer that dies after 30 steps: its exporter goes with it
    "crash": {"RLExporterDown": ()},
}

# Phases in progress and GPU time by phase (exporter/demo/scenarios.py phase_series): a hang
# inside gen stalls the run too, so RLRunStalled fires as well (after RLPhaseHung).
EXPECTED.update({
    "gen-hang": {"RLPhaseHung": ("rl_phase_in_progress_start_timestamp_seconds",),
                 "RLRolloutGPUIdle": ("hw_gpu_phase_idle_seconds_total",), "RLRunStalled": ()},
    "rollout-long-tail": {"RLRolloutGPUIdle": ("hw_gpu_phase_idle_seconds_total",)},
})

# Alerts on the rollout engines' own series: proven end to end against the stand-in engine
# (`python -m exporter.demo.engine --scenario S`) scraped beside the demo with the run's label
# (tests/integration/test_engines_e2e.py). engine scenario -> alerts it must fire.
ENGINE_EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    "healthy": {},
    "long-tail": {"RLRolloutLongTail": ()},
    "aborts": {"RLRolloutAbortsHigh": ()},
    "kv-thrash": {"RLRolloutKVCacheThrash": ()},
    "down": {"RLRolloutEngineDown": ()},
}

# Hang forensics and restarts (exporter/demo/scenarios.py): stuck for good inside update_actor
# (the phase medians are the demo's side series); crash-loop steps look healthy, but every
# process resumes from the same checkpoint and dies again (its goodput restart bucket grows).
EXPECTED.update({
    "hang": {"RLPhaseHung": (), "RLRunStalled": ()},  # the open phase is a real timer()
    "crash-loop": {"RLRestartWithoutProgress": ()},
})

# Alerts that compare the ranks of one run: proven end to end with real torch.distributed (gloo)
# ranks on CPU, an Exporter on each (tests/integration/test_straggler_gloo.py: run gloo-<scenario>).
RANK_EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    "healthy": {},
    "straggler": {"RLRankStraggler": ()},
}
