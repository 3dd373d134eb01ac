"""A realistic frame per framework (from each framework's own console/log format)
shows the expected canonical series and values on /metrics."""
import math

import pytest

from exporter.testing import export_frame

# (framework, frame as the framework logs it, {(metric, labels): expected value})
CASES = [
    ("verl", {
        "global_seqlen/mean": 14736.5, "actor/entropy": 0.521308183670044, "actor/pg_loss": -0.00461,
        "actor/grad_norm": 0.22915, "actor/lr": 1e-06, "training/global_step": 1, "training/epoch": 0,
        "critic/score/mean": 0.4375, "response_length/mean": 287.25, "num_turns/max": 3,
        "timing_s/gen": 41.83, "perf/throughput": 1523.4},
     {("rl_dp_rank_tokens", ()): 14736.5, ("rl_entropy", ()): 0.521308183670044,
      ("rl_policy_loss", ()): -0.00461, ("rl_grad_norm", ()): 0.22915, ("rl_learning_rate", ()): 1e-06,
      ("rl_training_step", ()): 1, ("rl_score", ()): 0.4375, ("rl_response_length_tokens", ()): 287.25,
      ("rl_turn_messages", (("stat", "max"),)): 3, ("rl_phase_duration_seconds", (("phase", "gen"),)): 41.83,
      ("rl_gpu_throughput_tokens_per_second", ()): 1523.4}),
    ("trl", {
        "loss": 0.0123, "grad_norm": 0.2282, "learning_rate": 2e-05, "num_tokens": 400.0,
        "completions/mean_length": 50.0, "completions/max_length": 81.0, "completions/clipped_ratio": 0.0,
        "rewards/accuracy_reward/mean": 0.4375, "reward": 0.4375, "reward_std": 0.4961,
        "frac_reward_zero_std": 0.0, "entropy": 1.72, "clip_ratio/low_mean": 0.01,
        "clip_ratio/region_mean": 0.02, "step_time": 12.5, "epoch": 0.01, "eval_loss": 0.3},
     {("rl_loss", ()): 0.0123, ("rl_grad_norm", ()): 0.2282, ("rl_learning_rate", ()): 2e-05,
      ("rl_tokens_total", ()): 400.0, ("rl_response_length_tokens", ()): 50.0,
      ("rl_response_length_tokens", (("stat", "max"),)): 81.0, ("rl_response_truncated_ratio", ()): 0.0,
      ("rl_reward_function", (("function", "accuracy_reward"),)): 0.4375, ("rl_reward", ()): 0.4375,
      ("rl_reward", (("stat", "std"),)): 0.4961, ("rl_group_zero_std_ratio", ()): 0.0,
      ("rl_entropy", ()): 1.72, ("rl_policy_clip_ratio", (("bound", "low"),)): 0.01,
      ("rl_policy_clip_ratio", ()): 0.02, ("rl_step_duration_seconds", ()): 12.5,
      ("rl_epoch", ()): 0.01, ("rl_validation_loss", ()): 0.3}),
    ("openrlhf", {
        "policy_loss": -0.0012, "actor_lr": 1e-06, "actor_grad_norm": 0.31, "ppo_clip_ratio": 0.0021,
        "ppo_kl": 0.0003, "reward": 0.5, "response_length": 412.6, "truncated": 0.03,
        "timing/make_experience": 35.2, "timing/step_total": 119.0},
     {("rl_policy_loss", ()): -0.0012, ("rl_next_learning_rate", (("role", "policy"),)): 1e-06,
      ("rl_grad_norm", ()): 0.31,
      ("rl_policy_clip_ratio", ()): 0.0021, ("rl_policy_kl", ()): 0.0003, ("rl_reward", ()): 0.5,
      ("rl_response_length_tokens", ()): 412.6, ("rl_response_truncated_ratio", ()): 0.03,
      ("rl_phase_duration_seconds", (("phase", "make_experience"),)): 35.2,
      ("rl_step_duration_seconds", ()): 119.0}),
    ("areal", {
        "ppo_actor/update/clip_ratio/avg": 0.0012, "ppo_actor/update/clip_ratio/max": 1.0,
        "ppo_actor/task_reward/avg": 0.62, "ppo_actor/update/grad_norm": 0.8,
        "timeperf/rollout": 30.5, "ppo_actor/update/entropy/avg": 0.9, "ppo_actor/n_valid_tokens": 12345,
        "ppo_actor/update/clip_ratio__count": 3},
     {("rl_policy_clip_ratio", ()): 0.0012, ("rl_policy_clip_ratio", (("stat", "max"),)): 1.0,
      ("rl_score", ()): 0.62, ("rl_grad_norm", ()): 0.8,
      ("rl_phase_duration_seconds", (("phase", "rollout_batch"),)): 30.5, ("rl_entropy", ()): 0.9,
      ("rl_exporter_ignored_keys_total", ()): 1}),
    ("slime", {
        "train/loss": -0.0031, "train/pg_loss": -0.0031, "train/entropy_loss": 0.41,
        "train/pg_clipfrac": 0.0012, "train/ppo_kl": 1.3e-05, "train/grad_norm": 0.27,
        "train/lr-pg_0": 1e-06, "train/step": 7, "perf/rollout_time": 47.5},
     {("rl_loss", ()): -0.0031, ("rl_policy_loss", ()): -0.0031, ("rl_entropy", (("phase", "update"),)): 0.41,
      ("rl_policy_clip_ratio", ()): 0.0012, ("rl_policy_kl", ()): 1.3e-05, ("rl_grad_norm", ()): 0.27,
      ("rl_next_learning_rate", (("param_group", "0"), ("role", "policy"))): 1e-06,
      ("rl_training_step", ()): 7,
      ("rl_phase_duration_seconds", (("phase", "rollout"),)): 47.5}),
    ("miles", {
        "train/pg_clipfrac": 0.0, "train/train_rollout_logprob_abs_diff": 0.0145,
        "train/train_rollout_kl": 0.0007, "rollout/raw_reward": 0.71, "perf/step_time": 152.6,
        "perf/update_weights_time": 0.64},
     {("rl_policy_clip_ratio", ()): 0.0, ("rl_train_inference_logprob_abs_diff", ()): 0.0145,
      ("rl_train_inference_kl", (("estimator", "k3"),)): 0.0007, ("rl_score", ()): 0.71, ("rl_step_duration_seconds", ()): 152.6,
      ("rl_phase_duration_seconds", (("phase", "update_weights"),)): 0.64}),
    ("posttrain", {
        "train/loss_avg": 0.12, "train/clip_frac": 0.01, "train/kl_mean": 0.002, "train/kl_max": 0.9,
        "train/grad_norm": 1.4, "train/reward_mean": 0.84, "train/grpo_informative_group_count": 12,
        "train/rollout_truncated_frac": 0.05, "optim/update_outcome": "applied",
        "optim/nonfinite_skips_total": 2, "timer/e2e_step_s": 95.0},
     {("rl_loss", ()): 0.12, ("rl_policy_clip_ratio", ()): 0.01, ("rl_reference_kl", ()): 0.002,
      ("rl_reference_kl", (("stat", "max"),)): 0.9, ("rl_grad_norm", ()): 1.4, ("rl_reward", ()): 0.84,
      ("rl_groups", (("outcome", "informative"),)): 12, ("rl_response_truncated_ratio", ()): 0.05,
      ("rl_optimizer_update_outcome", (("state", "applied"),)): 1,
      ("rl_optimizer_update_outcome", (("state", "skipped"),)): 0,
      ("rl_optimizer_nonfinite_skips_total", ()): 2, ("rl_step_duration_seconds", ()): 95.0}),
]


@pytest.mark.parametrize("framework,frame,expected", CASES, ids=[c[0] for c in CASES])
def test_realistic_frame_on_metrics(framework, frame, expected):
    series = export_frame(frame, framework)
    for key, want in expected.items():
        assert key in series, f"{key} missing; have {sorted(k for k in series if k[0].startswith('rl_') and 'exporter' not in k[0])}"
        assert series[key] == pytest.approx(want), key
    unmapped = [k for k in series if k[0] == "rl_unmapped_value"]
    assert not unmapped, f"{framework} keys fell back: {unmapped}"
    assert series[("rl_exporter_values_rejected_total", (("reason", "string"),))] == 0


def test_the_same_meaning_lands_on_the_same_series_across_frameworks():
    clip = {"verl": "actor/pg_clipfrac", "trl": "clip_ratio/region_mean", "openrlhf": "ppo_clip_ratio",
            "areal": "ppo_actor/update/clip_ratio/avg", "slime": "train/pg_clipfrac",
            "miles": "train/pg_clipfrac", "posttrain": "train/clip_frac"}
    for fw, key in clip.items():
        assert export_frame({key: 0.125}, fw)[("rl_policy_clip_ratio", ())] == 0.125, fw


def test_nan_from_a_framework_log_is_nan_on_metrics():
    s = export_frame({"train/pg_loss": math.nan}, "slime")
    assert math.isnan(s[("rl_policy_loss", ())])
