"""The settings rl-exporter's rules share (the monitoring-mixin `_config`): the step windows and
their evidence gates, the job selectors, and the thresholds that recording rules or several
alerts read. Each says where its number comes from. A threshold only one alert reads lives in
that alert's record (`thresholds=` in exporter/alerts/areas/<area>.py); exporter/alerts/rules.py
merges both into the one CONFIG that overrides (`render({"thresholds": ...})`), the chart's
`prometheusRule.thresholds` and the runbook address by name.
"""
from __future__ import annotations

from dataclasses import dataclass

RUNBOOK_BASE_URL = "https://github.com/rl-exporter/rl-exporter/blob/main/exporter/rules/runbook.md"
SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True)
class Dur:
    """A duration in seconds; rendered as a Prometheus duration, scaled in tests."""
    seconds: float


# Shared settings. Durations are Dur; everything else is a plain number or a string.
SHARED: dict[str, object] = {
    # ---- step windows (see "Step-aware windows" in docs/alerts.md)
    # A ladder of wall-clock windows. For each run the "recent" window is the shortest one
    # holding at least recent_min_steps step changes, so it spans 5-20 steps whether a step
    # takes 15 s or 30 min; its baseline is the BASELINE_FACTOR x longer window just before it.
    "step_window_1": Dur(300),
    "step_window_2": Dur(1200),
    "step_window_3": Dur(4800),
    "step_window_4": Dur(19200),
    # Evidence: a relative rule needs this many steps in its recent window, this many in its
    # baseline window, and the run past warm-up (the veRL metrics guide: entropy and clip
    # fraction move fast in the first tens of steps).
    "recent_min_steps": 5,
    # Long windows are read at this resolution, as subqueries (`[21h20m:4m]`): the means,
    # medians and spreads of the third and fourth rungs' baselines (exprs.sampled; the third
    # rung at 2 min) and RLValidationRegressing's 2 days. Those rungs answer for steps slower
    # than 4 min, whose every value a 2-4 min sample still sees; a query reads 160-720 points
    # where a 15 s scrape holds 1,280-11,520 samples (doctor and a live Prometheus pay in
    # proportion). Under Prometheus's 5 min lookback, so a sample written once is still seen.
    "long_window_resolution": Dur(240),
    "baseline_min_steps": 20,
    "warmup_steps": 20,
    # ---- liveness (RLRunStalled and the fleet's stalled state)
    # A run is stalled when no step advanced for max(stall_floor, stall_step_factor x the
    # longest step of the last step_window_4): a fixed floor alone pages on 30-minute steps of
    # big models; the floor covers a validation or checkpoint pause of up to 30 minutes.
    "stall_floor_seconds": Dur(1800),
    "stall_step_factor": 5,
    # ---- the run's lifecycle (rl_run_state, docs/alerts.md "How a run ends"): how long a
    # target's last known state is remembered after its last scrape. A static or file-based
    # target of a finished run stays listed and down; its last state (finished) must outlive
    # the window the liveness pages look back over (RLExporterDown read rl_run_info over
    # step_window_4, 5 h 20 min), and a night: 12 h. Every rule that reads it reads a few series
    # per target over it (last_over_time over the state-set member it asks about).
    "lifecycle_window": Dur(43200),
    # ---- fleet (per-run series for the fleet dashboard): a run's targets are those whose
    # rl_run_info named it within fleet_window; restarts and step rates over fleet_rate_window.
    "fleet_window": Dur(3600),
    "fleet_rate_window": Dur(600),
    # Prometheus job(s) that scrape rl-exporter (Helm: the chart's job name).
    "exporter_job_selector": 'job=~".*rl-exporter.*"',
    # Prometheus job(s) that scrape the rollout engines (Helm: the PodMonitor sets job).
    "engine_job_selector": 'job=~".*(rollout-engine|vllm|sglang).*"',
    # ---- the task reward (RLRewardCollapse, RLRewardDeclining, RLResponseLengthRunaway)
    # A drop (or a gain) of the raw task score counts only beyond this much: the Miles lab
    # ranges' healthy per-step range 0.53-0.87 puts a 6-step mean within about +-0.05 of its level.
    "reward_drop_min": 0.05,
    # ... and by this many per-step standard deviations of the baseline window: the recent mean
    # of >= 5 steps against a 4x longer baseline has a standard error of at most 0.5 sigma, so
    # 1.5 sigma is three of them. A reward that swings 0-2.5 from one prompt to the next (TRL
    # with one prompt a step) drops 30 % over five steps by chance; a collapse does not need luck.
    "reward_noise_sigmas": 1.5,
    # ---- gradients (RLGradNormVanishing, RLGradNormExplosion)
    # the veRL metrics guide, section 1.7: grad_norm < 0.01 = vanishing gradient, learning
    # stalls (the RL metrics dictionary: "the slope is too small to walk"). A baseline median at
    # or under it is no normal level for RLGradNormExplosion to multiply either: runs whose
    # gradient is exactly 0 on most steps of a window have a baseline median of ~0.
    "grad_norm_vanishing": 0.01,
    # ---- sanity bounds: values no healthy run has at any step, from step 1 on (no baseline).
    # The live rules need them on every step of a window holding a few steps; doctor also reports
    # a single step (exporter/postmortem/points.py). Measured over the project's corpus of whole
    # public runs (tests/data/runs/) and excerpts (tests/data/real/); docs/postmortem.md.
    # KL to the reference: the veRL metrics guide puts actor/kl_loss at 0.001-0.1 and the RL
    # metrics dictionary at 0.01-0.1; 10x the top of that range. The highest healthy value in the
    # corpus is 0.935 on one step (a TRL GRPO run, its neighbours 0.07 and 0.006), 0.53 held over
    # 3 steps (an on-policy distillation run whose reference is not its initial policy).
    "reference_kl_high": 1.0,
    "reference_kl_persist_steps": 3,
    # Gradient norm against the clip: the veRL metrics guide calls > 10 an explosion and expects
    # the norm under grad_clip (usually 1.0) once clipped; the Miles lab ranges measured
    # 0.35-4.95. Three orders of magnitude above max_grad_norm (above 1000 where no clip is
    # logged): the highest healthy pre-clip norm of an RL run in the corpus is 66x its clip of
    # 1.0, the highest of any run 484 (step 1 of a supervised run).
    "grad_norm_absurd_factor": 1000,
    "grad_norm_absurd_steps": 2,
    # Loss magnitudes only a numerical failure gives: a clipped surrogate is bounded by the
    # advantage times (1 + clip), and the largest healthy advantage in the corpus is 45; the
    # veRL metrics guide's pg_loss range is -0.01..0.01, its early vf_loss 10-100 (scaled by the
    # reward). Healthy maxima in the corpus: |policy loss| 0.89, |loss| 20.5, value loss 18.5.
    "policy_loss_absurd": 100,
    "loss_absurd": 1000,
    "value_loss_absurd": 10000,
    "loss_absurd_steps": 3,
    # Entropy at 0: the veRL metrics guide calls < 0.05 a near-deterministic policy; the lowest
    # healthy entropy in the corpus is 0.020 (a 7B PPO run at 0.020-0.040 for 335 steps), 0.022
    # held 3 steps. Never the entropy term of a loss (the Miles lab ranges: 0 in healthy runs).
    "entropy_zero_max": 0.01,
    "entropy_zero_steps": 3,
    # Truncation read from the length cap where no truncated share is logged: mean length this
    # share of max_response_length. The veRL metrics guide's own 256-token example (mean 253.8,
    # 85 % cut) is 0.99; the highest healthy mean in the corpus is 0.94 of its 256-token cap
    # (the official veRL baseline's first 14 steps, >= 0.9 on all of them).
    "length_limit_mean_ratio": 0.97,
    # The ceiling of a 0/1 correctness reward (the veRL metrics guide: math tasks score 0.0
    # (wrong) or 1.0 (right)): every sample at it means the task is too easy.
    "reward_ceiling": 1.0,
    # ---- pauses
    # Phase names a run uses to report a pause of the whole run (the Miles lab's heat guard:
    # `with exporter.timer("heat_guard"):` around the cool-down). The Miles lab ranges hold only
    # for steps no heat-guard pause touched, so a step window a pause touched is no timing
    # evidence: RLThroughputDrop skips it, RLPhaseHung does not count a pause as a hang, and the
    # rank comparison leaves pause phases out.
    "pause_phases": "pause|heat_guard|thermal_pause",
    # ---- rollout engines
    # Engine series and NVML phase time are sampled in wall time, not per step: one fixed
    # window, like the GPU alerts' gpu_window.
    "engine_window": Dur(600),
    # ---- goodput and restarts
    # Goodput (rl_goodput_seconds_total{bucket}, docs/goodput.md): the ratio and per-bucket
    # shares per run and per fleet over one hour, the window of the ratio the overview's stat
    # shows (the recording names say 1h: the default) ...
    "goodput_window": Dur(3600),
    # ... and GPU-hours by bucket per run for the fleet table: the last day.
    "goodput_fleet_window": Dur(86400),
    # ---- ranks of one run
    # Every rank that exports (the hook on each rank: `Exporter(rank=...)` or RANK from the
    # launcher, one endpoint per rank) is its own scrape target: its `instance` tells ranks apart
    # and its rl_run_info carries the `rank` label RLRankStraggler joins on. The median of two
    # ranks cannot tell the slow rank from the one that waits for it: in a synchronous run the
    # fast rank's wait lands in the phase holding the next collective, which then looks as slow
    # on the fast rank as the straggler's own phase. From three ranks on the median is a rank
    # that neither straggles nor waits alone.
    "straggler_min_ranks": 3,
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
