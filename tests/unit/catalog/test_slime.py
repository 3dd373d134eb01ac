"""slime vocabulary: every researched key and key family resolves, step counters kept apart."""
import ast
import re

import pytest

from exporter.catalog import CATALOG

from catalog_asserts import bundled_keys, known, lands

FW = "slime"
DATA = bundled_keys(FW)


def res(key):
    return CATALOG.resolve(key, FW)


@pytest.mark.parametrize("key", DATA["keys"])
def test_every_key_resolves_in_slime(key):
    assert known(key, FW).framework == FW


SGLANG = (r"^perf/(request/(e2e_latency|queue_time)|decode/throughput|prefill/(bootstrap_queue_"
          r"duration|bootstrap_duration|alloc_wait_duration|forward_duration|transfer_queue_duration|"
          r"transfer_speed_gb_s|transfer_total_mb|retry_count)|decode/(prealloc_duration|bootstrap_"
          r"duration|alloc_wait_duration|transfer_duration|forward_duration))/(mean|median|max|min)$")

FALLBACK = object()  # deliberately left on rl_unmapped_value

PATTERN_INSTANCES = {
    r"^train/(?:(?P<role>[a-z_]+)-)?(?P<key>[^/]+)$": [
        ("train/pg_loss", "rl_policy_loss", {}),
        ("train/critic-value_loss", "rl_value_loss", {}),
        ("train/critic-value_clipfrac", "rl_value_clip_ratio", {}),
        ("train/actor-pg_clipfrac", "rl_policy_clip_ratio", {}),
        ("train/actor-my_aux_term", FALLBACK, {}),
    ],
    r"^train/(?:(?P<role>[a-z_]+)-)?lr-pg_(?P<param_group>\d+)$": [
        ("train/lr-pg_0", "rl_next_learning_rate", {"param_group": "0", "role": "policy"}),
        ("train/lr-pg_1", "rl_next_learning_rate", {"param_group": "1", "role": "policy"}),
        ("train/actor-lr-pg_0", "rl_next_learning_rate", {"param_group": "0", "role": "policy"}),
        # read after the scheduler stepped: the next update's LR
        ("train/critic-lr-pg_0", "rl_next_learning_rate", {"param_group": "0", "role": "critic"}),
    ],
    r"^train/(?:(?P<role>[a-z_]+)-)?mtp_(?P<i>\d+)_loss$": [
        ("train/mtp_0_loss", "rl_mtp_loss", {"layer": "0"}),
        ("train/actor-mtp_1_loss", "rl_mtp_loss", {"layer": "1", "role": "actor"}),
    ],
    r"^rollout/zero_std/count_(?P<reward>.+)$": [
        ("rollout/zero_std/count_0.0", "rl_tied_groups", {"reward": "0.0"}),
        ("rollout/zero_std/count_1.0", "rl_tied_groups", {"reward": "1.0"}),
    ],
    r"^rollout/error_cat/(?P<category>.+)$": [
        ("rollout/error_cat/format_error", "rl_reward_category_ratio", {"category": "format_error"}),
    ],
    r"^rollout/dynamic_filter/drop_(?P<reason>.+)$": [
        ("rollout/dynamic_filter/drop_zero_std_1.0", "rl_dynamic_filter_dropped",
         {"reason": "zero_std_1.0"}),
    ],
    r"^rollout/correct_length/p(?P<pct>\d+)$": [
        ("rollout/correct_length/p50", "rl_response_length_tokens", {"subset": "correct", "stat": "p50"}),
        ("rollout/correct_length/p100", "rl_response_length_tokens",
         {"subset": "correct", "stat": "p100"}),
    ],
    r"^rollout/(?P<field>[^/]+)$": [
        # the Miles lab ranges: raw_reward is "the mean reward of the step" (the raw task score,
        # as veRL critic/score); rewards are group-normalised
        ("rollout/raw_reward", "rl_score", {}),
        ("rollout/rewards", "rl_normalized_reward", {}),
        ("rollout/truncated", "rl_response_truncated_ratio", {}),
        ("rollout/log_probs", "rl_token_logprob", {"policy": "current"}),
        ("rollout/top_p_kept_vocab_per_token", "rl_top_p_kept_vocab_tokens",
         {}),
    ],
    r"^perf/(?P<timer>.+)_time$": [
        ("perf/sleep_time", "rl_phase_duration_seconds", {"phase": "sleep"}),
        ("perf/update_weights_time", "rl_phase_duration_seconds", {"phase": "update_weights"}),
        ("perf/rollout_time", "rl_phase_duration_seconds", {"phase": "rollout"}),
        ("perf/step_time", "rl_step_duration_seconds", {}),
    ],
    SGLANG: [
        ("perf/request/e2e_latency/mean", "rl_inference_request_duration_seconds",
         {"phase": "request", "step": "e2e_latency"}),
        ("perf/decode/throughput/max", "rl_inference_decode_throughput_tokens_per_second",
         {"stat": "max"}),
        ("perf/prefill/transfer_speed_gb_s/median", "rl_inference_kv_transfer_bytes_per_second",
         {"stat": "median"}),
        ("perf/decode/forward_duration/min", "rl_inference_request_duration_seconds",
         {"phase": "decode", "step": "forward", "stat": "min"}),
    ],
    r"^passrate/pass@(?P<k>\d+)$": [
        ("passrate/pass@1", "rl_pass_at_k_ratio", {"k": "1"}),
        ("passrate/pass@8", "rl_pass_at_k_ratio", {"k": "8"}),
    ],
    r"^eval/(?P<dataset>[^/]+)$": [
        ("eval/gsm8k", "rl_validation_score", {"data_source": "gsm8k"}),
        ("eval/aime-2024", "rl_validation_score", {"data_source": "aime-2024"}),
    ],
    r"^eval/(?P<dataset>[^/]+)/(?P<stat>.+)$": [
        ("eval/gsm8k/response_len/mean", "rl_validation_response_length_tokens",
         {"data_source": "gsm8k"}),
        ("eval/gsm8k/response_len/max", "rl_validation_response_length_tokens",
         {"data_source": "gsm8k", "stat": "max"}),
        ("eval/gsm8k/repetition_frac", FALLBACK, {}),
    ],
    r"^eval/(?P<dataset>.+)-truncated_ratio$": [
        ("eval/gsm8k-truncated_ratio", "rl_validation_response_truncated_ratio",
         {"data_source": "gsm8k"}),
    ],
    r"^eval/(?P<dataset>.+)-pass@(?P<k>\d+)$": [
        ("eval/aime-pass@16", "rl_validation_pass_at_k_ratio", {"data_source": "aime", "k": "16"}),
    ],
}


def test_every_pattern_has_instances():
    assert set(PATTERN_INSTANCES) == set(DATA["patterns"])


@pytest.mark.parametrize("regex,key,metric,labels", [
    (rx, k, m, lab) for rx, rows in PATTERN_INSTANCES.items() for k, m, lab in rows])
def test_pattern_instances(regex, key, metric, labels):
    assert re.match(regex, key), "instance does not belong to the family"
    if metric is FALLBACK:  # no canonical meaning: on the fallback, on purpose, with a reason
        r = known(key, FW)
        assert r.fallback and r.deliberate and dict(r.labels) == {"key": key}, r
        return
    lands(key, FW, metric, labels, scale=None)


# key, metric, labels, scale, aggregation
TABLE = [
    ("train/pg_clipfrac", "rl_policy_clip_ratio", {}, 1.0, "weighted_mean"),
    ("train/ppo_kl", "rl_policy_kl", {}, 1.0, "weighted_mean"),
    ("train/loss", "rl_loss", {}, 1.0, "weighted_mean"),
    ("train/entropy_loss", "rl_entropy_loss", {}, 1.0, "weighted_mean"),
    ("train/grad_norm", "rl_grad_norm", {}, 1.0, "last"),
    ("train/critic-grad_norm", "rl_critic_grad_norm", {}, 1.0, "last"),
    ("train/train_rollout_logprob_abs_diff", "rl_train_inference_logprob_abs_diff", {}, 1.0,
     "weighted_mean"),
    ("train/tis", "rl_rollout_importance_weight", {}, 1.0, "mean"),
    ("train/opd_reverse_kl", "rl_distillation_divergence", {}, 1.0, "weighted_mean"),
    ("train/global_batch_size", "rl_responses", {}, 1.0, "sum"),
    ("rollout/response_len/mean", "rl_response_length_tokens", {}, 1.0, "weighted_mean"),
    ("rollout/response_len/max", "rl_response_length_tokens", {"stat": "max"}, 1.0, "max"),
    ("rollout/response_len/median", "rl_response_length_tokens", {"stat": "median"}, 1.0, "mean"),
    ("rollout/truncated_ratio", "rl_response_truncated_ratio", {}, 1.0, "weighted_mean"),
    ("rollout/entropy", "rl_entropy", {}, 1.0, "weighted_mean"),
    ("perf/actor_train_tflops", "rl_achieved_flops_per_second", {"phase": "actor_train"}, 1e12, "mean"),
    ("perf/tokens_per_gpu_per_sec", "rl_gpu_throughput_tokens_per_second", {"phase": "rollout"}, 1.0,
     "mean"),
    ("perf/wait_time_ratio", "rl_trainer_idle_ratio", {}, 1.0, "mean"),
    ("perf/non_generation_time/max", "rl_rollout_non_generation_seconds", {"stat": "max"}, 1.0, "max"),
    ("perf/longest_sample_non_generation_time", "rl_rollout_non_generation_seconds",
     {"sample": "longest", "effective": "false"}, 1.0, "mean"),
    ("multi_turn/multi_turn_metric/round_number_max", "rl_turns", {"stat": "max"}, 1.0, "max"),
    ("multi_turn/raw_response_length/response_length_min", "rl_response_length_tokens",
     {"subset": "with_observations", "stat": "min"}, 1.0, "min"),
    ("multi_turn/wo_obs_response_length/response_length_mean", "rl_response_length_tokens",
     {"subset": "without_observations"}, 1.0, "weighted_mean"),
    ("rollout/step", "rl_step_counter", {"counter": "rollout"}, 1.0, "max"),
    ("eval/step", "rl_step_counter", {"counter": "eval"}, 1.0, "max"),
]


@pytest.mark.parametrize("key,metric,labels,scale,agg", TABLE)
def test_important_keys(key, metric, labels, scale, agg):
    r = res(key)
    assert r.metric.name == metric
    assert dict(r.labels) == labels
    assert r.scale == scale
    assert r.agg == agg


def test_only_train_step_is_the_training_step():
    assert res("train/step").step and res("train/step").metric.name == "rl_training_step"
    for key in ("rollout/step", "eval/step"):
        r = res(key)
        assert not r.step and r.metric.name != "rl_training_step"


CONSOLE = ("[2026-08-21 17:14:19] model.py:918 - step 7: {'train/loss': -0.0031, 'train/pg_loss': "
           "-0.0031, 'train/entropy_loss': 0.41, 'train/pg_clipfrac': 0.0012, 'train/ppo_kl': 1.3e-05, "
           "'train/grad_norm': 0.27, 'train/lr-pg_0': 1e-06, 'train/global_batch_size': 256, "
           "'train/step': 7}")


def parse_console(line):
    return ast.literal_eval(line.split(": ", 1)[1])


def test_console_frame_resolves_with_zero_fallbacks():
    frame = parse_console(CONSOLE)
    assert frame["train/step"] == 7
    series = {}
    for key in frame:
        r = res(key)
        assert not r.fallback and not r.ignored, key
        sid = (r.metric.name, r.labels)
        assert sid not in series, f"{key} and {series[sid]} collide"
        series[sid] = key
    assert res("train/lr-pg_0").metric.name == "rl_next_learning_rate"


def test_unprefixed_unknown_keys_fall_back_rather_than_hide():
    """train/ and rollout/ are shared with posttrain/AReaL: no catch-all there, so a new key shows
    up as rl_unmapped_value instead of being swallowed (also under framework="auto")."""
    for key in ("train/brand_new_term", "rollout/brand_new_field"):
        assert res(key).fallback
