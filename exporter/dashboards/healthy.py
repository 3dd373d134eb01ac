"""Healthy ranges the sources state, as data: the values a dashboard must never paint as a warning.

Each range names the source it comes from and the series (and, for a share, the series it is
divided by) it holds for. tests/unit/dashboards/test_dashboards.py reads every threshold-coloured panel and
fails where a value inside one of these ranges would be painted yellow, orange or red.
A range covers lo up to hi: a threshold step at exactly hi starts the source's next band
(the veRL metrics guide: clip fraction 0.05-0.30 ideal, 0.30-0.50 "too much clipping").
"""
from __future__ import annotations

from dataclasses import dataclass, field

MILES = "Miles lab ranges"                      # Qwen3-0.6B GSM8K on one GB10, 48 steps
VERL = "veRL metrics guide"
POSTTRAIN = "posttrain metrics reference"
DICTIONARY = "RL metrics dictionary"
AREAL = "AReaL metrics tracking"
ENGINE = "rollout engine KV-cache pre-allocation (vLLM/SGLang gpu_memory_utilization)"


@dataclass(frozen=True)
class Healthy:
    metric: str                  # the series a panel query shows (its numerator for a share)
    lo: float
    hi: float
    source: str
    note: str = ""
    labels: dict = field(default_factory=dict)   # label values the range holds for
    per: str | None = None       # a share: the series the query divides by


HEALTHY: tuple[Healthy, ...] = (
    # ---- Miles lab ranges (a healthy on-policy GRPO run)
    Healthy("rl_response_truncated_ratio", 0.02, 0.43, MILES, "rollout/truncated"),
    Healthy("rl_train_inference_logprob_abs_diff", 0.0136, 0.0164, MILES, "plain sampling"),
    Healthy("rl_train_inference_kl", 0.00063, 0.00076, MILES, "train_rollout_kl (k3)"),
    Healthy("rl_grad_norm", 0.35, 4.95, MILES),
    Healthy("rl_policy_clip_ratio", 0.0, 0.0, MILES, "0 at every step", {"bound": ""}),
    Healthy("rl_policy_kl", 0.0, 0.0, MILES, "0 at step 0"),
    Healthy("rl_entropy", 0.0, 0.0, MILES, "train/entropy_loss, 0 in the lab runs (not computed)",
            {"phase": "update"}),
    Healthy("rl_step_duration_seconds", 152.6, 152.6, MILES, "median step, Qwen3-0.6B"),
    # a synchronous colocated run: train_wait is its rollout, the log-prob pass, weight push and
    # sleep/wake-up are required overhead (docs/goodput.md): nothing is wasted
    Healthy("run:rl_goodput:not_wasted_ratio_1h", 1.0, 1.0, MILES,
            "step 152.6 s = train_wait 52.3 + train 100.3; no stall, restart or async wait"),
    Healthy("rl_phase_duration_seconds", 100.3 / 152.6, 100.3 / 152.6, MILES,
            "train phase (with the scoring) median over the step median", {"phase": "train"},
            per="rl_step_duration_seconds"),
    Healthy("rl_phase_duration_seconds", 47.5 / 152.6, 47.5 / 152.6, MILES, "rollout phase",
            {"phase": "rollout"}, per="rl_step_duration_seconds"),
    # ---- posttrain metrics reference
    Healthy("rl_policy_clip_ratio", 0.0, 0.01493, POSTTRAIN,
            "0 by construction at n_mini == 1; 0.00089 (bf16) and 0.01493 (fp32) at n_mini = 8",
            {"bound": ""}),
    Healthy("rl_score_centering_head_mass_ratio", 0.99, 1.0, POSTTRAIN, ">= 0.99 at k = 128"),
    Healthy("rl_score_centering_tail_mass_ratio", 1.0, 1.0, POSTTRAIN, "1 when sampler and trainer agree"),
    Healthy("rl_score_centering_correction_abs", 0.0, 0.0, POSTTRAIN, "0 when q == p"),
    Healthy("rl_score_centering_token_weight", 1.0, 1.0, POSTTRAIN, "1 under compose=none"),
    Healthy("rl_preference_accuracy_ratio", 0.5, 0.98, POSTTRAIN,
            "DPO accuracy starts near 0.5 and rises (the RL metrics dictionary: 99 %+ with flat "
            "eval is overfitting)"),
    # ---- veRL metrics guide
    Healthy("rl_policy_clip_ratio", 0.05, 0.30, VERL, "pg_clipfrac ideal", {"bound": ""}),
    Healthy("rl_policy_clip_ratio", 0.0, 0.1, VERL, "pg_clipfrac_lower usually < 0.1", {"bound": "dual"}),
    Healthy("rl_policy_kl", 0.001, 0.01, VERL, "ppo_kl ideal"),
    Healthy("rl_reference_kl", 0.001, 0.1, VERL, "kl_loss normal"),
    Healthy("rl_response_truncated_ratio", 0.0, 0.3, VERL, "clip_ratio < 0.1 ideal, 0.1-0.3 acceptable"),
    Healthy("rl_prompt_truncated_ratio", 0.0, 0.05, VERL, "prompt clip_ratio < 0.05 reasonable"),
    Healthy("rl_value_loss", 0.1, 100.0, VERL, "vf_loss: early 10-100, later 0.1-10, converged < 1"),
    Healthy("rl_value_explained_variance", -1.0, 0.2, VERL, "early training: -1.0 to 0.2"),
    Healthy("rl_value_clip_ratio", 0.0, 0.5, VERL, "vf_clipfrac 0-0.5, usually < 0.2"),
    Healthy("rl_critic_grad_norm", 0.1, 100.0, VERL, "critic grad_norm, usually above the actor's"),
    Healthy("rl_mfu_ratio", 0.3, 0.4, VERL, "30-40 % good"),
    Healthy("rl_step_duration_seconds", 67.8, 67.8, VERL, "perf/time_per_step example"),
    Healthy("rl_phase_duration_seconds", 0.3, 0.4, VERL, "gen 30-40 % of the step", {"phase": "gen"},
            per="rl_step_duration_seconds"),
    Healthy("rl_phase_duration_seconds", 0.25, 0.35, VERL, "update_actor 25-35 %",
            {"phase": "update_actor"}, per="rl_step_duration_seconds"),
    Healthy("rl_phase_duration_seconds", 0.2, 0.3, VERL, "update_critic 20-30 %",
            {"phase": "update_critic"}, per="rl_step_duration_seconds"),
    # ---- AReaL metrics tracking
    Healthy("rl_train_inference_nonfinite_ratio", 0.0, 0.0, AREAL,
            "nonfinite_logp_fraction: 0 on a healthy run (with any, the tail ratios are NaN)"),
    # ---- RL metrics dictionary
    Healthy("rl_reference_kl", 0.01, 0.1, DICTIONARY, "KL held in 0.01-0.1"),
    Healthy("rl_policy_clip_ratio", 0.1, 0.3, DICTIONARY, "clipfrac normal 0.1-0.3", {"bound": ""}),
    Healthy("rl_mfu_ratio", 0.5, 0.6, DICTIONARY, "MFU 50-60 % typical"),
    # ---- NVML memory of a healthy RL job
    Healthy("hw_gpu_memory_usage_bytes", 0.95, 0.96, ENGINE,
            "NVML usage of a healthy job whose rollout engine pre-allocated its KV cache",
            per="hw_gpu_memory_limit_bytes"),
)
