"""Same meaning, same metric: the TRL / OpenRLHF / carbonteq / generic vocabularies agree with veRL."""
from __future__ import annotations

import pytest

from exporter.catalog import CATALOG

# concept -> [(framework, key)], all of which must land on one metric with the same labels
SAME = {
    ("rl_policy_clip_ratio", ()): [
        ("trl", "clip_ratio/region_mean"), ("trl", "policy/clipfrac_avg"),
        ("openrlhf", "ppo_clip_ratio"), ("openrlhf", "train/ppo_clip_ratio"),
        ("posttrain_carbonteq", "train/rl/clip_fraction"), ("verl", "actor/pg_clipfrac")],
    ("rl_policy_clip_ratio", (("bound", "low"),)): [
        ("trl", "clip_ratio/low_mean"), ("posttrain_carbonteq", "train/rl/clip_fraction_low")],
    ("rl_policy_kl", ()): [("openrlhf", "ppo_kl"), ("verl", "actor/ppo_kl")],
    # TRL PPO's approxkl is 0.5 x mean(log ratio^2): the k2 estimate, its own label
    ("rl_policy_kl", (("estimator", "k2"),)): [("trl", "policy/approxkl_avg")],
    ("rl_reference_kl", ()): [
        ("trl", "kl"), ("openrlhf", "kl"), ("generic", "kl_estimate"), ("verl", "actor/kl_loss")],
    ("rl_entropy", ()): [
        ("trl", "entropy"), ("trl", "policy/entropy_avg"), ("posttrain_carbonteq", "train/rl/entropy"),
        ("verl", "actor/entropy")],
    ("rl_policy_loss", ()): [
        ("trl", "policy_loss"), ("openrlhf", "policy_loss"), ("openrlhf", "act_loss"),
        ("posttrain_carbonteq", "train/rl/policy_loss"), ("verl", "actor/pg_loss")],
    ("rl_grad_norm", ()): [
        ("trl", "grad_norm"), ("openrlhf", "actor_grad_norm"), ("posttrain_carbonteq", "train/grad_norm"),
        ("generic", "rm/grad_norm"), ("verl", "actor/grad_norm")],
    ("rl_learning_rate", ()): [
        ("trl", "learning_rate"), ("posttrain_carbonteq", "train/learning_rate"),
        ("generic", "actor/lr(1e-6)"), ("verl", "actor/lr")],
    ("rl_reward", ()): [
        ("trl", "reward"), ("openrlhf", "reward"), ("posttrain_carbonteq", "train/rl/reward_mean")],
    ("rl_response_length_tokens", ()): [
        ("trl", "completions/mean_length"), ("openrlhf", "response_length"), ("openrlhf", "gen_len"),
        ("posttrain_carbonteq", "train/rl/completion_tokens_mean"), ("verl", "response_length/mean")],
    ("rl_response_truncated_ratio", ()): [
        ("trl", "completions/clipped_ratio"), ("openrlhf", "truncated"),
        ("posttrain_carbonteq", "train/rl/completion_truncation_rate"), ("verl", "response_length/clip_ratio")],
    ("rl_step_duration_seconds", ()): [
        ("trl", "step_time"), ("openrlhf", "timing/step_total"),
        ("posttrain_carbonteq", "train/step_time_seconds"), ("generic", "timing/step"),
        ("verl", "timing_s/step")],
    ("rl_tokens_total", ()): [
        ("trl", "num_tokens"), ("trl", "num_input_tokens_seen")],
    ("rl_group_zero_std_ratio", ()): [
        ("trl", "frac_reward_zero_std"), ("posttrain_carbonteq", "train/rl/group_zero_variance_fraction")],
    ("rl_preference_reward_margin", ()): [
        ("trl", "rewards/margins"), ("generic", "rewards/margins"), ("generic", "rm/reward_margin")],
    ("rl_preference_reward", (("side", "chosen"),)): [
        ("trl", "rewards/chosen"), ("openrlhf", "chosen_reward"), ("generic", "rm/reward_chosen/mean")],
    ("rl_preference_accuracy_ratio", ()): [
        ("trl", "rewards/accuracies"), ("openrlhf", "acc_mean"), ("generic", "rewards/accuracy"),
        ("generic", "rm/accuracy")],
    ("rl_loss", ()): [
        ("trl", "loss"), ("openrlhf", "loss_mean"), ("generic", "loss/dpo"), ("generic", "rm/loss")],
    ("rl_validation_loss", ()): [
        ("trl", "eval_loss"), ("openrlhf", "eval_loss"), ("openrlhf", "eval/eval_loss"),
        ("posttrain_carbonteq", "train/validation/loss")],
    ("rl_train_inference_logprob_abs_diff", ()): [
        ("trl", "sampling/sampling_logp_difference/mean"),
        ("posttrain_carbonteq", "train/rl/sampling_logp_delta_mean")],
    ("rl_rollout_importance_weight", (("stat", "max"),)): [
        ("trl", "sampling/importance_sampling_ratio/max"),
        ("posttrain_carbonteq", "train/rl/importance_sampling_ratio_max")],
    ("rl_phase_duration_seconds", (("phase", "gen"),)): [
        ("generic", "timing/gen"), ("verl", "timing_s/gen")],
}


@pytest.mark.parametrize("target,sources", list(SAME.items()), ids=[m for m, _ in SAME])
def test_same_concept_same_series(target, sources):
    metric, labels = target
    for fw, key in sources:
        r = CATALOG.resolve(key, fw)
        assert not r.fallback and not r.ignored, (fw, key, r.reason)
        assert (r.metric.name, r.labels) == (metric, labels), (fw, key, r.metric.name, r.labels)
