"""veRL (verl-project/verl 1dda039, legacy workers volcengine/verl b178a3c).

Keys come from metric_utils.compute_data_metrics/compute_timing_metrics/
compute_throughout_metrics, ray_trainer.fit, core_algos and the workers.
`x/mean|max|min` statistics resolve through the base key (stat label).
"""
import re

from ..model import GAUGE, MAX, MEAN, Metric, Vocabulary, alias, pattern
from ..config_echo import config_keys
from ..metrics import SPLIT, STAT

GB = 2.0 ** 30  # torch memory stats are divided by 1024**3 in veRL

METRICS = [
    Metric("rl_turn_messages", GAUGE, "{message}",
           "Messages per sample, the prompt included (veRL num_turns = user_turns + "
           "assistant_turns + 1, experimental/agent_loop/tool_agent_loop.py:203; a single turn is "
           "2). rl_turns counts assistant turns; run:rl_turns:* read (messages - 1) / 2, exact when "
           "a sample ends on an assistant turn.", (STAT, SPLIT), MEAN, group="agentic"),
    Metric("rl_log_perplexity", GAUGE, "1",
           "Mean log-perplexity of the responses under engine=trainer|rollout (veRL "
           "rollout_corr/training_log_ppl, rollout_log_ppl).", (STAT, SPLIT, "engine"), MEAN,
           group="consistency"),
    Metric("rl_speculative_accept_ratio", GAUGE, "1", "Speculative decoding acceptance rate.",
           (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_speculative_accept_length_tokens", GAUGE, "{token}",
           "Mean accepted draft length in speculative decoding.", (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_moe_routing_violation", GAUGE, "1",
           "veRL rollout MoE routing load violation per layer (rollout/moe/{max,min,avg}_vio).",
           (STAT, SPLIT, "layer", "kind"), MAX, group="balance"),
    Metric("rl_sample_processing_seconds", GAUGE, "s",
           "Per-sample processing time in the veRL fully-async rollouter (processing_time/avg|max|"
           "min|tp50|tp95|tp99).", (STAT, SPLIT), MEAN, group="async"),
    Metric("rl_trainer_idle_ratio", GAUGE, "1", "Fraction of time the trainer waited for samples.",
           (STAT, SPLIT), MEAN, group="async"),
    Metric("rl_trajectory_version_span", GAUGE, "{version}",
           "Policy versions spanned by one trajectory (veRL trajectory_spans).", (STAT, SPLIT), MEAN,
           group="async"),
    Metric("rl_agent_loop_duration_seconds", GAUGE, "s",
           "veRL agent-loop per-sample phase time (timing_s/agent_loop/{phase}/min|max|mean; "
           "sample=slowest for the slowest sample's timing_s/agent_loop/slowest/{phase}).",
           (STAT, SPLIT, "phase", "sample"), MEAN, group="agentic"),
    Metric("rl_agent_loop_preemptions", GAUGE, "{preemption}",
           "Times a veRL agent-loop sample was preempted by the engine "
           "(timing_s/agent_loop/num_preempted/min|max|mean).", (STAT, SPLIT, "sample"), MEAN,
           group="agentic"),
    Metric("rl_mtp_loss", GAUGE, "1", "Multi-token-prediction losses.", (STAT, SPLIT, "role", "layer"),
           MEAN, group="policy"),
]

K = {
    # data metrics (driver, once per step)
    "critic/score": alias("rl_score"),
    # token_level_scores - beta * kld under algorithm.use_kl_in_reward (ray_trainer.py:106),
    # summed per sequence (metric_utils.py:454); equal to critic/score without it
    "critic/rewards": alias("rl_shaped_reward"),
    "critic/advantages": alias("rl_advantage"),
    "critic/returns": alias("rl_return"),
    "critic/values": alias("rl_value"),
    "critic/vf_explained_var": alias("rl_value_explained_variance"),
    "response_length": alias("rl_response_length_tokens"),
    "response_length/clip_ratio": alias("rl_response_truncated_ratio"),
    "response_length_non_aborted": alias("rl_response_length_tokens", subset="non_aborted"),
    "response_length_non_aborted/clip_ratio": alias("rl_response_truncated_ratio", subset="non_aborted"),
    "response/aborted_ratio": alias("rl_response_aborted_ratio"),
    "prompt_length": alias("rl_prompt_length_tokens"),
    "prompt_length/clip_ratio": alias("rl_prompt_truncated_ratio"),
    # veRL counts messages: user_turns + assistant_turns + 1 (experimental/agent_loop/
    # tool_agent_loop.py:203; a single turn is 2, single_turn_agent_loop.py:107), not the
    # assistant turns AReaL and slime count
    "num_turns": alias("rl_turn_messages"),
    "tool_call_counts": alias("rl_tool_calls"),
    "val-aux/num_turns": alias("rl_turn_messages", split="eval"),
    # throughput
    "perf/total_num_tokens": alias("rl_step_tokens"),
    "perf/time_per_step": alias("rl_step_duration_seconds"),
    "perf/throughput": alias("rl_gpu_throughput_tokens_per_second"),
    "perf/mfu/actor": alias("rl_mfu_ratio", role="actor", phase="train", source="framework"),
    "perf/mfu/critic": alias("rl_mfu_ratio", role="critic", phase="train", source="framework"),
    "perf/mfu/actor_infer": alias("rl_mfu_ratio", role="actor", phase="inference", source="framework"),
    "perf/max_memory_allocated_gb": alias("rl_gpu_memory_peak_bytes", scale=GB, kind="allocated"),
    "perf/max_memory_reserved_gb": alias("rl_gpu_memory_peak_bytes", scale=GB, kind="reserved"),
    "perf/cpu_memory_used_gb": alias("rl_host_memory_used_bytes", scale=GB),
    # actor update
    "actor/pg_loss": alias("rl_policy_loss"),
    "actor/pg_clipfrac": alias("rl_policy_clip_ratio", agg=MEAN,
                               note="mean over micro-batches, not token-weighted"),
    "actor/pg_clipfrac_lower": alias("rl_policy_clip_ratio", bound="dual", agg=MEAN),
    "actor/ppo_kl": alias("rl_policy_kl", agg=MEAN),
    "actor/entropy": alias("rl_entropy"),
    # entropy_loss = agg_loss(entropy) is the entropy itself (the veRL metrics guide, section
    # 1.5), of the policy being updated, per update micro-batch. 0.9.1 writes it in the same step
    # dict as actor/entropy (the old-policy pass, v1/trainer_base.py:1684) whenever
    # actor.entropy_coeff != 0 or actor.calculate_entropy (verl/workers/utils/losses.py:124-129),
    # so it gets its own label: two keys never share one series
    "actor/entropy_loss": alias("rl_entropy", phase="update",
                                note="the entropy itself, of the policy being updated"),
    "actor/kl_loss": alias("rl_reference_kl", note="estimator per actor.kl_loss_type"),
    "actor/kl_coef": alias("rl_kl_coefficient", target="loss",
                           note="actor.kl_loss_coef (verl/workers/utils/losses.py:142)"),
    "actor/grad_norm": alias("rl_grad_norm", agg=MEAN, note="mean over mini-batches"),
    "actor/lr": alias("rl_learning_rate"),
    "actor/loss": alias("rl_loss", agg=MEAN),
    "actor/reward_kl_penalty": alias("rl_reward_kl_penalty"),
    "actor/reward_kl_penalty_coeff": alias("rl_kl_coefficient", target="reward",
                                           note="in-reward KL coefficient (ray_trainer.py:115)"),
    # critic update
    "critic/vf_loss": alias("rl_value_loss"),
    "critic/loss": alias("rl_value_loss", note="new engine path total critic loss"),
    "critic/vf_clipfrac": alias("rl_value_clip_ratio", agg=MEAN),
    "critic/vpred_mean": alias("rl_value"),
    "critic/grad_norm": alias("rl_critic_grad_norm", agg=MEAN),
    "critic/lr": alias("rl_critic_learning_rate"),
    # bookkeeping
    "training/epoch": alias("rl_epoch", agg=MAX),
    # load balance
    "global_seqlen/min": alias("rl_dp_rank_tokens", stat="min"),
    "global_seqlen/max": alias("rl_dp_rank_tokens", stat="max"),
    "global_seqlen/minmax_diff": alias("rl_dp_rank_tokens", stat="minmax_diff"),
    "global_seqlen/balanced_min": alias("rl_dp_rank_tokens", stat="balanced_min"),
    "global_seqlen/balanced_max": alias("rl_dp_rank_tokens", stat="balanced_max"),
    "global_seqlen/mean": alias("rl_dp_rank_tokens", agg=MEAN),
    # rollout
    "rollout/spec_accept_rate": alias("rl_speculative_accept_ratio"),
    "rollout/spec_accept_length": alias("rl_speculative_accept_length_tokens"),
    # async
    "fully_async/total_wait_time": alias("rl_phase_duration_seconds", phase="wait_for_samples"),
    "fully_async/trainer/idle_ratio": alias("rl_trainer_idle_ratio"),
    "training/off_policy/trajectory_staleness": alias("rl_sample_staleness_steps", agg=MEAN),
    "training/off_policy/trajectory_spans": alias("rl_trajectory_version_span"),
    # SFT trainer
    "train/loss": alias("rl_loss", agg=MEAN),
    "train/grad_norm": alias("rl_grad_norm"),
    "train/lr": alias("rl_learning_rate"),
    "train/mfu": alias("rl_mfu_ratio", role="actor", phase="train", source="framework"),
    "train/global_tokens": alias("rl_step_tokens"),
    # ---- keys of older releases (v0.1 - v0.3)
    "actor/lr(1e-4)": alias("rl_learning_rate", scale=1e-4, note="v0.1 logged lr * 1e4"),
    # v0.1 fsdp_sft_trainer.py: {'train/loss': ..., 'train/lr(1e-3)': lr * 1e3}, {'val/loss': ...}
    "train/lr(1e-3)": alias("rl_learning_rate", scale=1e-3, note="v0.1 SFT trainer logged lr * 1e3"),
    "val/loss": alias("rl_validation_loss", note="SFT trainer: mean loss over the validation set"),
    "critic/lr(1e-4)": alias("rl_critic_learning_rate", scale=1e-4, note="v0.1 logged lr * 1e4"),
    "mfu/actor": alias("rl_mfu_ratio", role="actor", phase="train", source="framework"),
    "mfu/critic": alias("rl_mfu_ratio", role="critic", phase="train", source="framework"),
    "actor/mfu": alias("rl_mfu_ratio", role="actor", phase="train", source="framework"),
    "critic/mfu": alias("rl_mfu_ratio", role="critic", phase="train", source="framework"),
    # the in-reward KL (apply_kl_penalty) before it moved to actor/reward_kl_penalty[_coeff]
    "critic/kl": alias("rl_reward_kl_penalty", note="KL folded into the reward, before beta"),
    "critic/kld": alias("rl_reward_kl_penalty", note="v0.1 Megatron critic"),
    "critic/kl_coeff": alias("rl_kl_coefficient", target="reward", note="in-reward KL coefficient"),
    "critic/kl_coef": alias("rl_kl_coefficient", target="reward",
                            note="v0.1 Megatron critic: in-reward KL coefficient"),
    "training/rollout_actor_probs_pearson_corr": alias("rl_train_inference_prob_correlation"),
    # train/inference correction (rollout_corr/*)
    "rollout_corr/kl": alias("rl_train_inference_kl", estimator="k1"),
    "rollout_corr/k3_kl": alias("rl_train_inference_kl", estimator="k3"),
    "rollout_corr/rollout_is_eff_sample_size": alias("rl_importance_ess_ratio"),
    "rollout_corr/rollout_rs_masked_fraction": alias("rl_rollout_rejected_ratio", level="token"),
    "rollout_corr/rollout_rs_seq_masked_fraction": alias("rl_rollout_rejected_ratio",
                                                         level="sequence"),
    "rollout_corr/training_log_ppl": alias("rl_log_perplexity", engine="trainer"),
    "rollout_corr/rollout_log_ppl": alias("rl_log_perplexity", engine="rollout"),
}
for _role in ("actor", "critic"):
    K[f"{_role}/perf/max_memory_allocated_gb"] = alias("rl_gpu_memory_peak_bytes", scale=GB,
                                                       kind="allocated", role=_role)
    K[f"{_role}/perf/max_memory_reserved_gb"] = alias("rl_gpu_memory_peak_bytes", scale=GB,
                                                      kind="reserved", role=_role)
    K[f"{_role}/perf/cpu_memory_used_gb"] = alias("rl_host_memory_used_bytes", scale=GB, role=_role)
for _stat in ("max", "mean", "std"):
    K[f"training/rollout_probs_diff_{_stat}"] = alias("rl_train_inference_prob_abs_diff", stat=_stat)
for _b in ("high", "low"):
    K[f"rollout_corr/rollout_is_ratio_fraction_{_b}"] = alias(
        "rl_rollout_importance_weight_clamped_ratio", bound=_b)
    K[f"rollout_corr/rollout_is_seq_fraction_{_b}"] = alias(
        "rl_rollout_importance_weight_clamped_ratio", bound=_b, level="sequence")

_IS = "rollout_corr/rollout_is_"
K.update(config_keys())

P = [
    # agent-loop statistics hide under timing_s/ but are not all seconds: keep them apart.
    pattern(r"^timing_s/agent_loop/slowest/(?P<phase>generate_sequences|tool_calls|compute_score)$",
            "rl_agent_loop_duration_seconds", sample="slowest"),
    pattern(r"^timing_s/agent_loop/slowest/num_preempted$", "rl_agent_loop_preemptions",
            sample="slowest"),
    pattern(r"^timing_s/agent_loop/num_preempted/(?P<stat>min|max|mean)$", "rl_agent_loop_preemptions"),
    pattern(r"^timing_s/agent_loop/(?P<phase>[^/]+)/(?P<stat>min|max|mean)$",
            "rl_agent_loop_duration_seconds"),
    # the slowest sample's other fields (prompt/response length) are not durations: fallback
    pattern(r"^timing_s/step$", "rl_step_duration_seconds"),
    pattern(r"^timing_s/(?!agent_loop/)(?P<phase>.+)$", "rl_phase_duration_seconds"),
    pattern(r"^timing/(?P<phase>.+)$", "rl_phase_duration_seconds", note="v0.1 timers"),
    pattern(r"^val/test_score/(?P<data_source>.+)$", "rl_validation_score",
            note="before val-core/val-aux (v0.2 - v0.3)"),
    # v0.1 _validate() returns test_score/{data_source}; fit() prefixes val/ inside the step
    # record, but the "Initial/Final validation metrics" prints carry the bare key
    pattern(r"^test_score/(?P<data_source>.+)$", "rl_validation_score",
            note="v0.1 Initial/Final validation metrics print"),
    pattern(r"^timing_per_token_ms/(?P<phase>.+)$", "rl_phase_time_per_token_seconds", scale=1e-3),
    pattern(r"^val-core/(?P<data_source>.+)/(?P<var>[^/]+)/(?P<estimator>mean|maj|best|worst)@(?P<n>\d+)"
            r"(?:/(?P<stat>mean|std))?$", "rl_validation_score", tier="core"),
    pattern(r"^val-aux/(?P<data_source>.+)/(?P<var>[^/]+)/(?P<estimator>mean|maj|best|worst)@(?P<n>\d+)"
            r"(?:/(?P<stat>mean|std))?$", "rl_validation_score", tier="aux"),
    pattern(r"^val-(?:core|aux)/(?P<data_source>.+)/(?P<var>[^/]+)/std@(?P<n>\d+)$",
            "rl_validation_score", estimator="mean", stat="std"),
    pattern(r"^rollout_corr/rollout_is_(?P<stat>mean|max|min|std)$", "rl_rollout_importance_weight"),
    pattern(r"^rollout_corr/rollout_is_seq_(?P<stat>mean|max|min|std)$", "rl_rollout_importance_weight",
            level="sequence"),
    pattern(r"^rollout_corr/rollout_rs_(?P<option>.+)_masked_fraction$", "rl_rollout_rejected_ratio",
            level="token"),
    pattern(r"^rollout_corr/rollout_rs_(?P<option>.+)_seq_masked_fraction$",
            "rl_rollout_rejected_ratio", level="sequence"),
    pattern(r"^rollout/moe/(?P<kind>max_vio|min_vio|avg_vio)/layer_(?P<layer>\d+)$",
            "rl_moe_routing_violation"),
    pattern(r"^rollout/moe/(?P<kind>max_vio|min_vio|avg_vio)/(?P<stat>max|avg)$",
            "rl_moe_routing_violation"),
    pattern(r"^gdpo/(?P<function>.+)/(?P<stat>mean|std|max|min)$", "rl_reward_function"),
    # reward managers that name their reward functions: critic/{function}_score[/mean|max|min]
    pattern(r"^critic/(?P<function>[\w\-.]+)_score(?:/(?P<stat>mean|max|min))?$",
            "rl_reward_function"),
    pattern(r"^processing_time/(?P<stat>avg|max|min|tp50|tp95|tp99)$", "rl_sample_processing_seconds"),
    pattern(r"^(?P<role>actor|critic)/mtp_losses(?:/?(?P<layer>.*))$", "rl_mtp_loss"),
]

# Families whose members carry no meaning we can name: exported on the bounded fallback, on purpose.
FALLBACK = [
    (re.compile(r"^rollout_corr/"), "a rollout-correction statistic with no canonical metric "
                                   "(perplexity ratios, chi2, per-option rejection statistics)"),
    (re.compile(r"^variance_proxy/"), "a gradient-variance proxy whose meaning is veRL's own"),
    (re.compile(r"^(?:fully_async|dynamic_resource)/"), "fully-async trainer bookkeeping"),
    (re.compile(r"^training/filter_groups/"), "dynamic-sampling filter bookkeeping"),
    (re.compile(r"^rollout/moe/routed_"), "MoE routing-capture bookkeeping"),
    (re.compile(r"^timing_s/agent_loop/slowest/"), "a field of the slowest sample that is not a time"),
    (re.compile(r"^training/rollout_probs_diff_valid$"), "the count behind rollout_probs_diff_*"),
    (re.compile(r"^batch/solve_(?:none|all|partial|none_format)$"),
     "rllm's veRL fork: prompt groups all failed / all solved, a count in its 2025-03 releases "
     "and a fraction of tasks in later ones, so no one unit can be named"),
]

VOCABULARY = Vocabulary(
    name="verl", title="veRL", keys=K, patterns=P, fallback_patterns=FALLBACK,
    ignored={"val/generations": "W&B/SwanLab table of validation samples, not a number"},
    step_keys=("training/global_step",),
    doc="Console `step:N - key:value ...` lines and the `file` logger's JSONL.",
)
