"""The conformance table (exporter/catalog/conformance.py, printed in docs/vocabulary.md): every
canonical series fed by more than one framework has a verdict for each framework that feeds it,
and no verdict names a framework that no longer does (a split names where the key went)."""
from __future__ import annotations

from collections import defaultdict

import pytest

from exporter.catalog import CATALOG
from exporter.catalog.conformance import SPLIT, TABLE, VERDICTS
from exporter.catalog.vocabulary_doc import conformance_table


def feeders() -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for v in CATALOG.vocabularies.values():
        for a in v.keys.values():
            out[a.metric].add(v.name)
        for p in v.patterns:
            out[p.alias.metric].add(v.name)
        if v.step_keys:
            out["rl_training_step"].add(v.name)
    return out


FED = feeders()
SHARED = sorted(m for m, fws in FED.items() if len(fws) > 1)


def test_there_are_shared_series_to_check():
    assert len(SHARED) > 100


@pytest.mark.parametrize("metric", SHARED)
def test_every_framework_feeding_a_shared_series_has_a_verdict(metric):
    assert metric in TABLE, f"{metric} is fed by {sorted(FED[metric])} and has no conformance rows"
    covered = {fw for r in TABLE[metric] if r.verdict != SPLIT for fw in r.frameworks}
    assert FED[metric] <= covered, f"{metric}: no verdict for {sorted(FED[metric] - covered)}"


@pytest.mark.parametrize("metric", sorted(TABLE))
def test_no_verdict_for_a_framework_that_does_not_feed_the_series(metric):
    assert metric in CATALOG.metrics
    for r in TABLE[metric]:
        assert r.verdict in VERDICTS and r.meaning and r.source
        if r.verdict == SPLIT:  # the key moved: it names the series it went to
            assert r.note.startswith("->"), (metric, r)
        else:
            assert set(r.frameworks) <= FED[metric], (metric, sorted(set(r.frameworks) - FED[metric]))


def test_split_keys_no_longer_feed_the_series_they_left():
    # each split row's framework keys resolve elsewhere now (checked on the keys the rows name)
    moved = {("rl_reward", "verl", "critic/rewards"), ("rl_response_truncated_ratio", "areal", "ppo_actor/no_eos_ratios"),
             ("rl_reward_kl_penalty", "areal", "ppo_actor/kl_rewards"), ("rl_return", "openrlhf", "return"),
             ("rl_turns", "verl", "num_turns"), ("rl_importance_ess_ratio", "miles", "train/ess_ratio"),
             ("rl_value_clip_ratio", "slime", "train/value_clipfrac"),
             ("rl_validation_pass_at_k_ratio", "openrlhf", "eval_gsm8k_pass4")}
    for metric, fw, key in moved:
        assert CATALOG.resolve(key, fw).metric.name != metric, (metric, fw, key)


def test_the_table_is_printed_with_sources_and_verdicts():
    lines = conformance_table()
    body = [x for x in lines if x.startswith("| `rl_")]
    assert len(body) >= sum(len(rs) for rs in TABLE.values())
    assert any("areal/trainer/ppo/actor.py:192-202" in x and "converted" in x for x in body)
