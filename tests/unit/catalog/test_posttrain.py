"""posttrain: facts beyond the shared conformance (test_conformance.py, data/posttrain.json):
string-valued keys are states, one GRPO frame has no fallbacks or collisions, and DPO/NFT losses
reduce as the system's own description says."""
from tests.helpers import res

from .catalog_asserts import frame_lands

FW = "posttrain"


def test_string_valued_keys_are_states():
    for key, states in (("optim/update_outcome", {"applied", "skipped", "accumulating", "discarded"}),
                        ("optim/skip_reason", {"nonfinite_loss", "nonfinite_gradient"})):
        m = res(key, FW).metric
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
    frame_lands(GRPO_FRAME, FW)


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
