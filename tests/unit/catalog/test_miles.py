"""Miles vocabulary: slime's keys plus Miles' own, all resolving in the Miles vocabulary."""
import ast
import json
import re

import pytest

from catalog_asserts import bundled_keys, known, lands
from exporter.catalog import CATALOG

FW = "miles"
DATA = bundled_keys(FW)
SLIME = bundled_keys("slime")
ALL_SLIME = "(all slime patterns also apply)"


def res(key):
    return CATALOG.resolve(key, FW)


@pytest.mark.parametrize("key", DATA["keys"] + SLIME["keys"])
def test_every_key_resolves_in_miles(key):
    """Miles' own keys, and slime's (same families), resolve in the Miles vocabulary."""
    assert known(key, FW).framework == FW


@pytest.mark.parametrize("key", SLIME["keys"])
def test_slime_keys_mean_the_same_in_miles(key):
    m, s = res(key), CATALOG.resolve(key, "slime")
    assert (m.metric and m.metric.name, m.labels, m.scale, m.agg) == \
           (s.metric and s.metric.name, s.labels, s.scale, s.agg)


FALLBACK = object()  # deliberately left on rl_unmapped_value

PATTERN_INSTANCES = {
    r"^train/(?:(?P<role>[a-z_]+)-)?lr-pg_(?P<param_group>\d+)$": [
        ("train/lr-pg_0", "rl_next_learning_rate", {"param_group": "0", "role": "policy"}),
        ("train/actor-lr-pg_2", "rl_next_learning_rate", {"param_group": "2", "role": "policy"}),
    ],
    r"^rollout/tito_session_mismatch_rate/(?P<server_version>[^/]+)(/(?P<type>.+))?$": [
        ("rollout/tito_session_mismatch_rate/v2", "rl_tito_session_mismatch_ratio",
         {"server_version": "v2"}),
        ("rollout/tito_session_mismatch_rate/v2/prefix", "rl_tito_session_mismatch_ratio",
         {"server_version": "v2", "type": "prefix"}),
    ],
    r"^perf/cpu_memory_(?P<label>.+)_gb$": [
        ("perf/cpu_memory_used_gb", "rl_host_memory_used_bytes", {}),
        ("perf/cpu_memory_available_gb", "rl_host_memory_bytes", {"kind": "available"}),
    ],
    r"^eval/(?P<dataset>.+)-none_reward_ratio$": [
        ("eval/gsm8k-none_reward_ratio", "rl_validation_none_reward_ratio",
         {"data_source": "gsm8k"}),
    ],
    r"^eval/skipped_(?P<reason>.+)$": [
        ("eval/skipped_timeout", "rl_eval_skipped", {"reason": "timeout"}),
    ],
    # "(all slime patterns also apply)": one instance per slime family
    ALL_SLIME: [
        ("train/critic-value_loss", "rl_value_loss", {}),
        ("train/mtp_0_loss", "rl_mtp_loss", {"layer": "0"}),
        ("rollout/zero_std/count_1.0", "rl_tied_groups", {"reward": "1.0"}),
        ("rollout/error_cat/timeout", "rl_reward_category_ratio", {"category": "timeout"}),
        ("rollout/dynamic_filter/drop_zero_std", "rl_dynamic_filter_dropped", {"reason": "zero_std"}),
        ("rollout/correct_length/p75", "rl_response_length_tokens", {"subset": "correct", "stat": "p75"}),
        ("rollout/raw_reward", "rl_score", {}),
        ("perf/eval_rollout_time", "rl_phase_duration_seconds", {"phase": "eval_rollout"}),
        ("perf/request/queue_time/median", "rl_inference_request_duration_seconds",
         {"phase": "request", "step": "queue_time", "stat": "median"}),
        ("passrate/pass@4", "rl_pass_at_k_ratio", {"k": "4"}),
        ("eval/gsm8k", "rl_validation_score", {"data_source": "gsm8k"}),
        ("eval/gsm8k/weight_version/max", FALLBACK, {}),
        ("eval/gsm8k-truncated_ratio", "rl_validation_response_truncated_ratio",
         {"data_source": "gsm8k"}),
        ("eval/gsm8k-pass@8", "rl_validation_pass_at_k_ratio", {"data_source": "gsm8k", "k": "8"}),
    ],
}


def test_every_pattern_has_instances():
    assert set(PATTERN_INSTANCES) == set(DATA["patterns"])
    # and every slime family is exercised through the Miles vocabulary
    for rx in SLIME["patterns"]:
        assert any(re.match(rx, k) for rows in PATTERN_INSTANCES.values() for k, _, _ in rows), rx


@pytest.mark.parametrize("regex,key,metric,labels", [
    (rx, k, m, lab) for rx, rows in PATTERN_INSTANCES.items() for k, m, lab in rows])
def test_pattern_instances(regex, key, metric, labels):
    if regex != ALL_SLIME:
        assert re.match(regex, key), "instance does not belong to the family"
    if metric is FALLBACK:  # no canonical meaning: on the fallback, on purpose, with a reason
        r = known(key, FW)
        assert r.fallback and r.deliberate and dict(r.labels) == {"key": key}, r
        return
    lands(key, FW, metric, labels, scale=None)


GB = 2.0 ** 30
# key, metric, labels, scale, aggregation
TABLE = [
    ("train/pg_clipfrac", "rl_policy_clip_ratio", {}, 1.0, "weighted_mean"),
    ("train/train_rollout_kl", "rl_train_inference_kl", {"estimator": "k3"}, 1.0, "weighted_mean"),
    ("train/train_rollout_logprob_abs_diff", "rl_train_inference_logprob_abs_diff", {}, 1.0,
     "weighted_mean"),
    ("train/ess_ratio", "rl_importance_ess_ratio", {}, 1.0, "mean"),
    ("train/critic-value_clipfrac", "rl_value_clip_ratio", {}, 1.0, "weighted_mean"),
    ("rollout/weight_version/mean", "rl_sample_weight_version", {}, 1.0, "mean"),
    ("rollout/weight_version/max", "rl_sample_weight_version", {"stat": "max"}, 1.0, "max"),
    ("rollout/weight_version/mixed_version_ratio", "rl_mixed_version_sample_ratio", {}, 1.0, "mean"),
    ("rollout/zero_std/all_zero_percentage", "rl_group_outcome_ratio", {"outcome": "all_zero"}, 0.01,
     "mean"),
    ("rollout/zero_std/all_one_percentage", "rl_group_outcome_ratio", {"outcome": "all_one"}, 0.01,
     "mean"),
    ("perf/actor_train_mfu", "rl_mfu_ratio", {"role": "actor", "phase": "train", "source": "framework"},
     1.0, "mean"),
    ("perf/mfu_peak_tflops", "rl_peak_flops_per_second", {}, 1e12, "last"),
    ("perf/actor_train_tflops", "rl_achieved_flops_per_second", {"phase": "actor_train"}, 1e12, "mean"),
    ("perf/cpu_memory_used_gb", "rl_host_memory_used_bytes", {}, GB, "max"),
    ("perf/update_weights_implementation_time", "rl_phase_duration_seconds",
     {"phase": "update_weights_implementation"}, 1.0, "max"),
    ("perf/step_time", "rl_step_duration_seconds", {}, 1.0, "max"),
    ("rollout/step", "rl_step_counter", {"counter": "rollout"}, 1.0, "max"),
    ("eval/lag_steps", "rl_eval_lag_steps", {}, 1.0, "max"),
]


@pytest.mark.parametrize("key,metric,labels,scale,agg", TABLE)
def test_important_keys(key, metric, labels, scale, agg):
    r = res(key)
    assert r.metric.name == metric
    assert dict(r.labels) == labels
    assert r.scale == scale
    assert r.agg == agg


CONSOLE = ("[2026-08-21 18:09:36.123 actor_cell0_rank0] log_utils.py:542 - step 7: {'train/loss': "
           "-0.0031, 'train/pg_loss': -0.0031, 'train/grad_norm': 0.27, 'train/lr-pg_0': 1e-06, "
           "'train/step': 7}")
JSONL = ('{"timestamp":"2026-08-21T18:09:36.123456Z","source":{"component":"main"},"type":"metric",'
         '"rollout_id":null,"attempt":null,"metrics":{"perf/rollout_time":41.2,"rollout/step":3}}')


def test_console_and_jsonl_frames_resolve_with_zero_fallbacks():
    frame = ast.literal_eval(CONSOLE.split(" - step 7: ", 1)[1])
    frame.update(json.loads(JSONL)["metrics"])
    for key in frame:
        r = res(key)
        assert not r.fallback and not r.ignored, key
    assert res("train/step").step
    assert not res("rollout/step").step
