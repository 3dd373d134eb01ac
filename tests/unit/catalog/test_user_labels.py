"""Users' own names (reward functions, data sources) become label values of canonical metrics,
not fallback keys; the store's per-metric series limit bounds how many."""
from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from exporter import Exporter
from exporter.catalog import CATALOG


@pytest.mark.parametrize("fw,key,metric,labels", [
    ("trl", "rewards/accuracy_reward", "rl_reward_function", {"function": "accuracy_reward"}),
    ("trl", "rewards/format_reward/mean", "rl_reward_function", {"function": "format_reward"}),
    ("trl", "rewards/format_reward/std", "rl_reward_function",
     {"function": "format_reward", "stat": "std"}),
    ("trl", "eval_rewards/format_reward/mean", "rl_reward_function",
     {"function": "format_reward", "split": "eval"}),
    ("swift", "rewards/MathAccuracy/mean", "rl_reward_function", {"function": "MathAccuracy"}),
    ("verl", "critic/acc_score/mean", "rl_reward_function", {"function": "acc"}),
    ("verl", "critic/format_score/max", "rl_reward_function", {"function": "format", "stat": "max"}),
    ("verl", "val/test_score/openai/gsm8k", "rl_validation_score", {"data_source": "openai/gsm8k"}),
    ("verl", "val-core/openai/gsm8k/reward/mean@4", "rl_validation_score",
     {"data_source": "openai/gsm8k", "var": "reward", "estimator": "mean", "n": "4", "tier": "core"}),
    ("openrlhf", "eval_aime_pass8", "rl_validation_score", {"data_source": "aime", "var": "reward", "estimator": "best", "n": "8"}),
    ("slime", "eval/aime-2024/response_len/mean", "rl_validation_response_length_tokens",
     {"data_source": "aime-2024"}),
])
def test_user_names_are_labels(fw, key, metric, labels):
    r = CATALOG.resolve(key, fw)
    assert not r.fallback and r.metric.name == metric, r.reason
    assert dict(r.labels) == labels


def test_exact_keys_beat_the_reward_function_family():
    assert CATALOG.resolve("rewards/chosen", "trl").metric.name == "rl_preference_reward"
    assert CATALOG.resolve("critic/score/mean", "verl").metric.name == "rl_score"


def test_user_label_values_are_bounded():
    """Past the per-metric series limit new names are rejected and counted, not exported."""
    ex = Exporter(run="t", framework="trl", serve=False, gpu=False, series_limit=5)
    try:
        ex.log({f"rewards/func_{i}/mean": 1.0 for i in range(12)}, step=1)
        assert ex.flush()
        text = generate_latest(ex.registry).decode()
    finally:
        ex.close()
    names = {line.split('function="')[1].split('"')[0] for line in text.splitlines()
             if line.startswith("rl_reward_function{")}
    assert len(names) == 5, names
    assert 'rl_exporter_values_rejected_total{reason="series_limit",run="t"} 7.0' in text
