"""TRL (+ HF Trainer) vocabulary: every researched key, every family, realistic frames."""
from __future__ import annotations

import re

import pytest

from catalog_asserts import frame_fallbacks, known, lands, research_entry, series_of
from exporter.catalog import CATALOG

FW = "trl"

# framework-keys.json "trl" keys (TRL f2cd577 / transformers trainer.py), copied so the test
# runs where the research file is not mounted; test_research_file_matches checks the copy.
KEYS = [
    "loss", "grad_norm", "learning_rate", "epoch", "num_input_tokens_seen", "train_runtime",
    "train_samples_per_second", "train_steps_per_second", "train_tokens_per_second", "total_flos",
    "train_loss", "eval_loss", "eval_runtime", "eval_samples_per_second", "eval_steps_per_second",
    "num_tokens", "step_time", "completions/mean_length", "completions/min_length",
    "completions/max_length", "completions/clipped_ratio", "completions/mean_terminated_length",
    "completions/min_terminated_length", "completions/max_terminated_length", "reward", "reward_std",
    "frac_reward_zero_std", "kl", "entropy", "clip_ratio/low_mean", "clip_ratio/low_min",
    "clip_ratio/high_mean", "clip_ratio/high_max", "clip_ratio/region_mean", "clip_ratio",
    "cispo_clip_ratio", "vespo/phi_seq_mean", "policy_loss", "entropy_coef", "aux_loss",
    "tools/call_frequency", "tools/failure_frequency", "sampling/sampling_logp_difference/mean",
    "sampling/sampling_logp_difference/max", "sampling/importance_sampling_ratio/min",
    "sampling/importance_sampling_ratio/mean", "sampling/importance_sampling_ratio/max",
    "logits/chosen", "logits/rejected", "rewards/chosen", "rewards/rejected", "rewards/accuracies",
    "rewards/margins", "logps/chosen", "logps/rejected", "mean_token_accuracy", "eps", "objective/kl",
    "objective/entropy", "objective/non_score_reward", "objective/rlhf_reward", "objective/scores",
    "policy/approxkl_avg", "policy/clipfrac_avg", "loss/policy_avg", "loss/value_avg",
    "val/clipfrac_avg", "policy/entropy_avg", "val/ratio", "val/ratio_var", "val/num_eos_tokens",
    "lr", "episode", "step",
]

# Each researched pattern -> concrete instances with (metric, labels).
PATTERNS = {
    r"^rewards/(?P<reward_func_name>.+)/(mean|std)$": [
        ("rewards/accuracy_reward/mean", "rl_reward_function", {"function": "accuracy_reward"}),
        ("rewards/format_reward/std", "rl_reward_function", {"function": "format_reward", "stat": "std"}),
        ("rewards/my/nested/fn/mean", "rl_reward_function", {"function": "my/nested/fn"}),
    ],
    r"^eval_(?P<key>.+)$": [
        ("eval_rewards/margins", "rl_preference_reward_margin", {"split": "eval"}),
        ("eval_reward", "rl_reward", {"split": "eval"}),
        ("eval_completions/max_length", "rl_response_length_tokens", {"split": "eval", "stat": "max"}),
        ("eval_rewards/accuracy_reward/mean", "rl_reward_function",
         {"function": "accuracy_reward", "split": "eval"}),
        ("eval_clip_ratio/low_mean", "rl_policy_clip_ratio", {"bound": "low", "split": "eval"}),
        ("eval_sampling/importance_sampling_ratio/max", "rl_rollout_importance_weight",
         {"split": "eval", "stat": "max"}),
        ("eval_tools/call_frequency", "rl_tool_calls", {"split": "eval"}),
        # eval keys with their own meaning are explicit, not eval copies
        ("eval_loss", "rl_validation_loss", {}),
        ("eval_runtime", "rl_trainer_runtime_seconds", {"phase": "eval"}),
    ],
    r"^profiling/Time taken: (?P<func>.+)$": [
        ("profiling/Time taken: GRPOTrainer._generate", "rl_phase_duration_seconds",
         {"phase": "GRPOTrainer._generate"}),
        ("profiling/Time taken: GRPOTrainer.accuracy_reward", "rl_phase_duration_seconds",
         {"phase": "GRPOTrainer.accuracy_reward"}),
    ],
}

# The important keys: (key, metric, labels, scale).
TABLE = [
    ("loss", "rl_loss", {}, 1.0),
    ("grad_norm", "rl_grad_norm", {}, 1.0),
    ("learning_rate", "rl_learning_rate", {}, 1.0),
    ("lr", "rl_learning_rate", {}, 1.0),
    ("epoch", "rl_epoch", {}, 1.0),
    ("num_tokens", "rl_tokens_total", {}, 1.0),
    ("num_input_tokens_seen", "rl_tokens_total", {}, 1.0),
    ("step_time", "rl_step_duration_seconds", {}, 1.0),
    ("completions/mean_length", "rl_response_length_tokens", {}, 1.0),
    ("completions/min_length", "rl_response_length_tokens", {"stat": "min"}, 1.0),
    ("completions/max_terminated_length", "rl_response_length_tokens",
     {"stat": "max", "subset": "terminated"}, 1.0),
    ("completions/clipped_ratio", "rl_response_truncated_ratio", {}, 1.0),
    ("reward", "rl_reward", {}, 1.0),
    ("reward_std", "rl_reward", {"stat": "std"}, 1.0),
    ("frac_reward_zero_std", "rl_group_zero_std_ratio", {}, 1.0),
    ("kl", "rl_reference_kl", {}, 1.0),
    ("entropy", "rl_entropy", {}, 1.0),
    ("clip_ratio/region_mean", "rl_policy_clip_ratio", {}, 1.0),
    ("clip_ratio", "rl_policy_clip_ratio", {}, 1.0),
    ("clip_ratio/low_mean", "rl_policy_clip_ratio", {"bound": "low"}, 1.0),
    ("clip_ratio/low_min", "rl_policy_clip_ratio", {"bound": "low", "stat": "min"}, 1.0),
    ("clip_ratio/high_mean", "rl_policy_clip_ratio", {"bound": "high"}, 1.0),
    ("clip_ratio/high_max", "rl_policy_clip_ratio", {"bound": "high", "stat": "max"}, 1.0),
    ("policy_loss", "rl_policy_loss", {}, 1.0),
    ("entropy_coef", "rl_entropy_coefficient", {}, 1.0),
    ("aux_loss", "rl_aux_loss", {}, 1.0),
    ("tools/call_frequency", "rl_tool_calls", {}, 1.0),
    ("tools/failure_frequency", "rl_tool_call_failure_ratio", {}, 1.0),
    ("sampling/sampling_logp_difference/mean", "rl_train_inference_logprob_abs_diff", {}, 1.0),
    ("sampling/sampling_logp_difference/max", "rl_train_inference_logprob_abs_diff", {"stat": "max"}, 1.0),
    ("sampling/importance_sampling_ratio/min", "rl_rollout_importance_weight", {"stat": "min"}, 1.0),
    ("sampling/importance_sampling_ratio/mean", "rl_rollout_importance_weight", {}, 1.0),
    # DPO / KTO
    ("rewards/chosen", "rl_preference_reward", {"side": "chosen"}, 1.0),
    ("rewards/rejected", "rl_preference_reward", {"side": "rejected"}, 1.0),
    ("rewards/accuracies", "rl_preference_accuracy_ratio", {}, 1.0),
    ("rewards/margins", "rl_preference_reward_margin", {}, 1.0),
    ("eval_rewards/margins", "rl_preference_reward_margin", {"split": "eval"}, 1.0),
    ("logps/chosen", "rl_preference_logprob", {"side": "chosen"}, 1.0),
    ("logits/rejected", "rl_preference_logits", {"side": "rejected"}, 1.0),
    ("mean_token_accuracy", "rl_token_accuracy_ratio", {}, 1.0),
    # PPO (experimental)
    ("objective/kl", "rl_reference_kl", {"stat": "sum"}, 1.0),
    ("objective/entropy", "rl_entropy", {"stat": "sum"}, 1.0),
    ("objective/non_score_reward", "rl_reward_kl_penalty", {"stat": "sum"}, -1.0),
    ("objective/rlhf_reward", "rl_reward", {}, 1.0),
    ("objective/scores", "rl_score", {}, 1.0),
    ("policy/approxkl_avg", "rl_policy_kl", {}, 1.0),
    ("policy/clipfrac_avg", "rl_policy_clip_ratio", {}, 1.0),
    ("policy/entropy_avg", "rl_entropy", {}, 1.0),
    ("loss/policy_avg", "rl_policy_loss", {}, 1.0),
    ("loss/value_avg", "rl_value_loss", {}, 1.0),
    ("val/clipfrac_avg", "rl_value_clip_ratio", {}, 1.0),
    ("val/ratio", "rl_importance_ratio", {}, 1.0),
    ("val/ratio_var", "rl_importance_ratio", {"stat": "var"}, 1.0),
    ("eps", "rl_trainer_samples_per_second", {"phase": "train"}, 1.0),
    ("episode", "rl_episodes_total", {}, 1.0),
    # HF end of training / evaluation
    ("train_runtime", "rl_trainer_runtime_seconds", {"phase": "train"}, 1.0),
    ("train_samples_per_second", "rl_trainer_samples_per_second", {"phase": "train"}, 1.0),
    ("eval_steps_per_second", "rl_trainer_steps_per_second", {"phase": "eval"}, 1.0),
    ("train_tokens_per_second", "rl_throughput_tokens_per_second", {"phase": "train"}, 1.0),
    ("total_flos", "rl_trainer_flos_total", {}, 1.0),
    ("train_loss", "rl_trainer_run_loss", {}, 1.0),
    ("eval_loss", "rl_validation_loss", {}, 1.0),
]

# transformers ProgressCallback console line (framework-keys.md 3.6): no step, epoch rounded.
CONSOLE = {'loss': 0.0123, 'grad_norm': 0.2282, 'learning_rate': 2e-05, 'num_tokens': 400.0,
           'completions/mean_length': 50.0, 'completions/min_length': 12.0,
           'completions/max_length': 81.0, 'completions/clipped_ratio': 0.0,
           'rewards/accuracy_reward/mean': 0.4375, 'rewards/accuracy_reward/std': 0.4961,
           'reward': 0.4375, 'reward_std': 0.4961, 'frac_reward_zero_std': 0.0, 'entropy': 1.72,
           'clip_ratio/low_mean': 0.0, 'clip_ratio/low_min': 0.0, 'clip_ratio/high_mean': 0.0,
           'clip_ratio/high_max': 0.0, 'clip_ratio/region_mean': 0.0, 'step_time': 12.5,
           'epoch': 0.01}

# trainer_state.json log_history entry: the console dict plus step (total_flos kept).
LOG_HISTORY = {"clip_ratio/high_max": 0.0, "clip_ratio/region_mean": 0.0,
               "completions/mean_length": 50.0, "entropy": 1.72, "epoch": 0.002,
               "frac_reward_zero_std": 0.0, "grad_norm": 0.2282, "learning_rate": 2e-05,
               "loss": 0.0123, "num_tokens": 400.0, "reward": 0.4375, "reward_std": 0.4961,
               "step": 1, "step_time": 12.5}

END_OF_TRAIN = {"train_runtime": 1234.5, "train_samples_per_second": 3.2,
                "train_steps_per_second": 0.4, "total_flos": 0.0, "train_loss": 0.0456,
                "epoch": 1.0, "step": 500}

DPO_EVAL = {"eval_loss": 0.61, "eval_runtime": 12.0, "eval_samples_per_second": 40.0,
            "eval_steps_per_second": 5.0, "eval_rewards/chosen": 0.3, "eval_rewards/rejected": -0.2,
            "eval_rewards/accuracies": 0.7, "eval_rewards/margins": 0.5, "eval_logps/chosen": -80.0,
            "eval_logps/rejected": -95.0, "eval_logits/chosen": -1.1, "eval_logits/rejected": -1.3,
            "epoch": 0.5, "step": 100}

PPO = {"eps": 12, "objective/kl": 3.1, "objective/entropy": 40.2, "objective/non_score_reward": -0.15,
       "objective/rlhf_reward": 1.2, "objective/scores": 1.35, "policy/approxkl_avg": 0.01,
       "policy/clipfrac_avg": 0.05, "loss/policy_avg": -0.02, "loss/value_avg": 0.3,
       "val/clipfrac_avg": 0.1, "policy/entropy_avg": 0.9, "val/ratio": 1.0, "val/ratio_var": 0.001,
       "val/num_eos_tokens": 60, "lr": 3e-6, "episode": 6400, "epoch": 0.2}


@pytest.mark.parametrize("key", KEYS)
def test_every_researched_key_is_known(key):
    known(key, FW)


def test_research_file_matches():
    entry = research_entry(FW)
    assert entry["keys"] == KEYS
    assert sorted(entry["patterns"]) == sorted(PATTERNS)


@pytest.mark.parametrize("regex,instances", list(PATTERNS.items()))
def test_every_pattern_has_resolving_instances(regex, instances):
    assert instances
    for key, metric, labels in instances:
        assert re.match(regex, key), f"{key!r} is not an instance of {regex}"
        lands(key, FW, metric, labels)


@pytest.mark.parametrize("key,metric,labels,scale", TABLE)
def test_important_keys(key, metric, labels, scale):
    lands(key, FW, metric, labels, scale)


def test_step_keys():
    for key in ("step", "global_step"):
        r = CATALOG.resolve(key, FW)
        assert r.step and r.metric.name == "rl_training_step"
    assert not CATALOG.resolve("epoch", FW).step


def test_ignored_keys_say_why():
    r = CATALOG.resolve("eval_num_tokens", FW)
    assert r.ignored and "token counter" in r.reason


def test_unknown_key_falls_back():
    assert CATALOG.resolve("definitely_not_a_trl_key", FW).fallback


def test_aggregation_overrides():
    # TRL logs no token counts: token-weighted means are plain means here.
    assert CATALOG.resolve("clip_ratio/region_mean", FW).agg == "mean"
    assert CATALOG.resolve("clip_ratio/high_max", FW).agg == "max"
    assert CATALOG.resolve("clip_ratio/low_min", FW).agg == "min"
    assert CATALOG.resolve("epoch", FW).agg == "max"


@pytest.mark.parametrize("name,frame", [("console", CONSOLE), ("log_history", LOG_HISTORY),
                                        ("end_of_train", END_OF_TRAIN), ("dpo_eval", DPO_EVAL),
                                        ("ppo", PPO)])
def test_realistic_frames_have_no_fallbacks_or_collisions(name, frame):
    assert frame_fallbacks(frame, FW) == []
    clashes = {s: ks for s, ks in series_of(frame, FW).items() if len(ks) > 1}
    assert clashes == {}, f"{name}: several keys on one series: {clashes}"
