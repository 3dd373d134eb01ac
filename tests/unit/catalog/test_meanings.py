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


def test_verl_entropy_loss_is_the_entropy_in_every_release_that_writes_it():
    # the veRL metrics guide, section 1.5: actor/entropy_loss = mean(entropy), the entropy itself
    data = RELEASES["verl"]
    tags = [t for t, _ in data["tags"]]
    writes = lambda key: {i for lo, hi in data["keys"].get(key, []) for i in range(lo, hi + 1)}
    assert writes("actor/entropy_loss") and not writes("actor/entropy_loss") & writes("actor/entropy")
    assert max(writes("actor/entropy_loss")) == tags.index("v0.3.0.post1")
    assert CATALOG.vocabularies["verl"].keys["actor/entropy_loss"].until == "v0.3.0.post1"
    # so RLEntropyCollapse, which reads rl_entropy, can fire on those releases
    assert _metric("actor/entropy_loss", "verl") == _metric("actor/entropy", "verl") == "rl_entropy"


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
    assert "`rollout/raw_reward`" in slime[1] and "`rollout/rewards`" in slime[3]
