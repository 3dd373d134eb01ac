"""OpenRLHF 0.11 beyond the shared conformance (test_conformance.py, data/openrlhf.json): ignored
keys say why, step keys, aggregation, and realistic status dict, W&B, tqdm and DPO/RM frames."""
from __future__ import annotations

import pytest

from exporter.catalog import CATALOG

from .catalog_asserts import frame_fallbacks, known, series_of

FW = "openrlhf"

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


@pytest.mark.parametrize("key", [f"train/{k}" for k in CONSOLE])
def test_wandb_train_forms_are_known(key):
    known(key, FW)


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
