"""AReaL (inclusionAI/AReaL, HEAD cbff54d; train_perf/* and moe_balance/* from 858556a).

Every key comes from areal/utils/stats_tracker: key = "/".join(scope + [name]). `stat()`
exports `{key}/avg|min|max` (AVG = sum(v*mask)/sum(mask), all-reduced over DP), so aliases name
the base key with the denominator it is averaged over as the weight; /min and /max resolve
through it (stat label, MIN/MAX). `denominator()` keys are SUM counts; `scalar()` keys are means
with an internal `{key}__count` that StatsLogger drops (ignored here too). `record_timing(name)`
is always timeperf/{name}. One commit carries actor, rollout and eval-rollout stats together, so
no two keys of one release map to the same series; the realhf releases' ppo_actor/{stat}
spelling of the loss statistics shares series with today's ppo_actor/update/{stat}.
"""
import math
import re
from dataclasses import replace

from ..metrics import SPLIT, STAT
from ..model import COUNTER, GAUGE, MAX, MEAN, SUM, WMEAN, Metric, Vocabulary, alias, pattern

METRICS = [
    Metric("rl_batch_longest_sequence_ratio", GAUGE, "1",
           "Share of the trained batch's sequences whose prompt+response length equals the "
           "batch's longest (AReaL ppo_actor/no_eos_ratios: seqlens == the padded width). At least "
           "1/batch on every step, and blind to a truncated response with a shorter prompt, so "
           "it is no truncation share (rl_response_truncated_ratio).", (STAT, SPLIT), WMEAN,
           "rl_responses", group="length"),
    Metric("rl_outcome_sequences", GAUGE, "{sequence}",
           "Sequences in the trained batch by outcome: outcome=correct (task reward > 0) | incorrect "
           "(AReaL ppo_actor/correct_n_seqs, incorrect_n_seqs).", (STAT, SPLIT, "outcome"), SUM,
           group="counts"),
    Metric("rl_outcome_sequence_length_tokens", GAUGE, "{token}",
           "Prompt+response length of correct / incorrect sequences (AReaL "
           "ppo_actor/correct_seq_len, incorrect_seq_len: attention-mask length).",
           (STAT, SPLIT, "outcome"), WMEAN, "rl_responses", group="length"),
    Metric("rl_counted_tokens", GAUGE, "{token}",
           "Token counts AReaL averages its statistics over, per role and subset (ppo_actor/n_tokens "
           "= batch_all, update/n_valid_tokens = update_valid, update/clipped_tokens = "
           "update_clipped, ...). The step's headline counts are rl_valid_tokens / rl_responses.",
           (STAT, SPLIT, "role", "subset"), SUM, group="counts"),
    Metric("rl_policy_version", GAUGE, "{version}",
           "Policy version in the AReaL decoupled-PPO update: policy=current (version_stats/v_theta) "
           "or proximal (v_proximal).", (STAT, SPLIT, "policy"), MAX, group="async"),
    Metric("rl_stale_token_ratio", GAUGE, "1",
           "Fraction of generated tokens sampled by an older policy version than the one trained "
           "(AReaL version_stats/stale_token_fraction).", (STAT, SPLIT), MEAN, group="async"),
    Metric("rl_advantage_sign_ratio", GAUGE, "1",
           "Fraction of valid tokens whose shaped advantage is sign=positive|negative|zero (AReaL "
           "ppo_actor/advantage_{sign}_fraction). zero near 1: no learning signal.",
           (STAT, SPLIT, "sign"), MEAN, group="reward"),
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
    Metric("rl_rollout_log_importance_weight", GAUGE, "1",
           "Mean log importance weight log pi_train - log pi_rollout over the tokens the weight cap "
           "kept (AReaL behave_approx_kl = log pi_prox - log pi_behave, the log of behave_imp_weight "
           "before the cap; signed). Where the proximal policy is newer than the behaviour one it "
           "includes staleness, not only the engine mismatch.", (STAT, SPLIT), WMEAN,
           "rl_valid_tokens", group="consistency"),
    Metric("rl_vocabulary_logit", GAUGE, "1",
           "Smallest (extreme=min) or largest (extreme=max) logit over the vocabulary at each "
           "token position, averaged over tokens (AReaL vocab_min_logits, vocab_max_logits). A "
           "growing magnitude is logit blow-up before the loss shows it.",
           (STAT, SPLIT, "extreme"), WMEAN, "rl_valid_tokens", group="policy"),
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


def _config(role, parameter):
    return alias("rl_config_value", role=role, parameter=parameter, note="config echo")


K = {
    # ---------------------------------------------------------------- batch (ppo_actor/)
    "ppo_actor/n_seqs": alias("rl_responses"),
    "ppo_actor/n_valid_tokens": alias("rl_valid_tokens"),
    "ppo_actor/n_tokens": alias("rl_counted_tokens", role="actor", subset="batch_all",
                                note="prompt + response tokens of the batch"),
    "ppo_actor/correct_n_seqs": alias("rl_outcome_sequences", outcome="correct"),
    "ppo_actor/incorrect_n_seqs": alias("rl_outcome_sequences", outcome="incorrect"),
    "ppo_actor/task_reward": _w("rl_score", NS),
    "ppo_actor/seq_len": _w("rl_sequence_length_tokens", NS, note="attention-mask length"),
    "ppo_actor/prompt_len": _w("rl_prompt_length_tokens", NS),
    # seqlens == attention_mask.shape[1] (areal/trainer/ppo/actor.py:301) on a batch padded to
    # its longest sequence (areal/utils/data.py concat_padded_tensors): the share of sequences
    # as long as the longest, at least 1/B on every step; not "hit the generation limit"
    "ppo_actor/no_eos_ratios": _w("rl_batch_longest_sequence_ratio", NS),
    "ppo_actor/correct_seq_len": _w("rl_outcome_sequence_length_tokens", "ppo_actor/correct_n_seqs",
                                    outcome="correct"),
    "ppo_actor/incorrect_seq_len": _w("rl_outcome_sequence_length_tokens",
                                      "ppo_actor/incorrect_n_seqs", outcome="incorrect"),
    "ppo_actor/advantages": _w("rl_advantage", NT),
    # rewards = -kl_ctl * kl_estimator(old_logp, ref_logp) (areal/trainer/ppo/actor.py:202), a
    # token mean (:294): coefficient and sign included; without a reference model ref_logp is
    # zeros (:192-194) and it is -kl_ctl * logp_old, no KL (kl_reward_coef is then 0)
    "ppo_actor/kl_rewards": _w("rl_reward_kl_term", NT),
    # ---------------------------------------------------------------- config echoes
    # record_timing("rollout") around prepare_batch (trainer/rl_trainer.py:601): the batch
    # generated in a synchronous run, the wait for it in an off-policy one; slime's
    # perf/rollout_time (phase "rollout") is the engine's own generation time
    "timeperf/rollout": alias("rl_phase_duration_seconds", phase="rollout_batch", agg=MEAN,
                              note="the trainer's prepare_batch: generation (sync) or the wait (async)"),
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
    # approx_kl = logprobs - proximal_logprobs (functional.py:548): new - old, negated to the
    # old - new every other framework logs (its /min and /max swap with the sign)
    "ppo_actor/update/approx_kl": _w("rl_policy_kl", UT, scale=-1.0),
    "ppo_actor/update/clip_ratio": _w("rl_policy_clip_ratio", UT),
    "ppo_actor/update/dual_clip_ratio": _w("rl_policy_clip_ratio", UT, bound="dual"),
    "ppo_actor/update/entropy": _w("rl_entropy", UT),
    "ppo_actor/update/new_logp": _w("rl_token_logprob", UT, policy="current"),
    "ppo_actor/update/old_logp": _w("rl_token_logprob", UT, policy="old"),
    # decoupled PPO: pi_prox / pi_behave, truncated; averaged over the tokens it did not filter
    "ppo_actor/update/behave_imp_weight": _w("rl_rollout_importance_weight",
                                             "ppo_actor/update/unclipped_behave_tokens"),
    "ppo_actor/update/behave_filtered_ratio": _w("rl_rollout_rejected_ratio", UT, level="token",
                                                 option="behave_imp_weight_cap"),
    "ppo_actor/update/behave_approx_kl": _w("rl_rollout_log_importance_weight",
                                            "ppo_actor/update/unclipped_behave_tokens"),
    "ppo_actor/update/vocab_min_logits": _w("rl_vocabulary_logit", "ppo_actor/update/n_tokens",
                                            extreme="min"),
    "ppo_actor/update/vocab_max_logits": _w("rl_vocabulary_logit", "ppo_actor/update/n_tokens",
                                            extreme="max"),
    # log-probs restricted to the tokens the clip bound (denominator clipped_tokens)
    "ppo_actor/update/clipped_new_logp": _w("rl_token_logprob", "ppo_actor/update/clipped_tokens",
                                            policy="current", subset="clipped"),
    "ppo_actor/update/clipped_old_logp": _w("rl_token_logprob", "ppo_actor/update/clipped_tokens",
                                            policy="old", subset="clipped"),
    # the proximal policy's log-probs as the trainer recomputed them (the ground truth the
    # approximation methods are compared against)
    "ppo_actor/update/compute_logp/prox_logp_gt": _w(
        "rl_token_logprob", "ppo_actor/update/compute_logp/n_valid_tokens", policy="proximal"),
    "ppo_actor/update/grad_norm": alias("rl_grad_norm", agg=MEAN, note="mean over minibatches"),
    "ppo_actor/update/lr": alias("rl_learning_rate", agg=MEAN),
    "ppo_actor/update/update_successful": alias("rl_optimizer_update_success_ratio"),
    "ppo_actor/update/rs_filtered_fraction": alias("rl_rollout_rejected_ratio", level="token",
                                                   option="rejection_sampling"),
    # ---------------------------------------------------------------- staleness (version_stats/)
    "ppo_actor/update/version_stats/v_theta": alias("rl_policy_version", policy="current"),
    "ppo_actor/update/version_stats/v_proximal": alias("rl_policy_version", policy="proximal"),
    "ppo_actor/update/version_stats/stale_token_fraction": alias(
        "rl_stale_token_ratio", agg=WMEAN, weight=VT),
    # ---------------------------------------------------------------- train/infer (train_infer/)
    "ppo_actor/train_infer/n_valid_tokens": alias("rl_train_inference_tokens"),
    "ppo_actor/train_infer/logp_abs_diff": _w("rl_train_inference_logprob_abs_diff", TI),
    "ppo_actor/train_infer/kl_k1": _w("rl_train_inference_kl", TI, estimator="k1"),
    "ppo_actor/train_infer/kl_k2": _w("rl_train_inference_kl", TI, estimator="k2"),
    "ppo_actor/train_infer/kl_k3": _w("rl_train_inference_kl", TI, estimator="k3"),
    "ppo_actor/train_infer/logp_diff": _w("rl_train_inference_logprob_diff", TI),
    "ppo_actor/train_infer/logp_diff_squared": _w("rl_train_inference_logprob_squared_diff", TI),
    "ppo_actor/train_infer/trainer_nll": _w("rl_train_inference_nll", TI, engine="trainer"),
    "ppo_actor/train_infer/rollout_nll": _w("rl_train_inference_nll", TI, engine="rollout"),
    "ppo_actor/train_infer/nonfinite_logp_fraction": _w("rl_train_inference_nonfinite_ratio", TI),
    # ---------------------------------------------------------------- critic (ppo_critic/)
    "ppo_critic/critic_loss": _w("rl_value_loss", CT),
    "ppo_critic/new_value": _w("rl_value", CT),
    "ppo_critic/target_value": _w("rl_return", CT, note="value target = returns"),
    "ppo_critic/clip_ratio": _w("rl_value_clip_ratio", CT),
    "ppo_critic/grad_norm": alias("rl_critic_grad_norm", agg=MEAN, note="mean over minibatches"),
    "ppo_critic/lr": alias("rl_critic_learning_rate", agg=MEAN),
    # ---------------------------------------------------------------- rollout workers
    "rollout/reward": alias("rl_reward", note="workflow reward per trajectory, count-weighted over "
                                              "rollout workers; includes later-rejected ones"),
    "rollout/num_turns": alias("rl_turns"),
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
# |d| > ln t, i.e. the ratio outside [1/t, t]: the tail threshold in nats is ln t
for _t in ("1.5", "2", "3", "5", "10"):
    K[f"ppo_actor/train_infer/ratio_outside_{_t}"] = _w(
        "rl_train_inference_logprob_tail_ratio", TI, threshold=f"{math.log(float(_t)):.3g}")
# staleness is reported as *_avg|_max|_min scalars, not /avg: spell the statistics out
for _s in ("avg", "max", "min"):
    K[f"ppo_actor/update/version_stats/sample_staleness_theta_{_s}"] = alias(
        "rl_sample_staleness_steps", stat=_s, **({"agg": WMEAN, "weight": VT} if _s == "avg" else {}))
    K[f"ppo_actor/update/version_stats/sample_staleness_proximal_{_s}"] = alias(
        "rl_sample_staleness_steps", reference="proximal", stat=_s,
        **({"agg": WMEAN, "weight": VT} if _s == "avg" else {}))
# token occupancy of the shaped advantages
for _sign in ("positive", "negative", "zero"):
    K[f"ppo_actor/advantage_{_sign}_fraction"] = _w("rl_advantage_sign_ratio", NT, sign=_sign)

# denominators of the update's averages
for _q, _sub in (("n_tokens", "update_all"), ("n_valid_tokens", "update_valid"),
                 ("clipped_tokens", "update_clipped"), ("dual_clipped_tokens", "update_dual_clipped"),
                 ("unclipped_behave_tokens", "update_unclipped_behave"),
                 ("n_total_tokens", "update_total"), ("n_valid_tokens_in_loss", "update_valid_in_loss"),
                 ("n_masked_tokens", "update_masked"),
                 ("compute_logp/n_valid_tokens", "compute_logp_valid"),
                 ("version_stats/n_valid_tokens", "version_valid"),
                 ("version_stats/n_valid_generated_tokens", "version_valid_generated")):
    K[f"ppo_actor/update/{_q}"] = alias("rl_counted_tokens", role="actor", subset=_sub)
for _q, _sub in (("n_tokens", "all"), ("n_valid_tokens", "valid"), ("clipped_tokens", "clipped")):
    K[f"ppo_critic/{_q}"] = alias("rl_counted_tokens", role="critic", subset=_sub)

# realhf releases (v0.2 - v0.3.x, realhf/impl/model/interface/ppo_interface.py) logged the loss
# statistics in the ppo_actor/ scope itself, without update/; they never appear in the same run
# as the update/ keys above, so the two spellings share series.
R = "ppo_actor/unclipped_behave_tokens"
K.update({
    "ppo_actor/importance_weight": _w("rl_importance_ratio", NT),
    "ppo_actor/approx_kl": _w("rl_policy_kl", NT, scale=-1.0),
    "ppo_actor/new_logp": _w("rl_token_logprob", NT, policy="current"),
    "ppo_actor/old_logp": _w("rl_token_logprob", NT, policy="old"),
    "ppo_actor/entropy": _w("rl_entropy", NT),
    "ppo_actor/actor_loss": _w("rl_policy_loss", NT),
    "ppo_actor/clip_ratio": _w("rl_policy_clip_ratio", NT),
    "ppo_actor/dual_clip_ratio": _w("rl_policy_clip_ratio", NT, bound="dual"),
    "ppo_actor/behave_imp_weight": _w("rl_rollout_importance_weight", R),
    "ppo_actor/behave_approx_kl": _w("rl_rollout_log_importance_weight", R),
    "ppo_actor/vocab_min_logits": _w("rl_vocabulary_logit", "ppo_actor/n_tokens", extreme="min"),
    "ppo_actor/vocab_max_logits": _w("rl_vocabulary_logit", "ppo_actor/n_tokens", extreme="max"),
    "ppo_actor/clipped_new_logp": _w("rl_token_logprob", "ppo_actor/clipped_tokens",
                                     policy="current", subset="clipped"),
    "ppo_actor/clipped_old_logp": _w("rl_token_logprob", "ppo_actor/clipped_tokens",
                                     policy="old", subset="clipped"),
    "ppo_actor/clipped_tokens": alias("rl_counted_tokens", role="actor", subset="update_clipped"),
    "ppo_actor/dual_clipped_tokens": alias("rl_counted_tokens", role="actor",
                                           subset="update_dual_clipped"),
    R: alias("rl_counted_tokens", role="actor", subset="update_unclipped_behave"),
    # current version minus the version that started generating the sample, per sequence
    "ppo_actor/head_offpolicyness": _w("rl_sample_staleness_steps", NS),
    # config echoes of those releases (stats_tracker.scalar)
    "ppo_actor/behav_imp_weight_cap": _config("actor", "behave_imp_weight_cap"),
    "ppo_actor/behave_imp_weight_cap": _config("actor", "behave_imp_weight_cap"),
    "ppo_actor/use_prox_logp": _config("actor", "use_prox_logp"),
    "ppo_actor/disable_value": _config("actor", "disable_value"),
})

# AReaL 0.3.x (areal-lite, the FSDP + SGLang engine of 0.3.0-0.3.4): the same statistics as
# the realhf spelling above, under the algorithm's own scope (`grpo_actor/`), and the update's
# grad_norm, lr and update_successful in that scope too (no update/ sub-scope). Mined from the
# StatsLogger tables of a whole 0.3.4 run (tests/data/runs/areal, KEYS-0.3.4.txt).
_REALHF = [k for k in K if k.startswith("ppo_actor/") and "/update/" not in k
           and "/train_infer/" not in k]
for _k in _REALHF:
    _a = K[_k]
    K["grpo_actor/" + _k[len("ppo_actor/"):]] = replace(
        _a, weight=_a.weight.replace("ppo_actor/", "grpo_actor/", 1) if _a.weight else None)
K.update({
    "grpo_actor/grad_norm": alias("rl_grad_norm", agg=MEAN, note="0.3.x: mean over minibatches"),
    "grpo_actor/lr": alias("rl_learning_rate", agg=MEAN),
    "grpo_actor/update_successful": alias("rl_optimizer_update_success_ratio"),
})

# Keys with no meaning of their own (denominators of other keys' averages, workflow bookkeeping,
# custom loss terms): exported on the bounded fallback, on purpose.
FALLBACK = [
    (re.compile(r"^ppo_actor/agent$"), "trajectory-start bookkeeping of log_agent_stats"),
    (re.compile(r"^(?:ppo|grpo)_actor/final_reward$"),
     "tot_rewards, the token-level shaped reward (the clipped, optionally normalised task "
     "reward on the last token plus the per-token KL reward) averaged over valid tokens: it "
     "scales with 1/length, so it is not a per-sequence reward; its parts are rl_score "
     "(task_reward) and rl_reward_kl_penalty (kl_rewards)"),
    (re.compile(r"^ppo_actor/update/compute_logp/kl_div_(?:direct|taylor|dual)$"),
     "KL estimators (k1 direct, k2 taylor, k3 dual) between the behaviour policy that sampled and "
     "the policy inside the update: they mix the train/inference mismatch with the update's own "
     "drift, so neither rl_train_inference_kl (before the update) nor rl_policy_kl (against the "
     "proximal policy) is their meaning"),
    (re.compile(r"^ppo_actor/update/compute_logp/(?!prox_logp_gt/|kl_div_)[^/]+/"),
     "an error metric of one proximal-logp approximation method against the recomputed "
     "proximal log-probs (*_abs_error, *_rel_error)"),
    (re.compile(r"^(?:r3|moe_routing)/"),
     "MoE router-replay (R3) diagnostics of an unmerged AReaL branch (PR #1207, the run log "
     "moonlight_moe_r3.txt of 2026-04): batch shapes, expert counts and routing statistics that "
     "no released stats code emits, so no definition to name them by"),
    (re.compile(r"^rollout/(?:accepted|rejected|max_tokens)$"),
     "workflow bookkeeping logged as a count-weighted mean of per-trajectory constants"),
    (re.compile(r"^eval-rollout/" + NC + r"[^/]+$"), "a scalar a user workflow logs at eval time"),
    (re.compile(r"^(?:ppo|grpo)_(?:actor|critic)/(?!.*(?:/(?:avg|min|max)|__count)$).+$"),
     "an AReaL PPO statistic with no canonical meaning (custom losses, SAPO gates, logits "
     "ranges, proximal-logp approximation errors, policy drift inside the update)"),
]

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
]

VOCABULARY = Vocabulary(
    name="areal", title="AReaL", keys=K, patterns=P,
    fallback_patterns=FALLBACK,
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
