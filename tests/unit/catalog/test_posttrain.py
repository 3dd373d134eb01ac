"""posttrain vocabulary: every researched key resolves, aggregation follows seed 000 exactly."""
import re

import pytest

from exporter.catalog import CATALOG

from catalog_asserts import bundled_keys, known, lands

FW = "posttrain"
DATA = bundled_keys(FW)


def res(key):
    return CATALOG.resolve(key, FW)


@pytest.mark.parametrize("key", DATA["keys"])
def test_every_key_resolves_in_posttrain(key):
    assert known(key, FW).framework == FW


# Each researched pattern with concrete instances: (key, metric, labels).
PATTERN_INSTANCES = {
    r"^train/(behavior|reference_behavior|policy_reference)_logprob_delta_(?P<stat>.+)$": [
        ("train/behavior_logprob_delta_mean", "rl_logprob_delta", {"pair": "behavior"}),
        ("train/reference_behavior_logprob_delta_max", "rl_logprob_delta",
         {"pair": "reference_behavior", "stat": "max"}),
        ("train/policy_reference_logprob_delta_std", "rl_logprob_delta",
         {"pair": "policy_reference", "stat": "std"}),
    ],
    r"^train/initial_ratio_(?P<stat>.+)$": [
        ("train/initial_ratio_mean", "rl_pre_update_importance_ratio", {}),
        ("train/initial_ratio_max", "rl_pre_update_importance_ratio", {"stat": "max"}),
    ],
    r"^timer/source_(?P<source>.+)$": [
        ("timer/source_gsm8k", "rl_phase_duration_seconds", {"phase": "source_gsm8k"}),
    ],
}


def test_every_pattern_has_instances():
    assert set(PATTERN_INSTANCES) == set(DATA["patterns"])


@pytest.mark.parametrize("regex,key,metric,labels", [
    (rx, k, m, lab) for rx, rows in PATTERN_INSTANCES.items() for k, m, lab in rows])
def test_pattern_instances(regex, key, metric, labels):
    assert re.match(regex, key), "instance does not belong to the family"
    lands(key, FW, metric, labels, scale=None)


TOK, SEQ, RESP, GAP, SC = ("train/valid_token_count", "train/valid_sequence_count",
                           "train/response_count", "train/logprob_gap_token_count",
                           "train/sc_token_count")
# key, metric, labels, aggregation, weight (seed 000: weighted_by / SUMMED / max_reduced / last)
TABLE = [
    ("train/clip_frac", "rl_policy_clip_ratio", {}, "weighted_mean", TOK),
    ("train/ratio_absdev", "rl_importance_ratio_abs_deviation", {}, "weighted_mean", TOK),
    ("train/kl_mean", "rl_reference_kl", {}, "weighted_mean", TOK),
    ("train/kl_max", "rl_reference_kl", {"stat": "max"}, "max", None),
    ("train/response_len_max", "rl_response_length_tokens", {"stat": "max"}, "max", None),
    ("train/sc_rho_max", "rl_score_centering_tail_mass_ratio", {"stat": "max"}, "max", None),
    ("train/sc_rho_mean", "rl_score_centering_tail_mass_ratio", {}, "weighted_mean", SC),
    ("train/sc_head_mass_q", "rl_score_centering_head_mass_ratio", {"engine": "sampler"},
     "weighted_mean", SC),
    ("train/seq_clip_frac", "rl_policy_sequence_clip_ratio", {}, "weighted_mean", SEQ),
    ("train/seq_log_ratio_abs", "rl_sequence_log_ratio_abs", {}, "weighted_mean", SEQ),
    ("train/rollout_truncated_frac", "rl_response_truncated_ratio", {}, "weighted_mean", RESP),
    ("train/response_len_mean", "rl_response_length_tokens", {}, "weighted_mean", RESP),
    ("train/logprob_gap_mean", "rl_train_inference_logprob_abs_diff", {}, "weighted_mean", GAP),
    ("train/mean_rank_logprob_gap_p99", "rl_train_inference_logprob_abs_diff", {"stat": "p99"},
     "weighted_mean", GAP),
    ("train/logprob_gap_gt0p5_frac", "rl_train_inference_logprob_tail_ratio", {"threshold": "0.5"},
     "weighted_mean", GAP),
    ("train/loss_avg", "rl_loss", {}, "weighted_mean", "train/weight_sum"),
    # SUMMED_TRAIN_COUNT_KEYS and weight keys
    ("train/valid_token_count", "rl_valid_tokens", {}, "sum", None),
    ("train/valid_sequence_count", "rl_valid_sequences", {}, "sum", None),
    ("train/response_count", "rl_responses", {}, "sum", None),
    ("train/logprob_gap_token_count", "rl_train_inference_tokens", {}, "sum", None),
    ("train/weight_sum", "rl_objective_weight_sum", {}, "sum", None),
    ("train/sc_token_count", "rl_score_centering_tokens", {}, "sum", None),
    ("train/routing_replay_pinned_tokens", "rl_routing_replay_pinned_tokens", {}, "sum", None),
    # an id: the latest, never a sum
    ("optim/attempt_id", "rl_optimizer_attempts_total", {}, "last", None),
    # held-out DPO keys (were on the fallback)
    ("val/dpo_reward_winner", "rl_preference_reward", {"side": "chosen", "split": "eval"}, "mean",
     None),
    ("val/dpo_err_pol_w", "rl_dpo_denoising_error",
     {"network": "policy", "side": "chosen", "split": "eval"}, "mean", None),
    ("val/dpo_raw_ref_loss", "rl_dpo_raw_loss", {"network": "reference", "split": "eval"}, "mean",
     None),
    # the applied update
    ("train/grad_norm", "rl_grad_norm", {}, "last", None),
    # plain means
    ("train/learning_rate", "rl_learning_rate", {}, "mean", None),
    ("timer/e2e_step_s", "rl_step_duration_seconds", {}, "mean", None),
    ("train/kl_beta", "rl_kl_coefficient", {}, "mean", None),
    ("train/reward_mean", "rl_reward", {}, "mean", None),
    ("train/reward_max", "rl_reward", {"stat": "max"}, "mean", None),
    ("train/grpo_informative_group_count", "rl_groups", {"outcome": "informative"}, "mean", None),
    ("train/grpo_group_count", "rl_groups", {"outcome": "total"}, "mean", None),
    ("train/grpo_tied_group_count", "rl_groups", {"outcome": "tied"}, "mean", None),
    ("train/dpo_reward_winner", "rl_preference_reward", {"side": "chosen"}, "mean", None),
    ("train/dpo_err_ref_l", "rl_dpo_denoising_error", {"network": "reference", "side": "rejected"},
     "mean", None),
    # PPO: token-weighted over valid action tokens
    ("train/clip_fraction", "rl_policy_clip_ratio", {}, "weighted_mean", "train/valid_action_tokens"),
    ("train/value_loss", "rl_value_loss", {}, "weighted_mean", "train/valid_action_tokens"),
    # post-step LRs are the NEXT update's, not the applied one's (train/learning_rate)
    ("train/critic_lr", "rl_next_learning_rate", {"role": "critic"}, "last", None),
    ("train/policy_lr", "rl_next_learning_rate", {"role": "policy"}, "last", None),
    # optimizer outcome
    ("optim/update_outcome", "rl_optimizer_update_outcome", {}, "last", None),
    ("optim/skip_reason", "rl_optimizer_skip_reason", {}, "last", None),
    # cumulative counters: every chunk and rank reports the same running total, so max
    ("optim/nonfinite_skips_total", "rl_optimizer_nonfinite_skips_total", {}, "max", None),
    ("optim/zero_grad_skips_total", "rl_optimizer_zero_grad_skips_total", {}, "max", None),
    ("optim/policy_optimizer_step", "rl_optimizer_steps_total", {"role": "policy"}, "max", None),
    ("optim/critic_optimizer_step", "rl_optimizer_steps_total", {"role": "critic"}, "max", None),
    ("optim/finite_gradient_check_enabled", "rl_config_value",
     {"parameter": "finite_gradient_check_enabled"}, "last", None),
    # validation
    ("val/reward_avg", "rl_validation_score", {}, "mean", None),
    ("val/loss_avg", "rl_validation_loss", {}, "mean", None),
    ("val/dpo_accuracy", "rl_preference_accuracy_ratio", {"split": "eval"}, "mean", None),
]


@pytest.mark.parametrize("key,metric,labels,agg,weight", TABLE)
def test_important_keys(key, metric, labels, agg, weight):
    r = res(key)
    assert r.metric.name == metric
    assert dict(r.labels) == labels
    assert r.agg == agg
    assert r.weight == weight
    assert r.scale == 1.0
    if weight is not None:  # a weight is itself a raw key of posttrain that resolves to a count
        w = res(weight)
        assert not w.fallback and w.agg == "sum"


def test_string_valued_keys_are_states():
    for key, states in (("optim/update_outcome", {"applied", "skipped", "accumulating", "discarded"}),
                        ("optim/skip_reason", {"nonfinite_loss", "nonfinite_gradient"})):
        m = res(key).metric
        assert m.kind == "state" and states <= set(m.states)


# The GRPO loop's per-step frame (seed 000: headline keys plus the objective adapter's keys).
GRPO_FRAME = {
    "train/loss_avg": 0.0123, "train/weight_sum": 5120.0, "train/valid_sequence_count": 64,
    "train/valid_token_count": 5120, "train/grad_norm": 0.31, "train/learning_rate": 1e-6,
    "timer/e2e_step_s": 41.7, "train/clip_frac": 0.0, "train/ratio_absdev": 0.0,
    "train/seq_clip_frac": 0.0, "train/seq_log_ratio_abs": 0.0, "train/logprob_gap_mean": 0.014,
    "train/mean_rank_logprob_gap_p99": 0.21, "train/logprob_gap_gt0p5_frac": 0.0008,
    "train/logprob_gap_token_count": 5120, "train/kl_mean": 0.0011, "train/kl_max": 0.42,
    "train/kl_beta": 0.01, "train/response_count": 64, "train/rollout_truncated_frac": 0.03,
    "train/response_len_mean": 80.0, "train/response_len_max": 256, "train/reward_mean": 0.84,
    "train/reward_std": 0.3, "train/reward_min": 0.0, "train/reward_max": 1.0,
    "train/rollout_count": 64, "train/grpo_group_count": 8, "train/grpo_informative_group_count": 5,
    "train/grpo_tied_group_count": 3, "train/grpo_all_zero_group_count": 1,
    "train/grpo_all_one_group_count": 2, "optim/update_outcome": "applied", "optim/step_skipped": 0,
    "optim/attempt_id": 12, "optim/optimizer_step": 12, "optim/nonfinite_skips_total": 0,
    "optim/nonfinite_skips_consecutive": 0, "optim/zero_grad_skips_total": 1,
    "optim/finite_gradient_check_enabled": 1,
}


def test_grpo_frame_resolves_without_fallbacks_or_collisions():
    series = {}
    for key in GRPO_FRAME:
        r = res(key)
        assert not r.fallback and not r.ignored, key
        sid = (r.metric.name, r.labels)
        assert sid not in series, f"{key} and {series[sid]} both become {sid}"
        series[sid] = key


def test_dpo_nft_losses_are_plain_means_even_with_a_token_count():
    """Seed 000: DPO/NFT/flow-BC loss_avg and NFT policy_loss are plain means. Their own weight
    keys (weight_sum, valid_action_tokens) are absent, and the canonical token weight must not
    step in just because train/valid_token_count is in the frame."""
    from exporter.reduce import reduce_frames
    chunks = [{"train/loss_avg": 1.0, "train/policy_loss": 1.0, "train/valid_token_count": 1},
              {"train/loss_avg": 3.0, "train/policy_loss": 3.0, "train/valid_token_count": 99}]
    out = reduce_frames(chunks, FW)
    assert out["train/loss_avg"] == 2.0
    assert out["train/policy_loss"] == 2.0
    # GRPO: with weight_sum present the loss is weighted by it
    grpo = [{"train/loss_avg": 1.0, "train/weight_sum": 1.0},
            {"train/loss_avg": 3.0, "train/weight_sum": 3.0}]
    assert reduce_frames(grpo, FW)["train/loss_avg"] == 2.5


def test_zero_token_logprob_gap_is_no_data():
    from exporter.reduce import reduce_frames
    out = reduce_frames([{"train/logprob_gap_mean": 0.0, "train/logprob_gap_token_count": 0}], FW)
    assert "train/logprob_gap_mean" not in out and "train/logprob_gap_mean" in out.no_data
