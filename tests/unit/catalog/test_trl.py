"""TRL (+ HF Trainer) beyond the shared conformance (test_conformance.py, data/trl.json): step
keys, ignored and unknown keys, aggregation overrides, realistic frames."""
from __future__ import annotations

import pytest

from exporter.catalog import CATALOG

from .catalog_asserts import frame_fallbacks, series_of

FW = "trl"

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
