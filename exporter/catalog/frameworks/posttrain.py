"""posttrain (the system of seed 000 "Metrics reference"; its source is not public).

Objective adapters publish algorithm-local names as train/<leaf> and val/<leaf>; the trainer adds
optim/* outcome keys and timer/*. Aggregation is encoded exactly as the seed declares it:

- weighted_by: WMEAN with the weight as a raw key of this framework
  (train/valid_token_count for token-weighted GRPO keys, train/valid_sequence_count,
  train/response_count, train/logprob_gap_token_count, train/sc_token_count, train/weight_sum);
- SUMMED_TRAIN_COUNT_KEYS and every weight key: SUM;
- max_reduced (train/kl_max, train/response_len_max, train/sc_rho_max): MAX;
- train/grad_norm: LAST (the applied update's chunk);
- everything else: plain MEAN (including reward_min/max and the grpo_* group counts, which are
  not max_reduced/summed keys).

PPO keys are token-weighted inside the PPO trainer over valid action tokens; their weight is
train/valid_action_tokens, which the PPO frame carries. Keys of different algorithms that share
a metric (train/clip_frac for GRPO, train/clip_fraction for PPO) never appear in one frame.
"""
from ..metrics import SPLIT, STAT
from ..model import (COUNTER, GAUGE, LAST, MAX, MEAN, SUM, WMEAN, Metric, Vocabulary, alias,
                     pattern)

METRICS = [
    Metric("rl_optimizer_attempts_total", COUNTER, "{attempt}",
           "Update attempts so far (posttrain optim/attempt_id, a monotonic id: the latest, "
           "never summed).", (), LAST,
           group="optimizer"),
    Metric("rl_actor_warmup", GAUGE, "1",
           "1 on a critic-only warmup iteration, else 0 (posttrain PPO train/actor_warmup); while 1 "
           "the policy keys are absent from the frame.", (STAT, SPLIT), LAST, group="critic"),
    Metric("rl_critic_loss", GAUGE, "1",
           "Coefficient-scaled critic loss (posttrain PPO train/critic_loss); the unscaled value "
           "loss is rl_value_loss.", (STAT, SPLIT), WMEAN, "rl_valid_tokens", group="critic"),
    Metric("rl_value_target_advantage", GAUGE, "1",
           "Mean GAE advantage used for the value target, before policy normalisation (posttrain "
           "PPO train/value_advantage_mean).", (STAT, SPLIT), MEAN, group="critic"),
    Metric("rl_reference_jsd_loss", GAUGE, "1",
           "Jensen-Shannon divergence-to-reference loss term (posttrain PPO train/jsd_loss).",
           (STAT, SPLIT), WMEAN, "rl_valid_tokens", group="policy"),
    Metric("rl_objective_weight_sum", GAUGE, "1",
           "The DP-global valid-unit divisor the objective normalised by (posttrain "
           "train/weight_sum); the weight of train/loss_avg for GRPO and OPD.", (STAT, SPLIT), SUM,
           group="counts"),
    Metric("rl_scored_trajectories", GAUGE, "{trajectory}",
           "Trajectories the reward worker scored this step (posttrain train/rollout_count).",
           (STAT, SPLIT), MEAN, group="counts"),
    Metric("rl_dynamic_sampling_refill_rounds", GAUGE, "{round}",
           "Extra refill rounds the step spent topping up informative groups (posttrain "
           "train/grpo_dynamic_sampling_extra_rollouts; dynamic sampling on).", (STAT, SPLIT), MEAN,
           group="groups"),
    Metric("rl_dynamic_sampling_refill_dispatches", GAUGE, "{dispatch}",
           "rollout.generate calls beyond the base draw (posttrain "
           "train/grpo_dynamic_sampling_refill_dispatches).", (STAT, SPLIT), MEAN, group="groups"),
    Metric("rl_dynamic_sampling_idle_cells", GAUGE, "{cell}",
           "Deliberately idle cells across extra refill rounds (posttrain "
           "train/grpo_dynamic_sampling_idle_cells).", (STAT, SPLIT), MEAN, group="groups"),
    Metric("rl_dynamic_sampling_trained_informative_groups", GAUGE, "{group}",
           "Informative groups in the trained batch (posttrain "
           "train/grpo_dynamic_sampling_batch_informative_groups); rl_groups counts every draw.",
           (STAT, SPLIT), MEAN, group="groups"),
    Metric("rl_dynamic_sampling_avoided_prompts", GAUGE, "{prompt}",
           "Prompt draws skipped by selective refills (posttrain "
           "train/grpo_dynamic_sampling_avoided_prompts).", (STAT, SPLIT), MEAN, group="groups"),
    Metric("rl_dynamic_sampling_dropped_trajectories", GAUGE, "{trajectory}",
           "Scored trajectories collected but not trained on (posttrain "
           "train/grpo_dynamic_sampling_dropped_trajectories).", (STAT, SPLIT), MEAN, group="groups"),
    Metric("rl_sequence_log_ratio_abs", GAUGE, "1",
           "Mean absolute sequence-level log importance ratio (posttrain GSPO "
           "train/seq_log_ratio_abs).", (STAT, SPLIT), WMEAN, "rl_valid_sequences", group="policy"),
    Metric("rl_score_centering_tokens", GAUGE, "{token}",
           "Loss-masked completion tokens the score-centering correction covered (posttrain "
           "train/sc_token_count); 0 when centering is off.", (STAT, SPLIT), SUM, group="consistency"),
    Metric("rl_score_centering_head_mass_ratio", GAUGE, "1",
           "Probability mass inside the sampler's top-k head, engine=sampler (train/sc_head_mass_q) "
           "or trainer (train/sc_head_mass_p).", (STAT, SPLIT, "engine"), WMEAN,
           "rl_score_centering_tokens", group="consistency"),
    Metric("rl_score_centering_tail_mass_ratio", GAUGE, "1",
           "Tail-mass ratio q_tail / p_tail (posttrain train/sc_rho_mean; stat=max for sc_rho_max); "
           "1.0 when sampler and trainer agree.", (STAT, SPLIT), WMEAN, "rl_score_centering_tokens",
           group="consistency"),
    Metric("rl_score_centering_head_kl", GAUGE, "1",
           "Sampler-vs-trainer KL on the top-k head at the same temperature (train/sc_kl_head).",
           (STAT, SPLIT), WMEAN, "rl_score_centering_tokens", group="consistency"),
    Metric("rl_score_centering_correction_abs", GAUGE, "1",
           "Token mean of the absolute score-centering correction term (train/sc_correction_abs); "
           "0 when q == p.", (STAT, SPLIT), WMEAN, "rl_score_centering_tokens", group="consistency"),
    Metric("rl_score_centering_token_weight", GAUGE, "1",
           "Token mean of the composed sampled-token weight (train/sc_token_weight); 1.0 under "
           "compose=none.", (STAT, SPLIT), WMEAN, "rl_score_centering_tokens", group="consistency"),
    Metric("rl_score_centering_out_of_head_ratio", GAUGE, "1",
           "Fraction of sampled tokens outside the sampler's own top-k head "
           "(train/sc_out_of_head_frac).", (STAT, SPLIT), WMEAN, "rl_score_centering_tokens",
           group="consistency"),
    Metric("rl_routing_replay_pinned_tokens", GAUGE, "{token}",
           "Token rows dispatched through the pinned MoE routing (posttrain "
           "train/routing_replay_pinned_tokens, rl.routing_replay=rollout).", (STAT, SPLIT), SUM,
           group="balance"),
    Metric("rl_routing_replay_pinned_blocks", GAUGE, "{block}",
           "Sparse-MoE blocks pinned per token, a constant of the model (posttrain "
           "train/routing_replay_pinned_blocks).", (STAT, SPLIT), MEAN, group="balance"),
    Metric("rl_logprob_delta", GAUGE, "1",
           "posttrain PPO pre-update consistency: log-prob deltas between two policies, "
           "pair=behavior (policy vs rollout), reference_behavior, policy_reference "
           "(train/{pair}_logprob_delta_{stat}).", (STAT, SPLIT, "pair"), MEAN, group="consistency"),
    Metric("rl_pre_update_importance_ratio", GAUGE, "1",
           "pi/pi_rollout before the first update of the step (posttrain PPO train/initial_ratio_*).",
           (STAT, SPLIT), MEAN, group="consistency"),
    Metric("rl_pre_update_clip_ratio", GAUGE, "1",
           "Fraction of tokens the clip would bind before the first update (posttrain PPO "
           "train/initial_clip_fraction).", (STAT, SPLIT), MEAN, group="consistency"),
    Metric("rl_pre_update_importance_ess", GAUGE, "1",
           "Effective sample size of the importance weights before the first update (posttrain "
           "PPO train/initial_importance_ess).", (STAT, SPLIT), MEAN, group="consistency"),
    Metric("rl_dpo_denoising_error", GAUGE, "1",
           "posttrain diffusion-DPO denoising error per model (policy|reference) and side "
           "(chosen = winner, rejected = loser): train/dpo_err_{pol,ref}_{w,l}.",
           (STAT, SPLIT, "network", "side"), MEAN, group="preference"),
    Metric("rl_dpo_raw_loss", GAUGE, "1",
           "posttrain DPO unreduced losses before the preference combination, network=policy|reference "
           "(train/dpo_raw_model_loss, dpo_raw_ref_loss).", (STAT, SPLIT, "network"), MEAN,
           group="preference"),
    Metric("rl_nft_optimality", GAUGE, "1",
           "posttrain NFT optimality ratio: mean (train/optimality_mean), stat=std, "
           "stat=second_moment.", (STAT, SPLIT), MEAN, group="policy"),
    Metric("rl_nft_branch_error", GAUGE, "1",
           "posttrain NFT error on the positive and negative branches (train/positive_error, "
           "negative_error).", (STAT, SPLIT, "branch"), MEAN, group="policy"),
    Metric("rl_distillation_teacher_credit", GAUGE, "1",
           "Teacher-supplied credit in advantage-form on-policy distillation (posttrain "
           "train/opd_teacher_credit, token-weighted).", (STAT, SPLIT), WMEAN, "rl_valid_tokens",
           group="policy"),
    Metric("rl_flow_bc_masked_elements", GAUGE, "{element}",
           "Supervised action elements (sum of action_mask) in flow-matching behaviour cloning "
           "(posttrain train|val/flow_bc_masked_elements).", (STAT, SPLIT), SUM, group="counts"),
]

# raw weight keys (seed 000: weighted_by)
TOK = "train/valid_token_count"
SEQ = "train/valid_sequence_count"
RESP = "train/response_count"
GAP = "train/logprob_gap_token_count"
SC = "train/sc_token_count"
WSUM = "train/weight_sum"
PPO_TOK = "train/valid_action_tokens"


def _tok(metric, **kw):
    return alias(metric, agg=WMEAN, weight=TOK, **kw)


def _ppo(metric, **kw):
    return alias(metric, agg=WMEAN, weight=PPO_TOK, **kw)


K = {
    # ---------------------------------------------------------------- shared across algorithms
    "train/loss_avg": alias("rl_loss", agg=WMEAN, weight=WSUM,
                            note="weighted by weight_sum for GRPO/OPD; DPO, NFT and flow-BC "
                                 "publish no weight_sum: a plain mean, never token-weighted"),
    "train/weight_sum": alias("rl_objective_weight_sum", agg=SUM),
    "train/valid_sequence_count": alias("rl_valid_sequences", agg=SUM),
    "train/valid_token_count": alias("rl_valid_tokens", agg=SUM),
    "train/grad_norm": alias("rl_grad_norm", agg=LAST, note="pre-clip; the applied update's chunk"),
    "train/learning_rate": alias("rl_learning_rate", agg=MEAN),
    "timer/e2e_step_s": alias("rl_step_duration_seconds", agg=MEAN),
    # ---------------------------------------------------------------- GRPO objective
    "train/clip_frac": _tok("rl_policy_clip_ratio", note="0 by construction at n_mini == 1"),
    "train/ratio_absdev": _tok("rl_importance_ratio_abs_deviation"),
    "train/seq_clip_frac": alias("rl_policy_sequence_clip_ratio", agg=WMEAN, weight=SEQ),
    "train/seq_log_ratio_abs": alias("rl_sequence_log_ratio_abs", agg=WMEAN, weight=SEQ),
    "train/routing_replay_pinned_tokens": alias("rl_routing_replay_pinned_tokens", agg=SUM),
    "train/routing_replay_pinned_blocks": alias("rl_routing_replay_pinned_blocks", agg=MEAN),
    "train/kl_mean": _tok("rl_reference_kl", note="k3 toward the frozen reference"),
    "train/kl_max": alias("rl_reference_kl", agg=MAX, stat="max"),
    "train/kl_beta": alias("rl_kl_coefficient", target="loss", agg=MEAN, note="echo of rl.kl_beta"),
    "train/response_count": alias("rl_responses", agg=SUM),
    "train/rollout_truncated_frac": alias("rl_response_truncated_ratio", agg=WMEAN, weight=RESP),
    "train/response_len_mean": alias("rl_response_length_tokens", agg=WMEAN, weight=RESP),
    "train/response_len_max": alias("rl_response_length_tokens", agg=MAX, stat="max"),
    # train/infer consistency (logprob_gap_*)
    "train/logprob_gap_mean": alias("rl_train_inference_logprob_abs_diff", agg=WMEAN, weight=GAP),
    "train/mean_rank_logprob_gap_p99": alias(
        "rl_train_inference_logprob_abs_diff", agg=WMEAN, weight=GAP, stat="p99",
        note="token-weighted mean of per-rank/chunk p99s, not a global p99"),
    "train/logprob_gap_gt0p5_frac": alias("rl_train_inference_logprob_tail_ratio", agg=WMEAN,
                                          weight=GAP, threshold="0.5"),
    "train/logprob_gap_token_count": alias("rl_train_inference_tokens", agg=SUM),
    # score centering (sc_*)
    "train/sc_token_count": alias("rl_score_centering_tokens", agg=SUM),
    "train/sc_rho_max": alias("rl_score_centering_tail_mass_ratio", agg=MAX, stat="max"),
    # ---------------------------------------------------------------- reward reporter
    "train/reward_mean": alias("rl_reward", agg=MEAN),
    "train/reward_std": alias("rl_reward", agg=MEAN, stat="std"),
    "train/reward_min": alias("rl_reward", agg=MEAN, stat="min"),
    "train/reward_max": alias("rl_reward", agg=MEAN, stat="max"),
    "train/rollout_count": alias("rl_scored_trajectories", agg=MEAN),
    "train/grpo_group_count": alias("rl_groups", agg=MEAN, outcome="total"),
    "train/grpo_informative_group_count": alias("rl_groups", agg=MEAN, outcome="informative"),
    "train/grpo_tied_group_count": alias("rl_groups", agg=MEAN, outcome="tied"),
    "train/grpo_all_zero_group_count": alias("rl_groups", agg=MEAN, outcome="all_zero"),
    "train/grpo_all_one_group_count": alias("rl_groups", agg=MEAN, outcome="all_one"),
    # ---------------------------------------------------------------- PPO
    "train/policy_total_loss": _ppo("rl_loss"),
    "train/policy_loss": _ppo("rl_policy_loss", note="NFT publishes it without valid_action_tokens: "
                                                     "a plain mean there"),
    "train/clip_fraction": _ppo("rl_policy_clip_ratio"),
    "train/ratio_mean": _ppo("rl_importance_ratio"),
    "train/entropy": _ppo("rl_entropy"),
    "train/jsd_loss": _ppo("rl_reference_jsd_loss"),
    "train/value_loss": _ppo("rl_value_loss", note="unscaled"),
    "train/critic_loss": _ppo("rl_critic_loss"),
    "train/value_clip_fraction": _ppo("rl_value_clip_ratio"),
    "train/advantage_mean": alias("rl_advantage", agg=MEAN,
                                  note="PPO: over valid action tokens of the prepared batch; NFT too"),
    "train/advantage_std": alias("rl_advantage", agg=MEAN, stat="std"),
    "train/value_advantage_mean": alias("rl_value_target_advantage", agg=MEAN),
    "train/return_mean": alias("rl_return", agg=MEAN),
    "train/value_mean": alias("rl_value", agg=MEAN),
    "train/reference_kl_mean": alias("rl_reference_kl", agg=MEAN, note="PPO sampled reference KL"),
    "train/valid_action_tokens": alias("rl_valid_tokens", agg=SUM, note="PPO's valid-token count"),
    "train/initial_clip_fraction": alias("rl_pre_update_clip_ratio", agg=MEAN),
    "train/initial_importance_ess": alias("rl_pre_update_importance_ess", agg=MEAN),
    "train/policy_lr": alias("rl_next_learning_rate", agg=LAST, role="policy",
                             note="post-step LR left for the next update"),
    "train/critic_lr": alias("rl_next_learning_rate", agg=LAST, role="critic"),
    "train/actor_warmup": alias("rl_actor_warmup", agg=LAST),
    # ---------------------------------------------------------------- DPO (plain means)
    "train/dpo_accuracy": alias("rl_preference_accuracy_ratio", agg=MEAN),
    "train/dpo_reward_margin": alias("rl_preference_reward_margin", agg=MEAN),
    "train/dpo_reward_winner": alias("rl_preference_reward", agg=MEAN, side="chosen"),
    "train/dpo_reward_loser": alias("rl_preference_reward", agg=MEAN, side="rejected"),
    "train/dpo_raw_model_loss": alias("rl_dpo_raw_loss", agg=MEAN, network="policy"),
    "train/dpo_raw_ref_loss": alias("rl_dpo_raw_loss", agg=MEAN, network="reference"),
    # ---------------------------------------------------------------- OPD
    "train/opd_divergence": _tok("rl_distillation_divergence"),
    "train/opd_advantage": _tok("rl_advantage", note="OPD advantage form"),
    "train/opd_teacher_credit": _tok("rl_distillation_teacher_credit"),
    # ---------------------------------------------------------------- NFT (reduction MEAN)
    "train/kl_loss": alias("rl_loss", agg=MEAN, component="kl",
                           note="NFT loss component; the seed does not say if it is scaled"),
    "train/optimality_mean": alias("rl_nft_optimality", agg=MEAN),
    "train/optimality_std": alias("rl_nft_optimality", agg=MEAN, stat="std"),
    "train/optimality_second_moment": alias("rl_nft_optimality", agg=MEAN, stat="second_moment"),
    "train/positive_error": alias("rl_nft_branch_error", agg=MEAN, branch="positive"),
    "train/negative_error": alias("rl_nft_branch_error", agg=MEAN, branch="negative"),
    # ---------------------------------------------------------------- flow-BC
    "train/flow_bc_masked_elements": alias("rl_flow_bc_masked_elements", agg=SUM),
    # ---------------------------------------------------------------- validation phase
    "val/loss_avg": alias("rl_validation_loss", agg=MEAN),
    "val/reward_avg": alias("rl_validation_score", var="reward", agg=MEAN),
    "val/reward_std": alias("rl_validation_score", var="reward", agg=MEAN, stat="std"),
    "val/dpo_accuracy": alias("rl_preference_accuracy_ratio", agg=MEAN, split="eval"),
    "val/dpo_reward_margin": alias("rl_preference_reward_margin", agg=MEAN, split="eval"),
    "val/dpo_reward_winner": alias("rl_preference_reward", agg=MEAN, side="chosen", split="eval"),
    "val/dpo_reward_loser": alias("rl_preference_reward", agg=MEAN, side="rejected", split="eval"),
    "val/dpo_raw_model_loss": alias("rl_dpo_raw_loss", agg=MEAN, network="policy", split="eval"),
    "val/dpo_raw_ref_loss": alias("rl_dpo_raw_loss", agg=MEAN, network="reference", split="eval"),
    "val/flow_bc_masked_elements": alias("rl_flow_bc_masked_elements", agg=SUM, split="eval"),
    # ---------------------------------------------------------------- optimizer outcome
    "optim/update_outcome": alias("rl_optimizer_update_outcome"),
    "optim/skip_reason": alias("rl_optimizer_skip_reason"),
    "optim/step_skipped": alias("rl_optimizer_step_skipped"),
    "optim/attempt_id": alias("rl_optimizer_attempts_total", agg=LAST,
                              note="an id: the latest one, never summed over ranks"),
    "optim/optimizer_step": alias("rl_optimizer_steps_total"),
    "optim/policy_optimizer_step": alias("rl_optimizer_steps_total", role="policy"),
    "optim/critic_optimizer_step": alias("rl_optimizer_steps_total", role="critic"),
    "optim/nonfinite_skips_total": alias("rl_optimizer_nonfinite_skips_total"),
    "optim/nonfinite_skips_consecutive": alias("rl_optimizer_consecutive_nonfinite_skips"),
    "optim/zero_grad_skips_total": alias("rl_optimizer_zero_grad_skips_total"),
    "optim/finite_gradient_check_enabled": alias("rl_config_value",
                                                 parameter="finite_gradient_check_enabled"),
}
for _side, _s in (("chosen", "w"), ("rejected", "l")):
    K[f"train/dpo_err_pol_{_s}"] = alias("rl_dpo_denoising_error", agg=MEAN, network="policy", side=_side)
    K[f"train/dpo_err_ref_{_s}"] = alias("rl_dpo_denoising_error", agg=MEAN, network="reference",
                                         side=_side)
    K[f"val/dpo_err_pol_{_s}"] = alias("rl_dpo_denoising_error", agg=MEAN, network="policy",
                                       side=_side, split="eval")
    K[f"val/dpo_err_ref_{_s}"] = alias("rl_dpo_denoising_error", agg=MEAN, network="reference",
                                       side=_side, split="eval")
K["train/sc_head_mass_q"] = alias("rl_score_centering_head_mass_ratio", agg=WMEAN, weight=SC,
                                  engine="sampler")
K["train/sc_head_mass_p"] = alias("rl_score_centering_head_mass_ratio", agg=WMEAN, weight=SC,
                                  engine="trainer")
K["train/sc_rho_mean"] = alias("rl_score_centering_tail_mass_ratio", agg=WMEAN, weight=SC)
for _q, _m in (("kl_head", "head_kl"), ("correction_abs", "correction_abs"),
               ("token_weight", "token_weight"), ("out_of_head_frac", "out_of_head_ratio")):
    K[f"train/sc_{_q}"] = alias(f"rl_score_centering_{_m}", agg=WMEAN, weight=SC)
for _q, _m in (("extra_rollouts", "refill_rounds"), ("refill_dispatches", "refill_dispatches"),
               ("idle_cells", "idle_cells"), ("batch_informative_groups", "trained_informative_groups"),
               ("avoided_prompts", "avoided_prompts"),
               ("dropped_trajectories", "dropped_trajectories")):
    K[f"train/grpo_dynamic_sampling_{_q}"] = alias(f"rl_dynamic_sampling_{_m}", agg=MEAN)

P = [
    pattern(r"^train/(?P<pair>behavior|reference_behavior|policy_reference)_logprob_delta_"
            r"(?P<stat>.+)$", "rl_logprob_delta", agg=MEAN),
    pattern(r"^train/initial_ratio_(?P<stat>.+)$", "rl_pre_update_importance_ratio", agg=MEAN),
    # NFT stage timings (entrypoints/nft.py), seconds
    pattern(r"^timer/source_(?P<source>.+)$", "rl_phase_duration_seconds", agg=MEAN,
            phase="source_{source}"),
]

VOCABULARY = Vocabulary(
    name="posttrain", title="posttrain", keys=K, patterns=P,
    doc="Seed 000 metrics reference: objective adapters (train/, val/), trainer outcome keys "
        "(optim/), timers (timer/).",
)
