"""AReaL (inclusionAI/AReaL, HEAD cbff54d; train_perf/* and moe_balance/* from 858556a).

Every key comes from areal/utils/stats_tracker: key = "/".join(scope + [name]). `stat()`
exports `{key}/avg|min|max` (AVG = sum(v*mask)/sum(mask), all-reduced over DP), so aliases name
the base key with the denominator it is averaged over as the weight; /min and /max resolve
through it (stat label, MIN/MAX). `denominator()` keys are SUM counts; `scalar()` keys are means
with an internal `{key}__count` that StatsLogger drops (ignored here too). `record_timing(name)`
is always timeperf/{name}. One commit carries actor, rollout and eval-rollout stats together, so
no two keys here map to the same series.
"""
import re

from ..metrics import SPLIT, STAT
from ..model import COUNTER, GAUGE, MEAN, SUM, WMEAN, Metric, Vocabulary, alias, pattern

METRICS = [
    Metric("rl_outcome_sequences", GAUGE, "{sequence}",
           "Sequences in the trained batch by outcome: outcome=correct (task reward > 0) | incorrect "
           "(AReaL ppo_actor/correct_n_seqs, incorrect_n_seqs).", (STAT, SPLIT, "outcome"), SUM,
           group="counts"),
    Metric("rl_outcome_sequence_length_tokens", GAUGE, "{token}",
           "Prompt+response length of correct / incorrect sequences (AReaL "
           "ppo_actor/correct_seq_len, incorrect_seq_len: attention-mask length).",
           (STAT, SPLIT, "outcome"), WMEAN, "rl_responses", group="length"),
    Metric("rl_ppo_token_counts", GAUGE, "{token}",
           "AReaL loss-level and diagnostic denominators (ppo_actor/update/n_tokens, clipped_tokens, "
           "dual_clipped_tokens, unclipped_behave_tokens, n_valid_tokens_in_loss, ..., ppo_critic/*); "
           "`quantity` is the key path under the role's scope. The step's headline counts are "
           "rl_valid_tokens / rl_responses.", (STAT, SPLIT, "role", "quantity"), SUM, group="counts"),
    Metric("rl_ppo_diagnostic", GAUGE, "1",
           "AReaL PPO statistics with no canonical metric (ppo_actor/update/new_logp, old_logp, "
           "logp_diff = old - new within the update, clipped_*_logp, behave_approx_kl, "
           "behave_filtered_ratio, compute_logp/*, rkl_loss, vocab_*_logits, sapo_*, final_reward "
           "per token, ppo_critic/old_value, ...). `quantity` is the key path under the role's "
           "scope; `method` is the proximal-logp approximation.",
           (STAT, SPLIT, "role", "quantity", "method"), MEAN, group="policy"),
    Metric("rl_train_inference_diagnostic", GAUGE, "1",
           "AReaL train/inference log-prob diagnostics (ppo_actor/train_infer/*): signed logp_diff, "
           "logp_diff_squared, trainer_nll, rollout_nll, kl_k1, kl_k2, ratio_outside_{t} (fraction "
           "with |d| > log t), nonfinite_logp_fraction, kl_k3_overflow_fraction. The mean |d| is "
           "rl_train_inference_logprob_abs_diff and k3 is rl_train_inference_kl.",
           (STAT, SPLIT, "quantity"), WMEAN, "rl_logprob_gap_tokens", group="consistency"),
    Metric("rl_version_stats", GAUGE, "1",
           "AReaL policy-version bookkeeping (ppo_actor/update/version_stats/*): v_theta, v_proximal "
           "(versions), sample_staleness_proximal (versions), stale_token_fraction, "
           "future_token_fraction. Staleness against theta is rl_sample_staleness_steps.",
           (STAT, SPLIT, "quantity"), MEAN, group="async"),
    Metric("rl_workflow_value", GAUGE, "1",
           "Scalars an AReaL rollout workflow logs with no canonical metric (rollout/accepted, "
           "rejected, max_tokens; any eval-rollout/{scalar} with split=eval); "
           "count-weighted mean over trajectories.", (STAT, SPLIT, "quantity"), MEAN, group="rollout"),
    Metric("rl_training_compute_seconds_total", COUNTER, "s",
           "Training compute time since the engine started (AReaL train_perf/total_seconds; resets "
           "when the engine is recreated).", (), SUM, group="throughput"),
    Metric("rl_step_flops", GAUGE, "FLOP",
           "Estimated model FLOPs (forward + backward) of this export interval (AReaL "
           "train_perf/estimated_flops).", (STAT, SPLIT), SUM, group="throughput"),
    Metric("rl_cumulative_throughput_tokens_per_second", GAUGE, "{token}/s",
           "Tokens per second since the engine started (AReaL train_perf/"
           "cumulative_tokens_per_second).", (STAT, SPLIT), MEAN, group="throughput"),
    Metric("rl_cumulative_achieved_flops_per_second", GAUGE, "FLOP/s",
           "Estimated FLOP/s since the engine started (AReaL train_perf/"
           "cumulative_estimated_flops_per_second).", (STAT, SPLIT), MEAN, group="throughput"),
    Metric("rl_moe_expert_tokens", GAUGE, "{token}",
           "Routing assignments per MoE expert (AReaL moe_balance/layer_{L}/expert_{E}/tokens; "
           "SwanLab/Trackio only). High cardinality: capped per metric by the exporter.",
           (STAT, SPLIT, "layer", "expert"), SUM, group="balance"),
    Metric("rl_moe_expert_load_ratio", GAUGE, "1",
           "Share of a layer's routing assignments taken by one expert (AReaL "
           "moe_balance/layer_{L}/expert_{E}/load_percent / 100; 1/E is ideal). High cardinality.",
           (STAT, SPLIT, "layer", "expert"), MEAN, group="balance"),
]

NS = "ppo_actor/n_seqs"             # AVG denominator of per-sequence stats
NT = "ppo_actor/n_valid_tokens"     # AVG denominator of per-token batch stats
UT = "ppo_actor/update/n_valid_tokens"  # AVG denominator inside the loss
CT = "ppo_critic/n_valid_tokens"
TI = "ppo_actor/train_infer/n_valid_tokens"
VT = "ppo_actor/update/version_stats/n_valid_generated_tokens"
NC = r"(?!.*__count$)"  # families below must not swallow the internal __count keys


def _w(metric, weight, **kw):
    return alias(metric, agg=WMEAN, weight=weight, **kw)


def _diag(role, quantity, **kw):
    return alias("rl_ppo_diagnostic", role=role, quantity=quantity, **kw)


def _count(role, quantity):
    return alias("rl_ppo_token_counts", role=role, quantity=quantity)


def _config(role, parameter):
    return alias("rl_config_value", role=role, parameter=parameter, note="config echo")


K = {
    # ---------------------------------------------------------------- batch (ppo_actor/)
    "ppo_actor/n_seqs": alias("rl_responses"),
    "ppo_actor/n_valid_tokens": alias("rl_valid_tokens"),
    "ppo_actor/n_tokens": _count("actor", "n_tokens"),
    "ppo_actor/agent": _count("actor", "agent"),  # log_agent_stats: trajectory starts
    "ppo_actor/correct_n_seqs": alias("rl_outcome_sequences", outcome="correct"),
    "ppo_actor/incorrect_n_seqs": alias("rl_outcome_sequences", outcome="incorrect"),
    "ppo_actor/task_reward": _w("rl_score", NS),
    "ppo_actor/seq_len": _w("rl_sequence_length_tokens", NS, note="attention-mask length"),
    "ppo_actor/prompt_len": _w("rl_prompt_length_tokens", NS),
    "ppo_actor/no_eos_ratios": _w("rl_response_truncated_ratio", NS),
    "ppo_actor/correct_seq_len": _w("rl_outcome_sequence_length_tokens", "ppo_actor/correct_n_seqs",
                                    outcome="correct"),
    "ppo_actor/incorrect_seq_len": _w("rl_outcome_sequence_length_tokens",
                                      "ppo_actor/incorrect_n_seqs", outcome="incorrect"),
    "ppo_actor/advantages": _w("rl_advantage", NT),
    "ppo_actor/kl_rewards": _w("rl_reward_kl_penalty", NT),
    # tot_rewards averaged per token (mostly the KL term plus the final-token reward): not the
    # per-sequence reward, so not rl_reward
    "ppo_actor/final_reward": _diag("actor", "final_reward", agg=WMEAN, weight=NT),
    # ---------------------------------------------------------------- config echoes
    "ppo_actor/eps_clip": _config("actor", "eps_clip"),
    "ppo_actor/c_clip": _config("actor", "c_clip"),
    "ppo_actor/use_dual_clip": _config("actor", "use_dual_clip"),
    "ppo_actor/rs_upper": _config("actor", "rs_upper"),
    "ppo_actor/rs_lower": _config("actor", "rs_lower"),
    "ppo_actor/mask_no_eos_with_zero": _config("actor", "mask_no_eos_with_zero"),
    "ppo_critic/eps_clip": _config("critic", "eps_clip"),
    "ppo_critic/mask_no_eos_with_zero": _config("critic", "mask_no_eos_with_zero"),
    # ---------------------------------------------------------------- loss (ppo_actor/update/)
    "ppo_actor/update/actor_loss": _w("rl_policy_loss", UT),
    "ppo_actor/update/importance_weight": _w("rl_importance_ratio", UT),
    "ppo_actor/update/approx_kl": _w("rl_policy_kl", UT),
    "ppo_actor/update/clip_ratio": _w("rl_policy_clip_ratio", UT),
    "ppo_actor/update/dual_clip_ratio": _w("rl_policy_clip_ratio", UT, bound="dual"),
    "ppo_actor/update/entropy": _w("rl_entropy", UT),
    "ppo_actor/update/new_logp": _diag("actor", "update/new_logp", agg=WMEAN, weight=UT),
    "ppo_actor/update/old_logp": _diag("actor", "update/old_logp", agg=WMEAN, weight=UT),
    # old_logp - new_logp inside the update: policy drift, not train/inference mismatch
    "ppo_actor/update/logp_diff": _diag("actor", "update/logp_diff", agg=WMEAN, weight=UT),
    "ppo_actor/update/logp_abs_diff": _diag("actor", "update/logp_abs_diff", agg=WMEAN, weight=UT),
    "ppo_actor/update/clipped_new_logp": _diag("actor", "update/clipped_new_logp", agg=WMEAN,
                                               weight="ppo_actor/update/clipped_tokens"),
    "ppo_actor/update/clipped_old_logp": _diag("actor", "update/clipped_old_logp", agg=WMEAN,
                                               weight="ppo_actor/update/clipped_tokens"),
    # decoupled PPO: pi_prox / pi_behave, truncated; averaged over the tokens it did not filter
    "ppo_actor/update/behave_imp_weight": _w("rl_rollout_importance_weight",
                                             "ppo_actor/update/unclipped_behave_tokens"),
    "ppo_actor/update/behave_approx_kl": _diag("actor", "update/behave_approx_kl", agg=WMEAN,
                                               weight="ppo_actor/update/unclipped_behave_tokens"),
    "ppo_actor/update/behave_filtered_ratio": _diag("actor", "update/behave_filtered_ratio",
                                                    agg=WMEAN, weight=UT),
    "ppo_actor/update/grad_norm": alias("rl_grad_norm", agg=MEAN, note="mean over minibatches"),
    "ppo_actor/update/lr": alias("rl_learning_rate", agg=MEAN),
    "ppo_actor/update/update_successful": alias("rl_optimizer_update_success_ratio"),
    "ppo_actor/update/masked_token_ratio": _diag("actor", "update/masked_token_ratio"),
    "ppo_actor/update/rs_filtered_fraction": _diag("actor", "update/rs_filtered_fraction"),
    # ---------------------------------------------------------------- staleness (version_stats/)
    "ppo_actor/update/version_stats/v_theta": alias("rl_version_stats", quantity="v_theta"),
    "ppo_actor/update/version_stats/v_proximal": alias("rl_version_stats", quantity="v_proximal"),
    "ppo_actor/update/version_stats/stale_token_fraction": alias(
        "rl_version_stats", agg=WMEAN, weight=VT, quantity="stale_token_fraction"),
    "ppo_actor/update/version_stats/future_token_fraction": alias(
        "rl_version_stats", agg=WMEAN, weight=VT, quantity="future_token_fraction"),
    # ---------------------------------------------------------------- train/infer (train_infer/)
    "ppo_actor/train_infer/n_valid_tokens": alias("rl_logprob_gap_tokens"),
    "ppo_actor/train_infer/logp_abs_diff": _w("rl_train_inference_logprob_abs_diff", TI),
    "ppo_actor/train_infer/kl_k3": _w("rl_train_inference_kl", TI,
                                      note="k3 estimate of KL(rollout || trainer)"),
    # ---------------------------------------------------------------- critic (ppo_critic/)
    "ppo_critic/n_tokens": _count("critic", "n_tokens"),
    "ppo_critic/n_valid_tokens": _count("critic", "n_valid_tokens"),
    "ppo_critic/clipped_tokens": _count("critic", "clipped_tokens"),
    "ppo_critic/critic_loss": _w("rl_value_loss", CT),
    "ppo_critic/new_value": _w("rl_value", CT),
    "ppo_critic/target_value": _w("rl_return", CT, note="value target = returns"),
    "ppo_critic/clip_ratio": _w("rl_value_clip_ratio", CT),
    "ppo_critic/old_value": _diag("critic", "old_value", agg=WMEAN, weight=CT),
    "ppo_critic/clipped_new_value": _diag("critic", "clipped_new_value"),
    "ppo_critic/clipped_old_value": _diag("critic", "clipped_old_value"),
    "ppo_critic/grad_norm": alias("rl_critic_grad_norm", agg=MEAN, note="mean over minibatches"),
    "ppo_critic/lr": alias("rl_critic_learning_rate", agg=MEAN),
    "ppo_critic/update_successful": _diag("critic", "update_successful"),
    # ---------------------------------------------------------------- rollout workers
    "rollout/reward": alias("rl_reward", note="workflow reward per trajectory, count-weighted over "
                                              "rollout workers; includes later-rejected ones"),
    "rollout/num_turns": alias("rl_turns"),
    # accepted/rejected count 1 per trajectory; max_tokens is logged by multi-turn workflows
    "rollout/accepted": alias("rl_workflow_value", quantity="accepted"),
    "rollout/rejected": alias("rl_workflow_value", quantity="rejected"),
    "rollout/max_tokens": alias("rl_workflow_value", quantity="max_tokens"),
    "eval-rollout/reward": alias("rl_reward", split="eval"),
    "eval-rollout/num_turns": alias("rl_turns", split="eval"),
    # ---------------------------------------------------------------- train_perf/ (858556a)
    "train_perf/tokens": alias("rl_step_tokens", note="all train_batch calls of the interval"),
    "train_perf/seconds": alias("rl_phase_duration_seconds", phase="train_compute",
                                note="max over ranks of training stream time"),
    "train_perf/tokens_per_second": alias("rl_throughput_tokens_per_second", phase="train"),
    "train_perf/total_tokens": alias("rl_tokens_total"),
    "train_perf/total_seconds": alias("rl_training_compute_seconds_total"),
    "train_perf/cumulative_tokens_per_second": alias("rl_cumulative_throughput_tokens_per_second"),
    "train_perf/estimated_flops": alias("rl_step_flops"),
    "train_perf/estimated_flops_per_second": alias("rl_achieved_flops_per_second", phase="train"),
    "train_perf/cumulative_estimated_flops_per_second": alias(
        "rl_cumulative_achieved_flops_per_second"),
}
# loss-level denominators (SUM) and rejection-sampling scalars
for _q in ("n_tokens", "n_valid_tokens", "clipped_tokens", "dual_clipped_tokens",
           "unclipped_behave_tokens", "n_total_tokens", "n_valid_tokens_in_loss", "n_masked_tokens",
           "compute_logp/n_valid_tokens", "version_stats/n_valid_tokens",
           "version_stats/n_valid_generated_tokens"):
    K[f"ppo_actor/update/{_q}"] = _count("actor", f"update/{_q}")
# proximal-logp approximation quality (AVG_MIN_MAX over compute_logp/n_valid_tokens)
for _q in ("prox_logp_gt", "kl_div_direct", "kl_div_taylor", "kl_div_dual"):
    K[f"ppo_actor/update/compute_logp/{_q}"] = _diag(
        "actor", f"update/compute_logp/{_q}", agg=WMEAN,
        weight="ppo_actor/update/compute_logp/n_valid_tokens")
# staleness is reported as *_avg|_max|_min scalars, not /avg: spell the statistics out
for _s in ("avg", "max", "min"):
    K[f"ppo_actor/update/version_stats/sample_staleness_theta_{_s}"] = alias(
        "rl_sample_staleness_steps", stat=_s, **({"agg": WMEAN, "weight": VT} if _s == "avg" else {}))
    K[f"ppo_actor/update/version_stats/sample_staleness_proximal_{_s}"] = alias(
        "rl_version_stats", quantity="sample_staleness_proximal", stat=_s,
        **({"agg": WMEAN, "weight": VT} if _s == "avg" else {}))
# train_infer extras: AVG over its n_valid_tokens
for _q in ("logp_diff", "logp_diff_squared", "trainer_nll", "rollout_nll", "kl_k1", "kl_k2",
           "nonfinite_logp_fraction", "kl_k3_overflow_fraction"):
    K[f"ppo_actor/train_infer/{_q}"] = _w("rl_train_inference_diagnostic", TI, quantity=_q)
for _t in ("1.5", "2", "3", "5", "10"):
    K[f"ppo_actor/train_infer/ratio_outside_{_t}"] = _w("rl_train_inference_diagnostic", TI,
                                                       quantity=f"ratio_outside_{_t}")
# token occupancy of the shaped advantages
for _sign in ("positive", "negative", "zero"):
    K[f"ppo_actor/advantage_{_sign}_fraction"] = _diag("actor", f"advantage_{_sign}_fraction",
                                                       agg=WMEAN, weight=NT)

P = [
    # timers: timeperf/{name} whatever the scope, incl. {role}_onload|offload
    pattern(r"^timeperf/" + NC + r"(?P<phase>.+)$", "rl_phase_duration_seconds", agg=MEAN,
            note="SCALAR mean of the recorded durations"),
    # MoE balance
    pattern(r"^moe_balance/layer_(?P<layer>\d+)/max_over_ideal$", "rl_moe_load_imbalance_ratio"),
    pattern(r"^moe_balance/layer_(?P<layer>\d+)/expert_(?P<expert>\d+)/tokens$",
            "rl_moe_expert_tokens"),
    pattern(r"^moe_balance/layer_(?P<layer>\d+)/expert_(?P<expert>\d+)/load_percent$",
            "rl_moe_expert_load_ratio", scale=0.01),
    # proximal-logp importance-weight error per approximation method (base; /avg|min|max resolve)
    pattern(r"^ppo_actor/update/compute_logp/(?P<method>[^/]+)/(?P<q>(?:behave_imp_weight|"
            r"importance_weight)_(?:abs|rel)_error)$", "rl_ppo_diagnostic", role="actor",
            quantity="update/compute_logp/{q}"),
    # eval workflow scalars: anything else a workflow logs. (No such catch-all for rollout/:
    # slime and Miles own that prefix too, and framework="auto" tries AReaL first.)
    pattern(r"^eval-rollout/" + NC + r"(?P<quantity>[^/]+)$", "rl_workflow_value", split="eval"),
    # other ppo_actor/ppo_critic stats (distillation, SAPO gates, logits range, custom losses).
    # Keys ending in /avg|/min|/max are left to resolve through their base key.
    pattern(r"^ppo_actor/(?!.*(?:/(?:avg|min|max)|__count)$)(?P<quantity>.+)$", "rl_ppo_diagnostic",
            role="actor"),
    pattern(r"^ppo_critic/(?!.*(?:/(?:avg|min|max)|__count)$)(?P<quantity>.+)$", "rl_ppo_diagnostic",
            role="critic"),
]

VOCABULARY = Vocabulary(
    name="areal", title="AReaL", keys=K, patterns=P,
    ignored_patterns=[
        (re.compile(r"^.+__count$"),
         "SCALAR bookkeeping: the number of values behind the key, used by the rollout controller's "
         "count-weighted mean; StatsLogger drops it before logging"),
        (re.compile(r"^moe_balance/expert_loads$"),
         "W&B Table of per-expert loads, not a scalar (the per-layer max_over_ideal is)"),
    ],
    doc="StatsLogger tables (`(AReaL) ... StatsLogger INFO:` + fancy_grid key/value pairs), W&B, "
        "SwanLab, Trackio, TensorBoard. The step is not in the frame (commit's global_step).",
)
