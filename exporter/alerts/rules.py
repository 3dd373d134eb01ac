"""The rule set: every area's alerts in order, and the inhibitions between them.

One file per area in exporter/alerts/areas/ (thresholds in exporter/alerts/config.py, recording rules in
exporter/alerts/recordings.py); exporter/alerts/render.py writes the rule file. Adding an alert: append it to
its area's ALERTS, name its numbers in CONFIG, add its promtool case and runbook section.
"""
from __future__ import annotations
from .areas import critic, data, liveness, numerics, outcome, phases, policy, ranks, systems
from .model import Alert

# Rendered in this order (the rule file's order).
AREAS = (liveness, numerics, outcome, policy, data, critic, systems, ranks, phases)
ALERTS: list[Alert] = [a for area in AREAS for a in area.ALERTS]

# Alertmanager inhibitions where one alert explains another (source explains target, same run).
CAUSES: list[tuple[str, str]] = [
    ("RLEntropyCollapse", "RLClipFractionHigh"),
    ("RLRewardCollapse", "RLRewardDeclining"),        # the sharp drop already says it      # seed 001: reward drop -> entropy, then clipfrac
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
    # A dead engine explains hung rollouts and idle GPUs. (RLPhaseHung, a warning, must not
    # mute the RLRunStalled page.)
    ("RLRolloutEngineDown", "RLPhaseHung"),
    ("RLRolloutEngineDown", "RLRolloutGPUIdle"),
]


def alert(name: str) -> Alert:
    for a in ALERTS:
        if a.name == name:
            return a
    raise KeyError(name)
