"""Which alerts each `rl-exporter demo --scenario` must fire (the end-to-end test's table).

scenario -> {alert: catalog metrics the scenario must feed for the alert to be expected}.
An alert whose metrics come from a vocabulary the catalog lacks is expected silent (and
reported), exactly as it would be for a real run of that framework. `crash` is a healthy run
whose trainer dies after 30 steps (`--steps 30 --exit-after`).
"""
from __future__ import annotations

EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    "healthy": {},
    "entropy-collapse": {"RLEntropyCollapse": (), "RLClipFractionHigh": (), "RLRewardCollapse": ()},
    # veRL's actor/kl_loss is the reference KL: the spike takes it along
    "kl-spike": {"RLPolicyKLSpike": (), "RLClipFractionHigh": (), "RLReferenceKLRunaway": ()},
    "nan-loss": {"RLNonFiniteLoss": (),
                 "RLOptimizerNonFiniteSkips": ("rl_optimizer_consecutive_nonfinite_skips",),
                 "RLNonFiniteGradSkipped": ()},
    "grad-explosion": {"RLGradNormExplosion": (), "RLGradNormPinnedAtClip": ()},
    "length-truncation": {"RLResponseTruncationHigh": ()},
    "no-signal": {"RLNoInformativeGroups": (), "RLGradNormZero": (), "RLRewardCollapse": ()},
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
    "validation-regression": {"RLValidationRegressing": ()},
    # a healthy trainer that dies after 30 steps: its exporter goes with it
    "crash": {"RLExporterDown": ()},
}
