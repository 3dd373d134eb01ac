"""Chunk reduction against hand-computed values from seed 000's definitions
(posttrain: weighted_by, SUMMED_TRAIN_COUNT_KEYS, max_reduced, last chunk for the
applied update, zero weight = no data)."""
import math

import pytest

from exporter.catalog import CATALOG, Catalog
from exporter.catalog.model import LAST, MAX, MEAN, MIN, SUM, WMEAN, Vocabulary, alias
from exporter.reduce import Layout, key_rules, reduce_frames

# A posttrain-like vocabulary written from seed 000, so these tests do not depend on
# how the shared posttrain vocabulary is being filled in.
_K = {
    "train/loss_avg": alias("rl_loss", weight="train/weight_sum"),
    "train/valid_token_count": alias("rl_valid_tokens"),
    "train/valid_sequence_count": alias("rl_valid_sequences"),
    "train/response_count": alias("rl_responses"),
    "train/logprob_gap_token_count": alias("rl_train_inference_tokens"),
    "train/clip_frac": alias("rl_policy_clip_ratio", weight="train/valid_token_count"),
    "train/seq_clip_frac": alias("rl_policy_sequence_clip_ratio",
                                 weight="train/valid_sequence_count"),
    # no alias weight: the metric's canonical weight (rl_train_inference_tokens / rl_responses)
    "train/logprob_gap_mean": alias("rl_train_inference_logprob_abs_diff"),
    "train/rollout_truncated_frac": alias("rl_response_truncated_ratio"),
    "train/kl_mean": alias("rl_reference_kl", weight="train/valid_token_count"),
    "train/kl_max": alias("rl_reference_kl", stat="max"),
    "train/response_len_mean": alias("rl_response_length_tokens", weight="train/response_count"),
    "train/response_len_max": alias("rl_response_length_tokens", stat="max"),
    "train/reward_min": alias("rl_reward", stat="min"),
    "train/grad_norm": alias("rl_grad_norm"),
    "train/learning_rate": alias("rl_learning_rate", agg=MEAN),
    "timer/e2e_step_s": alias("rl_step_duration_seconds", agg=MEAN),
    "optim/nonfinite_skips_total": alias("rl_optimizer_nonfinite_skips_total"),
    "optim/update_outcome": alias("rl_optimizer_update_outcome"),
}
PT = Catalog(list(CATALOG.metrics.values()),
             [Vocabulary("pt", "posttrain-like", keys=_K, step_keys=("step",))])


def red(frames):
    return reduce_frames(frames, "pt", catalog=PT)


def test_rules_follow_catalog_and_seed():
    keys = list(_K) + ["train/weight_sum", "no/such_key"]
    rules = key_rules(keys, "pt", PT)
    assert rules["train/clip_frac"].agg == WMEAN
    assert rules["train/clip_frac"].weight == "train/valid_token_count"
    # canonical weight fallback: rl_train_inference_tokens -> the raw key present
    assert rules["train/logprob_gap_mean"].weight == "train/logprob_gap_token_count"
    assert rules["train/rollout_truncated_frac"].weight == "train/response_count"
    assert rules["train/kl_max"].agg == MAX and rules["train/response_len_max"].agg == MAX
    assert rules["train/reward_min"].agg == MIN
    assert rules["train/grad_norm"].agg == LAST
    assert rules["train/learning_rate"].agg == MEAN
    for k in ("train/valid_token_count", "train/valid_sequence_count", "train/response_count",
              "train/logprob_gap_token_count"):
        assert rules[k].agg == SUM  # SUMMED_TRAIN_COUNT_KEYS
    # an unknown key used as a weight is still summed (seed: "together with every weight key")
    assert rules["train/weight_sum"].agg == SUM and "weight" in rules["train/weight_sum"].note
    assert rules["no/such_key"].agg == MEAN and "unknown" in rules["no/such_key"].note
    assert rules["optim/nonfinite_skips_total"].agg == MAX  # cumulative counter
    assert rules["optim/update_outcome"].agg == LAST


def test_weighted_mean_is_total_over_total():
    # chunk 1: 10 of 100 tokens clipped; chunk 2: 90 of 300 -> 100/400, not mean(0.1, 0.3)
    out = red([{"train/clip_frac": 0.1, "train/valid_token_count": 100},
               {"train/clip_frac": 0.3, "train/valid_token_count": 300}])
    assert out["train/clip_frac"] == pytest.approx(100 / 400)
    assert out["train/clip_frac"] != pytest.approx((0.1 + 0.3) / 2)
    assert out["train/valid_token_count"] == 400 and isinstance(out["train/valid_token_count"], int)
    assert out.counts["train/clip_frac"] == 2


def test_weight_sum_weighting_and_sum():
    out = red([{"train/loss_avg": 2.0, "train/weight_sum": 1.0},
               {"train/loss_avg": 5.0, "train/weight_sum": 3.0}])
    assert out["train/loss_avg"] == pytest.approx((2 * 1 + 5 * 3) / 4)
    assert out["train/weight_sum"] == pytest.approx(4.0)


def test_truncated_fraction_by_response_count():
    # 2 of 8 cut, 6 of 24 cut -> 8/32
    out = red([{"train/rollout_truncated_frac": 0.25, "train/response_count": 8,
                "train/response_len_mean": 100.0, "train/response_len_max": 512},
               {"train/rollout_truncated_frac": 0.25, "train/response_count": 24,
                "train/response_len_mean": 200.0, "train/response_len_max": 4096}])
    assert out["train/rollout_truncated_frac"] == pytest.approx(8 / 32)
    assert out["train/response_len_mean"] == pytest.approx((100 * 8 + 200 * 24) / 32)
    assert out["train/response_len_max"] == 4096
    assert isinstance(out["train/response_len_max"], int)  # an integer extremum stays int


def test_max_min_never_a_mean():
    out = red([{"train/kl_max": 0.5, "train/reward_min": -1.0},
               {"train/kl_max": 7.25, "train/reward_min": 0.5},
               {"train/kl_max": 1.0}])
    assert out["train/kl_max"] == 7.25 and isinstance(out["train/kl_max"], float)
    assert out["train/reward_min"] == -1.0
    assert out.counts["train/reward_min"] == 2


def test_last_chunk_is_the_applied_update():
    out = red([{"train/grad_norm": 9.0, "train/learning_rate": 1e-6},
               {"train/grad_norm": 1.5, "train/learning_rate": 3e-6}])
    assert out["train/grad_norm"] == 1.5
    assert out["train/learning_rate"] == pytest.approx(2e-6)  # seed: plain mean


def test_plain_mean_and_unknown_keys():
    out = red([{"timer/e2e_step_s": 2.0, "x/unknown": 1}, {"timer/e2e_step_s": 4.0, "x/unknown": 2}])
    assert out["timer/e2e_step_s"] == 3.0
    assert out["x/unknown"] == 1.5
    assert "unknown" in out.notes["x/unknown"]


def test_zero_weight_is_no_data():
    # seed 000: without recorded logprobs the gap keys are 0.0 with zero weight
    out = red([{"train/logprob_gap_mean": 0.0, "train/logprob_gap_token_count": 0},
               {"train/logprob_gap_mean": 0.0, "train/logprob_gap_token_count": 0}])
    assert "train/logprob_gap_mean" not in out
    assert "train/logprob_gap_mean" in out.no_data
    assert out["train/logprob_gap_token_count"] == 0


def test_zero_weight_chunk_does_not_dilute():
    # one chunk measured 0.2 over 50 tokens, another had no logprobs (0.0, weight 0)
    out = red([{"train/logprob_gap_mean": 0.2, "train/logprob_gap_token_count": 50},
               {"train/logprob_gap_mean": 0.0, "train/logprob_gap_token_count": 0}])
    assert out["train/logprob_gap_mean"] == pytest.approx(0.2)
    # a NaN value with zero weight carries no data either
    out = red([{"train/logprob_gap_mean": 0.2, "train/logprob_gap_token_count": 50},
               {"train/logprob_gap_mean": math.nan, "train/logprob_gap_token_count": 0}])
    assert out["train/logprob_gap_mean"] == pytest.approx(0.2)


def test_missing_weight_falls_back_to_plain_mean_and_says_so():
    out = red([{"train/clip_frac": 0.1, "train/valid_token_count": 100},
               {"train/clip_frac": 0.3}])
    assert out["train/clip_frac"] == pytest.approx(0.2)
    assert "missing" in out.notes["train/clip_frac"]
    out = red([{"train/clip_frac": 0.1}, {"train/clip_frac": 0.3}])  # no weight key at all
    assert out["train/clip_frac"] == pytest.approx(0.2)
    assert "no such key" in out.notes["train/clip_frac"]


def test_presence_over_inputs_that_have_the_key():
    out = red([{"train/kl_mean": 0.1, "train/valid_token_count": 10},
               {"train/valid_token_count": 30},
               {"train/kl_mean": 0.5, "train/valid_token_count": 10}])
    assert out["train/kl_mean"] == pytest.approx((0.1 * 10 + 0.5 * 10) / 20)
    assert out.counts["train/kl_mean"] == 2 and out.counts["train/valid_token_count"] == 3
    assert out["train/valid_token_count"] == 50
    assert out.inputs == 3


def test_nan_is_data():
    out = red([{"train/kl_mean": math.nan, "train/valid_token_count": 10, "train/kl_max": math.nan},
               {"train/kl_mean": 0.5, "train/valid_token_count": 10, "train/kl_max": 3.0}])
    assert math.isnan(out["train/kl_mean"])
    assert math.isnan(out["train/kl_max"])  # explicitly, whatever the order
    out = red([{"train/kl_max": 3.0}, {"train/kl_max": math.nan}])
    assert math.isnan(out["train/kl_max"])


def test_counters_strings_steps_none():
    out = red([{"optim/nonfinite_skips_total": 3, "optim/update_outcome": "accumulating", "step": 7,
                "train/grad_norm": None},
               {"optim/nonfinite_skips_total": 4, "optim/update_outcome": "applied", "step": 7}])
    assert out["optim/nonfinite_skips_total"] == 4
    assert out["optim/update_outcome"] == "applied"
    assert out["step"] == 7
    assert "train/grad_norm" not in out


def test_verl_catalog_rules():
    # the shared catalog: veRL's pg_clipfrac is a plain mean over micro-batches (alias override)
    out = reduce_frames([{"actor/pg_clipfrac": 0.1, "response_length/max": 10, "timing_s/gen": 3.0},
                         {"actor/pg_clipfrac": 0.3, "response_length/max": 30, "timing_s/gen": 5.0}],
                        "verl")
    assert out["actor/pg_clipfrac"] == pytest.approx(0.2)
    assert out["response_length/max"] == 30
    assert out["timing_s/gen"] == 5.0  # phase durations: the slowest (catalog: max)


def test_numpy_and_torch_scalars():
    np = pytest.importorskip("numpy")
    out = red([{"train/response_len_max": np.int64(7), "train/kl_max": np.float32(0.5)},
               {"train/response_len_max": np.int32(9), "train/kl_max": 0.25}])
    assert out["train/response_len_max"] == 9 and isinstance(out["train/response_len_max"], int)
    assert out["train/kl_max"] == 0.5
    torch = pytest.importorskip("torch")
    out = red([{"train/response_len_max": torch.tensor(11), "train/clip_frac": torch.tensor(0.5),
                "train/valid_token_count": torch.tensor(4)},
               {"train/response_len_max": torch.tensor(3), "train/clip_frac": 0.0,
                "train/valid_token_count": 4}])
    assert out["train/response_len_max"] == 11 and isinstance(out["train/response_len_max"], int)
    assert out["train/clip_frac"] == pytest.approx(0.25)


def test_layout_pack_is_the_shared_arithmetic():
    lay = Layout(key_rules(["train/kl_max", "train/reward_min"], "pt", PT))
    s, mx = lay.pack({"train/kl_max": (2.0, False), "train/reward_min": (-3.0, True)})
    assert sorted(mx) == [2.0, 3.0]  # min keys are negated for one MAX reduction
    assert s[0] == 0.0  # reserved


def test_reduced_frame_exports_through_the_hook():
    from exporter.testing import export_frame
    out = reduce_frames([{"response_length/max": 10, "timing_s/gen": 3.0},
                         {"response_length/max": 30, "timing_s/gen": 5.0}], "verl")
    series = export_frame(dict(out), "verl")
    assert series[("rl_response_length_tokens", (("stat", "max"),))] == 30
    assert series[("rl_phase_duration_seconds", (("phase", "gen"),))] == 5.0
