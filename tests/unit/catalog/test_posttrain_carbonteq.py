"""posttrain (carbonteq-ai) vocabulary: canonical train/rl/*, serve/backend/*, forwarded TRL keys."""
from __future__ import annotations

import re

import pytest

from catalog_asserts import frame_fallbacks, known, lands, research_entry, series_of
from exporter.catalog import CATALOG

FW = "posttrain_carbonteq"

# framework-keys.json "posttrain_carbonteq" keys (carbonteq-ai/posttrain 42da687), copied.
KEYS = [
    "train/rl/reward_mean", "train/rl/reward_std", "train/rl/group_zero_variance_fraction",
    "train/rl/policy_loss", "train/rl/kl", "train/rl/entropy", "train/rl/clip_fraction",
    "train/rl/clip_fraction_low", "train/rl/clip_fraction_high", "train/grad_norm",
    "train/learning_rate", "train/step_time_seconds", "train/num_tokens",
    "train/rl/rollouts_attempted", "train/rl/rollouts_completed", "train/rl/rollouts_failed",
    "train/rl/rollouts_truncated", "train/rl/rollouts_unscorable", "train/rl/completion_tokens_total",
    "train/rl/completion_tokens_mean", "train/rl/completion_tokens_max",
    "train/rl/completion_truncation_rate", "train/rl/tool_call_frequency",
    "train/rl/tool_failure_frequency", "train/rl/sampling_logp_delta_mean",
    "train/rl/sampling_logp_delta_max", "train/rl/importance_sampling_ratio_mean",
    "train/rl/importance_sampling_ratio_min", "train/rl/importance_sampling_ratio_max",
    "train/rl/importance_sampling_ratio_clamped_fraction", "train/rl/policy_staleness_mean",
    "train/rl/policy_staleness_max", "train/rl/trajectory_version_span_mean",
    "train/rl/rollout_tokens_per_second", "train/rl/time/rollout_seconds",
    "train/rl/time/reward_seconds", "train/rl/time/actor_forward_seconds",
    "train/rl/time/actor_update_seconds", "train/rl/time/weight_sync_seconds",
    "train/rl/time/checkpoint_seconds", "serve/backend/speculative_drafts",
    "serve/backend/speculative_draft_tokens", "serve/backend/speculative_accepted_tokens",
    "serve/backend/speculative_acceptance_rate", "serve/backend/speculative_accepted_length",
    "serve/backend/kv_cache_capacity_tokens", "serve/backend/kv_cache_peak_usage_ratio",
]

PATTERNS = {
    r"^train/(?P<trl_key>.+)$": [
        ("train/loss", "rl_loss", {}),
        ("train/rewards/margins", "rl_preference_reward_margin", {}),
        ("train/completions/max_length", "rl_response_length_tokens", {"stat": "max"}),
        ("train/rewards/accuracy_reward/std", "rl_reward_function",
         {"function": "accuracy_reward", "stat": "std"}),
        ("train/epoch", "rl_epoch", {}),
        ("train/train_runtime", "rl_trainer_runtime_seconds", {"phase": "train"}),
    ],
    r"^train/validation/(?P<trl_eval_key>.+)$": [
        ("train/validation/loss", "rl_validation_loss", {}),  # from HF eval_loss
        ("train/validation/runtime", "rl_trainer_runtime_seconds", {"phase": "eval"}),
        ("train/validation/rewards/margins", "rl_preference_reward_margin", {"split": "eval"}),
        ("train/validation/rewards/accuracy_reward/mean", "rl_reward_function",
         {"function": "accuracy_reward", "split": "eval"}),
        ("train/validation/sampling/importance_sampling_ratio/max", "rl_rollout_importance_weight",
         {"split": "eval", "stat": "max"}),
    ],
}

TABLE = [
    ("train/rl/reward_mean", "rl_reward", {}),
    ("train/rl/reward_std", "rl_reward", {"stat": "std"}),
    ("train/rl/group_zero_variance_fraction", "rl_group_zero_std_ratio", {}),
    ("train/rl/policy_loss", "rl_policy_loss", {}),
    ("train/rl/entropy", "rl_entropy", {}),
    ("train/rl/clip_fraction", "rl_policy_clip_ratio", {}),
    ("train/rl/clip_fraction_low", "rl_policy_clip_ratio", {"bound": "low"}),
    ("train/rl/clip_fraction_high", "rl_policy_clip_ratio", {"bound": "high"}),
    ("train/grad_norm", "rl_grad_norm", {}),
    ("train/learning_rate", "rl_learning_rate", {}),
    ("train/step_time_seconds", "rl_step_duration_seconds", {}),
    ("train/num_tokens", "rl_tokens_total", {}),
    ("train/rl/rollouts_attempted", "rl_rollouts", {"outcome": "attempted"}),
    ("train/rl/rollouts_unscorable", "rl_rollouts", {"outcome": "unscorable"}),
    ("train/rl/completion_tokens_total", "rl_response_length_tokens", {"stat": "sum"}),
    ("train/rl/completion_tokens_mean", "rl_response_length_tokens", {}),
    ("train/rl/completion_tokens_max", "rl_response_length_tokens", {"stat": "max"}),
    ("train/rl/completion_truncation_rate", "rl_response_truncated_ratio", {}),
    ("train/rl/tool_call_frequency", "rl_tool_calls", {}),
    ("train/rl/tool_failure_frequency", "rl_tool_call_failure_ratio", {}),
    ("train/rl/sampling_logp_delta_mean", "rl_train_inference_logprob_abs_diff", {}),
    ("train/rl/sampling_logp_delta_max", "rl_train_inference_logprob_abs_diff", {"stat": "max"}),
    ("train/rl/importance_sampling_ratio_min", "rl_rollout_importance_weight", {"stat": "min"}),
    ("train/rl/importance_sampling_ratio_clamped_fraction", "rl_rollout_importance_weight_clamped_ratio", {}),
    ("train/rl/policy_staleness_max", "rl_sample_staleness_steps", {"stat": "max"}),
    ("train/rl/trajectory_version_span_mean", "rl_trajectory_version_span", {}),
    ("train/rl/rollout_tokens_per_second", "rl_throughput_tokens_per_second", {"phase": "rollout"}),
    ("train/rl/time/rollout_seconds", "rl_phase_duration_seconds", {"phase": "rollout"}),
    ("train/rl/time/weight_sync_seconds", "rl_phase_duration_seconds", {"phase": "weight_sync"}),
    ("serve/backend/speculative_drafts", "rl_speculative_drafts", {}),
    ("serve/backend/speculative_draft_tokens", "rl_speculative_tokens", {"kind": "draft"}),
    ("serve/backend/speculative_accepted_tokens", "rl_speculative_tokens", {"kind": "accepted"}),
    ("serve/backend/speculative_acceptance_rate", "rl_speculative_accept_ratio", {}),
    ("serve/backend/speculative_accepted_length", "rl_speculative_accept_length_tokens", {}),
    ("serve/backend/kv_cache_capacity_tokens", "rl_kv_cache_capacity_tokens", {}),
    ("serve/backend/kv_cache_peak_usage_ratio", "rl_kv_cache_peak_usage_ratio", {}),
]


@pytest.mark.parametrize("key", KEYS)
def test_every_researched_key_is_known(key):
    known(key, FW)


def test_research_file_matches():
    entry = research_entry(FW)
    assert entry["keys"] == KEYS
    assert sorted(entry["patterns"]) == sorted(PATTERNS)
    # every native TRL key carbonteq renames lands where plain TRL puts it
    for trl_key, canonical in entry["mapping_trl_to_canonical"].items():
        # `loss` fills policy_loss only when GRPO logs no policy_loss; rollout/spec_* are veRL keys
        if trl_key == "loss" or trl_key.startswith("rollout/"):
            continue
        # carbonteq's train/rl/kl is TRL kl or veRL actor/ppo_kl: no single meaning, so fallback
        if canonical == "train/rl/kl":
            assert CATALOG.resolve(canonical, FW).deliberate
            continue
        a, b = CATALOG.resolve(trl_key, "trl"), CATALOG.resolve(canonical, FW)
        assert a.metric.name == b.metric.name, (trl_key, canonical)


@pytest.mark.parametrize("regex,instances", list(PATTERNS.items()))
def test_every_pattern_has_resolving_instances(regex, instances):
    assert instances
    for key, metric, labels in instances:
        assert re.match(regex, key), f"{key!r} is not an instance of {regex}"
        lands(key, FW, metric, labels)


@pytest.mark.parametrize("key,metric,labels", TABLE)
def test_important_keys(key, metric, labels):
    lands(key, FW, metric, labels)


def test_counts_sum_across_ranks():
    assert CATALOG.resolve("train/rl/completion_tokens_total", FW).agg == "sum"
    assert CATALOG.resolve("train/rl/rollouts_failed", FW).agg == "sum"


def test_required_grpo_record_resolves_without_fallbacks_or_collisions():
    # One GRPO step as normalize_grpo_metrics emits it: the core_required set plus optional ones.
    frame = {k: 0.0 for k in KEYS}
    frame["step"] = 7
    assert frame_fallbacks(frame, FW) == ["train/rl/kl"]  # ambiguous in carbonteq: on purpose
    assert CATALOG.resolve("step", FW).step
    clashes = {s: ks for s, ks in series_of(frame, FW).items() if len(ks) > 1}
    assert clashes == {}, clashes


def test_forwarded_dpo_record_resolves():
    frame = {"train/loss": 0.6, "train/grad_norm": 1.0, "train/learning_rate": 5e-7, "train/epoch": 0.1,
             "train/rewards/chosen": 0.3, "train/rewards/rejected": -0.1, "train/rewards/margins": 0.4,
             "train/rewards/accuracies": 0.7, "train/logps/chosen": -80.0, "train/logits/chosen": -1.0,
             "train/validation/loss": 0.65, "train/validation/rewards/margins": 0.3}
    assert frame_fallbacks(frame, FW) == []
