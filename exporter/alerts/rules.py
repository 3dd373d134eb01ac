"""The rule set: every area's alerts in order, the one CONFIG of named settings, and the
inhibitions between alerts.

One file per area in exporter/alerts/areas/, each alert one record (exporter/alerts/model.py:
expression, thresholds with their sources, annotations, runbook prose, promtool cases, cadence
row); the shared settings in exporter/alerts/config.py, recording rules in
exporter/alerts/recordings.py. `rl-exporter alerts generate` writes everything generated from them.
"""
from __future__ import annotations

from .areas import critic, data, liveness, numerics, outcome, phases, policy, ranks, sanity, systems
from .config import SHARED
from .model import Alert

# Rendered in this order (the rule file's order).
AREAS = (liveness, numerics, sanity, outcome, policy, data, critic, systems, ranks, phases)
ALERTS: list[Alert] = [a for area in AREAS for a in area.ALERTS]


def _config() -> tuple[dict[str, object], dict[str, str]]:
    config, owner = dict(SHARED), {}
    for a in ALERTS:
        for name, t in a.thresholds.items():
            if name in config:
                raise ValueError(f"{a.name}: threshold {name!r} is also "
                                 f"{'shared (config.py)' if name in SHARED else 'of ' + owner[name]}")
            config[name], owner[name] = t.value, a.name
    return config, owner


# Every named setting: the shared ones and each alert's own. OWNER: setting -> the alert it is of.
CONFIG, OWNER = _config()

# Alertmanager inhibitions where one alert explains another (source explains target, same run).
CAUSES: list[tuple[str, str]] = [
    # a crash the trainer reported explains the silence and the dead target that follow it
    # (two pages for one death otherwise: the stall 30 min later, the target 5 min later)
    ("RLRunCrashed", "RLRunStalled"),
    ("RLRunCrashed", "RLExporterDown"),
    ("RLEntropyCollapse", "RLClipFractionHigh"),      # the RL metrics dictionary: reward drop -> entropy, then clipfrac
    ("RLRewardCollapse", "RLRewardDeclining"),        # the sharp drop already says it
    ("RLPolicyKLSpike", "RLClipFractionHigh"),        # the veRL metrics guide: large KL comes with heavy clipping
    ("RLNoInformativeGroups", "RLGradNormZero"),      # the posttrain metrics reference: tied groups give a zero gradient
    # the reward's shape names why no group is informative
    ("RLRewardAllZero", "RLNoInformativeGroups"),
    ("RLRewardAllAtMax", "RLNoInformativeGroups"),
    ("RLRewardConstant", "RLNoInformativeGroups"),
    ("RLNoInformativeGroups", "RLGradNormVanishing"),
    ("RLNonFiniteLoss", "RLGradNormExplosion"),       # NaN/Inf already explains the gradient
    ("RLGPUThrottling", "RLThroughputDrop"),          # clocks held down: steps are slow
    ("RLGPUThrottling", "RLMFULow"),
    ("RLDataParallelImbalance", "RLMFULow"),          # the RL metrics dictionary: slow -> global_seqlen/minmax_diff
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
