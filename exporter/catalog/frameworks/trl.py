"""TRL (huggingface/trl f2cd577, 1.10.0.dev0) on the HF Trainer.

Each TRL trainer averages its own `_metrics[mode][key]` lists in `log()`, prefixes
`eval_` in eval mode and hands the dict to `transformers.Trainer.log`, which adds
`loss`, `grad_norm`, `learning_rate`, `epoch` (and `num_input_tokens_seen`).
Covers GRPOTrainer, RLOOTrainer (a subset of GRPO's keys), DPOTrainer,
KTOTrainer (same rewards/logps/logits names plus `kl`) and the experimental
PPOTrainer. `log_history` entries in trainer_state.json carry `step` (the
optimizer step); trainer_state.json itself has `global_step`.

`eval_<key>` resolves through `<key>` with split="eval"; eval keys whose meaning
is not a copy of a training key (eval_loss, eval_runtime, ...) are explicit.
"""
from ..metrics import SPLIT, STAT
from ..model import COUNTER, GAUGE, LAST, MAX, MEAN, SUM, Metric, Vocabulary, alias, pattern

METRICS = [
    # HF Trainer speed_metrics(): reported at the end of train() / evaluate(); train_runtime is
    # also logged at every log step when include_num_input_tokens_seen is on.
    Metric("rl_trainer_runtime_seconds", GAUGE, "s",
           "HF Trainer wall time: phase=train is the time since train() started (train_runtime), "
           "phase=eval one evaluate() pass (eval_runtime).", (STAT, SPLIT, "phase"), MAX,
           group="timing"),
    Metric("rl_trainer_samples_per_second", GAUGE, "{sample}/s",
           "HF Trainer samples per second over the phase (train_/eval_samples_per_second); TRL PPO "
           "`eps` (episodes per second) is the same quantity for phase=train.",
           (STAT, SPLIT, "phase"), LAST, group="throughput"),
    Metric("rl_trainer_steps_per_second", GAUGE, "{step}/s",
           "HF Trainer optimizer (train) or eval-batch (eval) steps per second over the phase "
           "(train_/eval_steps_per_second).", (STAT, SPLIT, "phase"), LAST, group="throughput"),
    Metric("rl_trainer_run_loss", GAUGE, "1",
           "Mean training loss over the whole train() call (HF train_loss, logged once at the end). "
           "The per-log-window loss is rl_loss.", (STAT, SPLIT), LAST, group="policy"),
    Metric("rl_trainer_flos_total", COUNTER, "FLOP",
           "Floating point operations since training started as the HF Trainer estimates them "
           "(total_flos: 6 x params x tokens for decoder models; not a measured number).", (), SUM,
           group="throughput"),
    Metric("rl_episodes_total", COUNTER, "{episode}",
           "Episodes (completions) processed since training started (TRL PPO `episode`).", (), SUM,
           group="throughput"),
    Metric("rl_preference_logits", GAUGE, "1",
           "Mean policy logits over the completion tokens per side (TRL DPO/KTO logits/chosen|rejected).",
           (STAT, SPLIT, "side"), MEAN, group="preference"),
    Metric("rl_token_accuracy_ratio", GAUGE, "1",
           "Fraction of completion tokens where the policy's argmax equals the target token "
           "(TRL DPO/SFT mean_token_accuracy).", (STAT, SPLIT), MEAN, group="preference"),
    Metric("rl_vespo_sequence_weight", GAUGE, "1",
           "VESPO sequence-level weight phi (TRL GRPO loss_type=vespo, vespo/phi_seq_mean).",
           (STAT, SPLIT), MEAN, group="policy"),
    Metric("rl_response_terminated_ratio", GAUGE, "1",
           "Fraction of responses that ended with EOS (TRL PPO val/contain_eos_token).",
           (STAT, SPLIT), MEAN, group="length"),
    Metric("rl_eos_tokens", GAUGE, "{token}",
           "EOS tokens generated in the PPO batch, i.e. responses that terminated (TRL PPO "
           "val/num_eos_tokens).", (STAT, SPLIT), SUM, group="length"),
]

_NAN_MEAN = "GRPO/RLOO log(): mean of the values since the last log, NaN filtered"

K = {
    # ---- HF Trainer, every log
    "loss": alias("rl_loss", agg=MEAN,
                  note="HF: round(mean training loss since the last log across processes, 4); "
                       "for GRPO/RLOO this is the policy objective, for DPO the preference loss"),
    "grad_norm": alias("rl_grad_norm", note="value at the last optimizer step, before clipping"),
    "learning_rate": alias("rl_learning_rate"),
    "epoch": alias("rl_epoch", agg=MAX, note="fractional; rounded to 2 decimals on the console"),
    # cumulative tokens: HF num_input_tokens_seen, and TRL's num_tokens which is the same state
    # value (set, not appended), so both may arrive in one frame with one value.
    "num_input_tokens_seen": alias("rl_tokens_total"),
    "num_tokens": alias("rl_tokens_total", agg=LAST, note="TRL sets it to state.num_input_tokens_seen"),
    # ---- HF Trainer, end of train() and evaluate()
    "train_runtime": alias("rl_trainer_runtime_seconds", phase="train"),
    "train_samples_per_second": alias("rl_trainer_samples_per_second", phase="train"),
    "train_steps_per_second": alias("rl_trainer_steps_per_second", phase="train"),
    "train_tokens_per_second": alias("rl_throughput_tokens_per_second", phase="train",
                                     note="HF: tokens seen / train_runtime over the whole run "
                                          "(per device in some transformers versions)"),
    "total_flos": alias("rl_trainer_flos_total", note="dropped from the console line; in log_history"),
    "train_loss": alias("rl_trainer_run_loss"),
    "eval_loss": alias("rl_validation_loss"),
    "eval_runtime": alias("rl_trainer_runtime_seconds", phase="eval"),
    "eval_samples_per_second": alias("rl_trainer_samples_per_second", phase="eval"),
    "eval_steps_per_second": alias("rl_trainer_steps_per_second", phase="eval"),
    # ---- GRPO / RLOO
    "step_time": alias("rl_step_duration_seconds", note="seconds per optimizer step incl. generation"),
    "completions/mean_length": alias("rl_response_length_tokens", agg=MEAN),
    "completions/min_length": alias("rl_response_length_tokens", stat="min"),
    "completions/max_length": alias("rl_response_length_tokens", stat="max"),
    "completions/mean_terminated_length": alias("rl_response_length_tokens", subset="terminated",
                                                agg=MEAN, note="completions ending in EOS/pad"),
    "completions/min_terminated_length": alias("rl_response_length_tokens", subset="terminated",
                                               stat="min"),
    "completions/max_terminated_length": alias("rl_response_length_tokens", subset="terminated",
                                               stat="max"),
    "completions/clipped_ratio": alias("rl_response_truncated_ratio", agg=MEAN),
    "reward": alias("rl_reward", agg=MEAN, note="weighted sum of the reward functions; " + _NAN_MEAN),
    "reward_std": alias("rl_reward", stat="std"),
    "frac_reward_zero_std": alias("rl_group_zero_std_ratio"),
    "kl": alias("rl_reference_kl", agg=MEAN,
                note="GRPO: per-token KL to the reference (only when beta != 0); KTO: the batch "
                     "KL estimate used as the reference point"),
    "entropy": alias("rl_entropy", agg=MEAN),
    # clip fractions: *_mean are token-weighted global means; low_min/high_max are the min/max
    # over completions of the per-completion clipped fraction.
    "clip_ratio/region_mean": alias("rl_policy_clip_ratio", agg=MEAN, note="either bound"),
    "clip_ratio/low_mean": alias("rl_policy_clip_ratio", bound="low", agg=MEAN),
    "clip_ratio/low_min": alias("rl_policy_clip_ratio", bound="low", stat="min",
                                note="min over completions of the per-completion fraction"),
    "clip_ratio/high_mean": alias("rl_policy_clip_ratio", bound="high", agg=MEAN),
    "clip_ratio/high_max": alias("rl_policy_clip_ratio", bound="high", stat="max",
                                 note="max over completions of the per-completion fraction"),
    "clip_ratio": alias("rl_policy_clip_ratio", agg=MEAN, note="Liger-kernel loss path"),
    "cispo_clip_ratio": alias("rl_policy_clip_ratio", bound="cispo", agg=MEAN,
                              note="CISPO: fraction of tokens whose IS weight hit the clip; the "
                                   "gradient still flows through them"),
    "vespo/phi_seq_mean": alias("rl_vespo_sequence_weight"),
    "policy_loss": alias("rl_policy_loss", agg=MEAN, note="logged with an entropy bonus configured"),
    "entropy_coef": alias("rl_entropy_coefficient"),
    "aux_loss": alias("rl_aux_loss"),
    "tools/call_frequency": alias("rl_tool_calls", agg=MEAN,
                                  note="tool calls per completion (can exceed 1)"),
    "tools/failure_frequency": alias("rl_tool_call_failure_ratio", note="failed / attempted calls"),
    # vLLM importance-sampling correction: `/mean|/max|/min` resolve through these bases.
    "sampling/sampling_logp_difference": alias("rl_train_inference_logprob_abs_diff", agg=MEAN,
                                               note="mean |logp_train - logp_vllm| over tokens; "
                                                    "TRL logs no token count"),
    "sampling/importance_sampling_ratio": alias("rl_rollout_importance_weight"),
    # ---- DPO (and KTO, which logs the same names)
    "logits/chosen": alias("rl_preference_logits", side="chosen"),
    "logits/rejected": alias("rl_preference_logits", side="rejected"),
    "rewards/chosen": alias("rl_preference_reward", side="chosen", note="beta * log(pi/pi_ref)"),
    "rewards/rejected": alias("rl_preference_reward", side="rejected"),
    "rewards/accuracies": alias("rl_preference_accuracy_ratio"),
    "rewards/margins": alias("rl_preference_reward_margin"),
    "logps/chosen": alias("rl_preference_logprob", side="chosen"),
    "logps/rejected": alias("rl_preference_logprob", side="rejected"),
    "mean_token_accuracy": alias("rl_token_accuracy_ratio"),
    # ---- PPO (trl.experimental.ppo): one log per PPO batch, no HF loss/grad_norm.
    "eps": alias("rl_trainer_samples_per_second", phase="train", note="episodes per second"),
    # objective/kl and objective/entropy are summed over the response tokens, then averaged over
    # the batch: stat="sum" keeps them off the per-token series (policy/entropy_avg is per token
    # and arrives in the same frame).
    "objective/kl": alias("rl_reference_kl", stat="sum", agg=MEAN,
                          note="per-sequence sum of the per-token KL, mean over sequences"),
    "objective/entropy": alias("rl_entropy", stat="sum", agg=MEAN,
                               note="per-sequence sum of -logprob of the sampled tokens"),
    # (-self.beta * kl).sum(1) (online_dpo_trainer.py:1273): the KL term, beta and sign kept
    "objective/non_score_reward": alias("rl_reward_kl_term", stat="sum", agg=MEAN,
                                        note="-kl_coef * KL summed per sequence, mean over sequences"),
    "objective/rlhf_reward": alias("rl_shaped_reward", agg=MEAN, note="score + non_score_reward"),
    "objective/scores": alias("rl_score", agg=MEAN),
    # approxkl = 0.5 * (logprobs_diff**2).mean() (trl v1.9.0 experimental/ppo/ppo_trainer.py:857)
    "policy/approxkl_avg": alias("rl_policy_kl", estimator="k2", agg=MEAN),
    "policy/clipfrac_avg": alias("rl_policy_clip_ratio", agg=MEAN),
    "policy/entropy_avg": alias("rl_entropy", agg=MEAN),
    "loss/policy_avg": alias("rl_policy_loss", agg=MEAN),
    "loss/value_avg": alias("rl_value_loss", agg=MEAN),
    "val/clipfrac_avg": alias("rl_value_clip_ratio", agg=MEAN),
    "val/ratio": alias("rl_importance_ratio", agg=MEAN),
    "val/ratio_var": alias("rl_importance_ratio", stat="var"),
    "val/num_eos_tokens": alias("rl_eos_tokens"),
    "lr": alias("rl_learning_rate"),
    # ---- keys of older releases and of the online-DPO / KTO trainers
    "completion_length": alias("rl_response_length_tokens", agg=MEAN, note="GRPO before 0.16"),
    "beta": alias("rl_kl_coefficient", target="loss", note="online DPO: the beta in use"),
    "objective/scores_margin": alias("rl_preference_reward_margin",
                                     note="online DPO: reward-model score of chosen minus rejected"),
    "count/chosen": alias("rl_responses", subset="chosen", agg=SUM, note="KTO"),
    "count/rejected": alias("rl_responses", subset="rejected", agg=SUM, note="KTO"),
    "val/contain_eos_token": alias("rl_response_terminated_ratio"),
    "nll_loss": alias("rl_nll_loss"),
}
# the legacy PPOTrainer (until 0.11): step() stats, prefixed ppo/, env/, objective/, tokens/, time/
_ARRAY = "a per-sample array (W&B histogram) of the legacy PPOTrainer, not a scalar"
K.update({
    "env/reward_mean": alias("rl_reward", agg=MEAN),
    "env/reward_std": alias("rl_reward", stat="std"),
    "objective/kl_coef": alias("rl_kl_coefficient", target="reward", note="PPO: the in-reward beta"),
    "ppo/loss/policy": alias("rl_policy_loss", agg=MEAN),
    "ppo/loss/value": alias("rl_value_loss", agg=MEAN),
    "ppo/loss/total": alias("rl_loss", agg=MEAN),
    "ppo/policy/entropy": alias("rl_entropy", agg=MEAN),
    "ppo/policy/approxkl": alias("rl_policy_kl", estimator="k2", agg=MEAN,
                                 note="0.5 * mean(log ratio^2) (trl v0.11.2 ppo_trainer.py:1255)"),
    "ppo/policy/policykl": alias("rl_policy_kl", estimator="k1", agg=MEAN),
    "policy/policykl": alias("rl_policy_kl", estimator="k1", agg=MEAN),
    "ppo/policy/clipfrac": alias("rl_policy_clip_ratio", agg=MEAN),
    "ppo/policy/advantages_mean": alias("rl_advantage", agg=MEAN),
    "ppo/returns/mean": alias("rl_return", agg=MEAN),
    "ppo/returns/var": alias("rl_return", stat="var"),
    "ppo/val/vpred": alias("rl_value", agg=MEAN),
    "ppo/val/clipfrac": alias("rl_value_clip_ratio", agg=MEAN),
    "ppo/val/var_explained": alias("rl_value_explained_variance"),
    "ppo/learning_rate": alias("rl_learning_rate"),
    "ppo/mean_non_score_reward": alias("rl_reward_kl_term", stat="sum", agg=MEAN,
                                       note="-kl_coef * KL summed per sequence"),
    "ppo/mean_scores": alias("rl_score", agg=MEAN),
    "ppo/std_scores": alias("rl_score", stat="std"),
    "tokens/queries_len_mean": alias("rl_prompt_length_tokens", agg=MEAN),
    "tokens/queries_len_std": alias("rl_prompt_length_tokens", stat="std"),
    "tokens/responses_len_mean": alias("rl_response_length_tokens", agg=MEAN),
    "tokens/responses_len_std": alias("rl_response_length_tokens", stat="std"),
    "time/ppo/total": alias("rl_step_duration_seconds"),
    "episode": alias("rl_episodes_total"),
})

P = [
    # per reward function: rewards/{reward_func_name}/mean|std (nan-aware). Exact DPO keys
    # (rewards/chosen, rewards/margins, ...) have no /mean|/std tail and are matched first.
    pattern(r"^rewards/(?P<function>.+)/(?P<stat>mean|std)$", "rl_reward_function"),
    # GRPO before 0.16 logged rewards/{func} (the mean); chosen/rejected/... are exact keys above
    pattern(r"^rewards/(?P<function>[^/]+)$", "rl_reward_function"),
    # trl/extras/profiling.py: perf_counter seconds per decorated call, sent straight to
    # wandb/mlflow/trackio (never log_history); one series per Class.method, a bounded set.
    pattern(r"^time/ppo/(?P<phase>.+)$", "rl_phase_duration_seconds", note="legacy PPOTrainer"),
    pattern(r"^profiling/Time taken: (?P<phase>.+)$", "rl_phase_duration_seconds",
            note="seconds per call of the decorated method; several calls per step keep the max"),
]

VOCABULARY = Vocabulary(
    name="trl", title="TRL (+ HF Trainer)", keys=K, patterns=P,
    ignored={
        "eval_num_tokens": "eval copy of the cumulative training token counter (same value)",
        **{f"{k}/{s}_sum": "KTO per-batch sum behind the logged mean (gathered across processes)"
           for k in ("rewards", "logps", "logits") for s in ("chosen", "rejected")},
        **{k: _ARRAY for k in ("env/reward_dist", "objective/kl_dist", "objective/logprobs",
                               "objective/ref_logprobs", "ppo/policy/advantages", "ppo/policy/ratio",
                               "policy/advantages", "policy/ratio", "tokens/queries_dist",
                               "tokens/responses_dist")},
        "ppo/val/error": "legacy PPOTrainer mean squared value error; the value loss is ppo/loss/value",
        "ppo/val/mean": "legacy PPOTrainer mean of the old values; the new predictions are ppo/val/vpred",
        "ppo/val/var": "legacy PPOTrainer variance of the old values",
    },
    step_keys=("step", "global_step"),
    eval_prefixes=("eval_",),
    doc="Console `{'loss': ..., 'epoch': 0.01}` dict reprs (no step) and trainer_state.json "
        "log_history entries (with `step`).",
)
