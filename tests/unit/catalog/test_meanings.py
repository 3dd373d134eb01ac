"""One meaning, one series, across frameworks and releases (the second seed review):
the raw task reward, the entropy, and the two KLs to the reference each land on one series."""
from __future__ import annotations

import json
from pathlib import Path

from exporter.catalog import CATALOG
from exporter.catalog.vocabulary_doc import REWARD_MEANINGS, reward_table

RELEASES = json.loads((Path(__file__).resolve().parents[3] / "exporter" / "catalog" / "releases.json").read_text())


def _metric(key: str, fw: str) -> str:
    return CATALOG.resolve(key, fw).metric.name


def test_every_entropy_key_is_the_entropy_and_none_shares_a_series_with_another():
    # veRL 0.9.1 writes actor/entropy (the old-policy pass) and actor/entropy_loss (agg_loss of
    # the updated policy's entropy, verl/workers/utils/losses.py:124-129) in one step dict: two
    # series. OpenRLHF's entropy_loss is aggregate_loss(output.entropy) (ppo_actor.py:346-351),
    # its only entropy key; slime's train/entropy_loss is sum_of_sample_mean(entropy)
    # (slime loss.py:1112), beside rollout/entropy. None is coefficient x entropy.
    def series(key, fw):
        r = CATALOG.resolve(key, fw)
        return r.metric.name, dict(r.labels)
    assert series("actor/entropy", "verl") == ("rl_entropy", {})
    assert series("actor/entropy_loss", "verl") == ("rl_entropy", {"phase": "update"})
    for key in ("entropy_loss", "train/entropy_loss", "ent_loss"):
        assert series(key, "openrlhf") == ("rl_entropy", {}), key
    for fw in ("slime", "miles"):
        assert series("train/entropy_loss", fw) == ("rl_entropy", {"phase": "update"}), fw
        assert series("train/actor-entropy_loss", fw) == ("rl_entropy", {"phase": "update"}), fw
        assert series("rollout/entropy", fw) == ("rl_entropy", {}), fw
    assert "rl_entropy_loss" not in CATALOG.metrics  # no pinned framework logs coef x entropy


def test_raw_task_reward_lands_on_one_series():
    assert _metric("critic/score", "verl") == "rl_score"
    for fw in ("slime", "miles"):
        assert _metric("rollout/raw_reward", fw) == "rl_score", fw
        assert _metric("rollout/rewards", fw) == "rl_normalized_reward", fw


def test_slime_in_reward_kl_and_kl_loss_are_two_series():
    for fw in ("slime", "miles"):
        assert _metric("train/kl_loss", fw) == "rl_reference_kl"
        # the KL slime folds into the reward (--kl-coef), as veRL's actor/reward_kl_penalty
        assert _metric("rollout/kl", fw) == _metric("actor/reward_kl_penalty", "verl") == "rl_reward_kl_penalty"


def test_reward_table_lists_every_framework_and_meaning():
    rows = reward_table()
    header = next(r for r in rows if r.startswith("| framework |"))
    assert all(m in header for m, _ in REWARD_MEANINGS)
    body = [r for r in rows if r.startswith("| ") and not r.startswith("| framework")]
    assert {r.split(" | ")[0][2:] for r in body} == set(CATALOG.vocabularies)
    slime = next(r for r in body if r.startswith("| slime |")).split(" | ")
    assert "`rollout/raw_reward`" in slime[1] and "`rollout/rewards`" in slime[4]


def test_the_kl_a_reward_carries_is_one_series_unscaled_and_another_scaled():
    # veRL actor/reward_kl_penalty = masked_mean(kld) (ray_trainer.py:100-115) and slime
    # rollout/kl = compute_approx_kl(...): the KL itself. AReaL kl_rewards = -kl_ctl x KL
    # (actor.py:202) and TRL non_score_reward = (-beta * kl).sum(1): coefficient and sign kept.
    def series(key, fw):
        r = CATALOG.resolve(key, fw)
        return r.metric.name, dict(r.labels), r.scale
    assert series("actor/reward_kl_penalty", "verl") == ("rl_reward_kl_penalty", {}, 1.0)
    assert series("rollout/kl", "slime") == ("rl_reward_kl_penalty", {}, 1.0)
    assert series("ppo_actor/kl_rewards/avg", "areal") == ("rl_reward_kl_term", {}, 1.0)
    assert series("objective/non_score_reward", "trl") == ("rl_reward_kl_term", {"stat": "sum"}, 1.0)
    # the coefficients: the loss's and the reward's apart (veRL logs both in one step)
    assert series("actor/kl_coef", "verl")[1] == {"target": "loss"}
    assert series("actor/reward_kl_penalty_coeff", "verl")[1] == {"target": "reward"}


def test_policy_kl_is_old_minus_new_everywhere():
    # AReaL approx_kl = logprobs - proximal_logprobs (functional.py:548): negated, so its max
    # becomes the series' min
    r = CATALOG.resolve("ppo_actor/update/approx_kl/max", "areal")
    assert (r.metric.name, dict(r.labels), r.scale, r.agg) == ("rl_policy_kl", {"stat": "min"}, -1.0, "min")
    assert CATALOG.resolve("ppo_actor/update/approx_kl/avg", "areal").scale == -1.0
    assert dict(CATALOG.resolve("policy/approxkl_avg", "trl").labels) == {"estimator": "k2"}


def test_shaped_and_unshaped_rewards_are_two_series():
    assert _metric("critic/rewards", "verl") == _metric("objective/rlhf_reward", "trl") == "rl_shaped_reward"
    for key, fw in (("reward", "trl"), ("reward", "openrlhf"), ("rollout/reward", "areal")):
        assert _metric(key, fw) == "rl_reward", (key, fw)
