"""OpenRLHF 0.11 vocabulary: status dict, tqdm names, W&B train/ and eval/ forms, DPO/RM."""
from __future__ import annotations

import re

import pytest

from catalog_asserts import frame_fallbacks, known, lands, research_entry, series_of
from exporter.catalog import CATALOG

FW = "openrlhf"

# framework-keys.json "openrlhf" keys (OpenRLHF 3c3be62), copied; test_research_file_matches checks.
KEYS = [
    "policy_loss", "entropy_loss", "actor_lr", "actor_grad_norm", "ppo_clip_ratio", "ppo_kl",
    "vllm_kl", "kl", "logprobs_diff", "reward", "score", "return", "group_reward_std",
    "response_clip_ratio", "response_length", "total_length", "truncated", "critic_loss", "values",
    "critic_lr", "critic_grad_norm", "timing/make_experience", "timing/ppo_train", "timing/broadcast",
    "timing/generation", "timing/step_total", "rollout/reward_mean", "rollout/reward_std",
    "rollout/response_length_mean", "rollout/truncated_rate", "rollout/num_samples",
    "dynamic_filtering_pass_rate", "eval_response_length_mean", "eval_truncated_rate",
    "eval_num_samples", "loss", "acc", "chosen_reward", "reject_reward", "lr", "grad_norm",
    "nll_loss", "loss_mean", "acc_mean", "eval_loss", "train/global_step", "eval/global_step",
    "train/generated_samples",
]
TQDM = ["act_loss", "reward", "return", "gen_len", "tot_len", "kl", "act_lr", "grad_norm", "ent_loss"]

PATTERNS = {
    r"^eval_(?P<datasource>.+)_pass(?P<n>\d+)$": [
        ("eval_gsm8k_pass1", "rl_validation_pass_at_k_ratio", {"data_source": "gsm8k", "k": "1"}),
        ("eval_math_500_pass16", "rl_validation_pass_at_k_ratio", {"data_source": "math_500", "k": "16"}),
    ],
    r"^eval_(?P<datasource>.+)_response_length_mean$": [
        ("eval_aime24_response_length_mean", "rl_validation_response_length_tokens",
         {"data_source": "aime24"}),
    ],
    r"^eval_(?P<datasource>.+)_truncated_rate$": [
        ("eval_aime24_truncated_rate", "rl_validation_response_truncated_ratio", {"data_source": "aime24"}),
    ],
    r"^train/(?P<key>.+)$": [
        ("train/policy_loss", "rl_policy_loss", {}),
        ("train/ppo_clip_ratio", "rl_policy_clip_ratio", {}),
        ("train/actor_lr", "rl_next_learning_rate", {"role": "policy"}),
        ("train/timing/generation", "rl_phase_duration_seconds", {"phase": "generation"}),
        ("train/timing/step_total", "rl_step_duration_seconds", {}),
        ("train/rollout/reward_std", "rl_reward", {"subset": "generated", "stat": "std"}),
        ("train/loss_mean", "rl_loss", {}),
        ("train/chosen_reward", "rl_preference_reward", {"side": "chosen"}),
    ],
    r"^eval/(?P<key>.+)$": [
        # the eval dict under W&B's eval/ lands on the same series as the bare eval dict
        ("eval/eval_loss", "rl_validation_loss", {}),
        ("eval/eval_gsm8k_pass4", "rl_validation_pass_at_k_ratio", {"data_source": "gsm8k", "k": "4"}),
        ("eval/eval_truncated_rate", "rl_response_truncated_ratio", {"split": "eval"}),
        ("eval/eval_aime24_response_length_mean", "rl_validation_response_length_tokens",
         {"data_source": "aime24"}),
        # eval copies of training keys (RM/DPO eval logs acc_mean under eval/)
        ("eval/acc_mean", "rl_preference_accuracy_ratio", {"split": "eval"}),
    ],
}

TABLE = [
    ("policy_loss", "rl_policy_loss", {}),
    ("entropy_loss", "rl_entropy_loss", {}),
    ("actor_lr", "rl_next_learning_rate", {"role": "policy"}),
    ("actor_grad_norm", "rl_grad_norm", {}),
    ("ppo_clip_ratio", "rl_policy_clip_ratio", {}),
    ("ppo_kl", "rl_policy_kl", {}),
    ("vllm_kl", "rl_train_inference_kl", {"estimator": "k1"}),
    ("kl", "rl_reference_kl", {}),
    ("logprobs_diff", "rl_reference_logprob_diff", {}),
    ("reward", "rl_reward", {}),
    ("score", "rl_score", {}),
    ("return", "rl_return", {}),
    ("group_reward_std", "rl_group_reward_std", {}),
    ("response_clip_ratio", "rl_sequence_length_limit_ratio", {}),
    ("response_length", "rl_response_length_tokens", {}),
    ("total_length", "rl_sequence_length_tokens", {}),
    ("truncated", "rl_response_truncated_ratio", {}),
    ("critic_loss", "rl_value_loss", {}),
    ("values", "rl_value", {}),
    ("critic_lr", "rl_next_learning_rate", {"role": "critic"}),
    ("critic_grad_norm", "rl_critic_grad_norm", {}),
    ("timing/make_experience", "rl_phase_duration_seconds", {"phase": "make_experience"}),
    ("timing/ppo_train", "rl_phase_duration_seconds", {"phase": "ppo_train"}),
    ("timing/step_total", "rl_step_duration_seconds", {}),
    ("rollout/reward_mean", "rl_reward", {"subset": "generated"}),
    ("rollout/response_length_mean", "rl_response_length_tokens", {"subset": "generated"}),
    ("rollout/truncated_rate", "rl_response_truncated_ratio", {"subset": "generated"}),
    ("rollout/num_samples", "rl_responses", {"subset": "generated"}),
    ("dynamic_filtering_pass_rate", "rl_dynamic_filter_pass_ratio", {}),
    ("eval_response_length_mean", "rl_response_length_tokens", {"split": "eval"}),
    ("eval_truncated_rate", "rl_response_truncated_ratio", {"split": "eval"}),
    ("eval_num_samples", "rl_responses", {"split": "eval"}),
    ("eval_loss", "rl_validation_loss", {}),
    # DPO / RM
    ("loss_mean", "rl_loss", {}),
    ("acc_mean", "rl_preference_accuracy_ratio", {}),
    ("chosen_reward", "rl_preference_reward", {"side": "chosen"}),
    ("reject_reward", "rl_preference_reward", {"side": "rejected"}),
    ("lr", "rl_next_learning_rate", {"role": "policy"}),
    ("grad_norm", "rl_grad_norm", {}),
    ("nll_loss", "rl_nll_loss", {}),
    # tqdm short names
    ("act_loss", "rl_policy_loss", {}),
    ("gen_len", "rl_response_length_tokens", {}),
    ("tot_len", "rl_sequence_length_tokens", {}),
    ("act_lr", "rl_next_learning_rate", {"role": "policy"}),
    ("ent_loss", "rl_entropy_loss", {}),
]

IGNORED = {
    "loss": "loss_mean",
    "acc": "acc_mean",
    "train/loss": "loss_mean",
    "train/generated_samples": "table",
    "eval/generated_samples": "table",
}

# Console line of the sync trainer (framework-keys.md 4.4), the dict part.
CONSOLE = {'policy_loss': -0.0012, 'actor_lr': 1e-06, 'actor_grad_norm': 0.31, 'ppo_clip_ratio': 0.0021,
           'ppo_kl': 0.0003, 'reward': 0.5, 'return': 0.5, 'response_length': 412.6,
           'total_length': 530.1, 'truncated': 0.03, 'timing/make_experience': 35.2,
           'timing/ppo_train': 20.1, 'timing/broadcast': 3.4, 'rollout/reward_mean': 0.5,
           'rollout/reward_std': 0.49, 'rollout/response_length_mean': 412.6,
           'rollout/truncated_rate': 0.03, 'rollout/num_samples': 1024.0, 'timing/generation': 60.3,
           'timing/step_total': 119.0}
WANDB = {**{f"train/{k}": v for k, v in CONSOLE.items()}, "train/global_step": 12}
WANDB_EVAL = {"eval/eval_gsm8k_pass1": 0.61, "eval/eval_gsm8k_pass8": 0.83,
              "eval/eval_gsm8k_response_length_mean": 301.0, "eval/eval_gsm8k_truncated_rate": 0.01,
              "eval/eval_response_length_mean": 301.0, "eval/eval_truncated_rate": 0.01,
              "eval/eval_num_samples": 1319, "eval/global_step": 12}
TQDM_POSTFIX = {"act_loss": -0.0012, "reward": 0.5, "return": 0.5, "gen_len": 412.6, "tot_len": 530.1,
                "kl": 0.0004, "act_lr": 1e-06, "grad_norm": 0.31, "ent_loss": 0.2}
DPO = {"loss": 0.69, "acc": 0.5, "chosen_reward": 0.01, "reject_reward": -0.01, "lr": 5e-7,
       "grad_norm": 1.3, "nll_loss": 1.9, "loss_mean": 0.68, "acc_mean": 0.55}


@pytest.mark.parametrize("key", KEYS + TQDM + [f"train/{k}" for k in CONSOLE])
def test_every_researched_key_is_known(key):
    known(key, FW)


def test_research_file_matches():
    entry = research_entry(FW)
    assert entry["keys"] == KEYS
    assert entry["formats"]["console"]["tqdm_postfix"] == TQDM
    assert sorted(entry["patterns"]) == sorted(PATTERNS)


@pytest.mark.parametrize("regex,instances", list(PATTERNS.items()))
def test_every_pattern_has_resolving_instances(regex, instances):
    assert instances
    for key, metric, labels in instances:
        assert re.match(regex, key), f"{key!r} is not an instance of {regex}"
        lands(key, FW, metric, labels)


@pytest.mark.parametrize("key,metric,labels", TABLE)
def test_important_keys(key, metric, labels):
    lands(key, FW, metric, labels)


@pytest.mark.parametrize("key,why", list(IGNORED.items()))
def test_ignored_keys_say_why(key, why):
    r = CATALOG.resolve(key, FW)
    assert r.ignored and why in r.reason, r.reason


def test_step_keys():
    for key in ("train/global_step", "eval/global_step"):
        r = CATALOG.resolve(key, FW)
        assert r.step and r.metric.name == "rl_training_step"


def test_last_value_keys_and_weights():
    assert CATALOG.resolve("actor_lr", FW).agg == "last"
    assert CATALOG.resolve("actor_grad_norm", FW).agg == "last"
    assert CATALOG.resolve("timing/generation", FW).agg == "max"


@pytest.mark.parametrize("name,frame", [("console", CONSOLE), ("wandb", WANDB), ("wandb_eval", WANDB_EVAL),
                                        ("tqdm", TQDM_POSTFIX), ("dpo", DPO)])
def test_realistic_frames_have_no_fallbacks_or_collisions(name, frame):
    assert frame_fallbacks(frame, FW) == []
    clashes = {s: ks for s, ks in series_of(frame, FW).items() if len(ks) > 1}
    assert clashes == {}, f"{name}: several keys on one series: {clashes}"


def test_console_and_wandb_forms_agree():
    for key in CONSOLE:
        a, b = CATALOG.resolve(key, FW), CATALOG.resolve(f"train/{key}", FW)
        assert (a.metric.name, a.labels, a.scale) == (b.metric.name, b.labels, b.scale), key
