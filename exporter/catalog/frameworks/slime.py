"""slime (THUDM/slime): Megatron trainer + SGLang rollout.

Keys come from backends/megatron_utils/model.py and loss.py (`train/*`, one dict per optimizer
step), observability/rollout_metrics.py (rollout-side `rollout/*`, `perf/*`, `eval/*`) and
observability/train_metric_utils.py (Megatron-side `rollout/*`, `multi_turn/*`, `passrate/*`,
`perf/*_time`). The console prints each family as its own dict (`step N: {...}`,
`perf N: {...}`, `rollout N: {...}`, `eval N: {...}`), so a rollout-side and a Megatron-side key
with the same meaning (rollout/truncated_ratio vs rollout/truncated) never share a frame.

Three step counters: `train/step` (rollout_id x steps_per_rollout + step_id) is the training
step; `rollout/step` (rollout_id) and `eval/step` label the other families and are exported
apart as rl_step_counter{counter}, never as rl_training_step.

The trainer has already reduced every value (train/*: token sums / all-reduced token counts;
Megatron rollout/*: sum/count over DP; rollout side: over all samples), so the aliases keep the
canonical rules. Miles (miles.py) copies KEYS / PATTERNS / IGNORED from here.
"""
import re

from ..config_echo import config_keys
from ..metrics import SPLIT, STAT
from ..model import GAUGE, MAX, MEAN, SUM, Metric, Vocabulary, alias, pattern

METRICS = [
    Metric("rl_value_clip_region_ratio", GAUGE, "1",
           "Fraction of value predictions outside the value clip region, |V - V_old| > value_clip "
           "(slime/Miles train/value_clipfrac). An upper bound of rl_value_clip_ratio, which "
           "counts only the tokens where the clipped branch is the one the loss takes.",
           (STAT, SPLIT), MEAN, group="critic"),
    Metric("rl_train_wait_ratio", GAUGE, "1",
           "Share of the step outside the trainer's train() call, train_wait / (train_wait + "
           "train) (slime/Miles perf/wait_time_ratio): the rollout itself, weight sync, offload, "
           "save and eval in a synchronous run, waiting for samples in an async one; "
           "rl_trainer_idle_ratio is only the waiting.", (STAT, SPLIT), MEAN, group="timing"),
    Metric("rl_step_counter", GAUGE, "{step}",
           "slime/Miles step counters other than the training step: counter=rollout (rollout/step, "
           "the rollout id) and counter=eval (eval/step). Compare with rl_training_step.",
           (STAT, SPLIT, "counter"), MAX, group="run"),
    Metric("rl_correct_response_entropy", GAUGE, "1",
           "Mean token entropy estimate (-log p of the sampled tokens) over the correct responses "
           "only (slime/Miles rollout/correct_entropy).", (STAT, SPLIT), MEAN, group="policy"),
    Metric("rl_top_p_kept_vocab_tokens", GAUGE, "{token}",
           "Vocabulary entries kept by top-p sampling per generated token (slime/Miles "
           "rollout/top_p_kept_vocab_per_token).", (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_response_repetition_ratio", GAUGE, "1",
           "Fraction of responses flagged as repetitive (slime/Miles rollout/repetition_frac: >10k "
           "chars whose tail compresses >10x). A spike signals degenerate generation.",
           (STAT, SPLIT), MEAN, group="length"),
    Metric("rl_prefix_cache_hit_ratio", GAUGE, "1",
           "Inference-engine prefix-cache hit rate over the rollout (slime/Miles "
           "rollout/prefix_cache_hit_rate).", (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_cached_prompt_tokens", GAUGE, "{token}",
           "Mean prefix-cached tokens per sample (slime rollout/avg_cached_tokens_per_sample).",
           (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_tied_groups", GAUGE, "{group}",
           "Accepted prompt groups whose rewards all equal `reward` (slime/Miles "
           "rollout/zero_std/count_{reward}, reward rounded to one decimal). No gradient signal.",
           (STAT, SPLIT, "reward"), SUM, group="groups"),
    Metric("rl_reward_category_ratio", GAUGE, "1",
           "Fraction of samples in a reward category (slime/Miles rollout/error_cat/{category}, "
           "--log-reward-category). Categories overlap; do not sum them.",
           (STAT, SPLIT, "category"), MEAN, group="reward"),
    Metric("rl_dynamic_filter_dropped", GAUGE, "1",
           "Samples dropped by the dynamic-sampling filter per reason (slime/Miles "
           "rollout/dynamic_filter/drop_{reason}).", (STAT, SPLIT, "reason"), SUM, group="groups"),
    Metric("rl_rollout_throughput_tokens_per_second", GAUGE, "{token}/s",
           "slime/Miles rollout generation rate: sample=all with effective=true for "
           "perf/effective_tokens_per_gpu_per_sec (per GPU), sample=longest for the longest "
           "sample's rates (perf/longest_{,effective_}sample_tokens_per_sec); generation=only when "
           "non-generation time is left out (_without_non_generation).",
           (STAT, SPLIT, "sample", "effective", "generation"), MEAN, group="throughput"),
    Metric("rl_rollout_non_generation_seconds", GAUGE, "s",
           "Time a rollout sample spent outside generation (tools, reward, queueing): "
           "slime perf/non_generation_time/{mean,median,max,min} over samples; sample=longest "
           "(effective=true|false) for the longest one.", (STAT, SPLIT, "sample", "effective"), MEAN,
           group="timing"),
    Metric("rl_inference_request_duration_seconds", GAUGE, "s",
           "SGLang per-request phase durations collected by slime (perf/request/e2e_latency, "
           "queue_time, perf/prefill|decode/*_duration): `phase` is prefill|decode|request and "
           "`step` the sub-step (e.g. bootstrap, alloc_wait, forward, transfer).",
           (STAT, SPLIT, "phase", "step"), MEAN, group="rollout"),
    Metric("rl_inference_decode_throughput_tokens_per_second", GAUGE, "{token}/s",
           "SGLang decode throughput per request (slime perf/decode/throughput).", (STAT, SPLIT),
           MEAN, group="rollout"),
    Metric("rl_inference_kv_transfer_bytes_per_second", GAUGE, "By/s",
           "Prefill-to-decode KV transfer speed (slime perf/prefill/transfer_speed_gb_s).",
           (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_inference_kv_transfer_bytes", GAUGE, "By",
           "Prefill-to-decode KV transfer size per request (slime perf/prefill/transfer_total_mb).",
           (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_inference_kv_transfer_retries", GAUGE, "{retry}",
           "Prefill-to-decode KV transfer retries per request (slime perf/prefill/retry_count).",
           (STAT, SPLIT), MEAN, group="rollout"),
    Metric("rl_weight_sync_bytes", GAUGE, "By",
           "Bytes sent on the wire by the last weight update to the engines "
           "(slime perf/update_weights_wire_bytes).", (STAT, SPLIT), MAX, group="timing"),
    Metric("rl_weight_sync_density", GAUGE, "1",
           "Density of the last weight update as slime reports it (perf/update_weights_density).",
           (STAT, SPLIT), MEAN, group="timing"),
]

GB = 2.0 ** 30

# ------------------------------------------------------------------ train/* (one dict per step)
_TRAIN = {
    "loss": alias("rl_loss"),
    "pg_loss": alias("rl_policy_loss"),
    # sum_of_sample_mean(entropy) of the policy being updated, always computed at 624b824
    # (slime/backends/megatron_utils/loss.py:976 with_entropy=True, :1112): the entropy itself,
    # beside rollout/entropy (the old-policy pass, --use-rollout-entropy)
    "entropy_loss": alias("rl_entropy", phase="update",
                          note="the entropy itself (sum_of_sample_mean(entropy)), not x coef"),
    "pg_clipfrac": alias("rl_policy_clip_ratio"),
    "ppo_kl": alias("rl_policy_kl"),
    "kl_loss": alias("rl_reference_kl", note="KL to the reference before --kl-loss-coef"),
    "train_rollout_logprob_abs_diff": alias("rl_train_inference_logprob_abs_diff"),
    "tis": alias("rl_rollout_importance_weight", note="mean truncated IS weight (--use-tis)"),
    "ois": alias("rl_rollout_importance_weight", truncated="false",
                 note="exp(-ppo_kl): the untruncated weight"),
    "tis_clipfrac": alias("rl_rollout_importance_weight_clamped_ratio"),
    "tis_abs": alias("rl_rollout_importance_weight_abs_deviation", note="|exp(old - rollout) - 1|"),
    "opsm_clipfrac": alias("rl_rollout_rejected_ratio", level="sequence", option="opsm",
                           note="off-policy sequence masking"),
    "opd_reverse_kl": alias("rl_distillation_divergence"),
    "grad_norm": alias("rl_grad_norm"),
    # samples handed to this optimizer step
    "global_batch_size": alias("rl_responses", note="samples in this optimizer step"),
    "mtp_loss": alias("rl_mtp_loss"),
}
KEYS = {f"train/{k}": a for k, a in _TRAIN.items()}
# With a critic, slime prefixes keys by role: train/{role}-{key}. The actor's keys mean the same.
KEYS.update({f"train/actor-{k}": a for k, a in _TRAIN.items()})
KEYS.update({
    # max(surr1, surr2) with no 0.5 (slime loss.py:1216); veRL, OpenRLHF and AReaL halve the
    # squared error: x 0.5 puts it on their scale
    "train/critic-value_loss": alias("rl_value_loss", scale=0.5, note="x 0.5: slime has no 1/2"),
    # |values - old_values| > value_clip (loss.py:1212): the clip region, not the binding branch
    "train/critic-value_clipfrac": alias("rl_value_clip_region_ratio"),
    "train/critic-grad_norm": alias("rl_critic_grad_norm"),
    # value keys without the role prefix (single-role runs)
    "train/value_loss": alias("rl_value_loss", scale=0.5, note="x 0.5: slime has no 1/2"),
    "train/value_clipfrac": alias("rl_value_clip_region_ratio"),
})

# ------------------------------------------------------------------ rollout/* (rollout side)
KEYS.update({
    "rollout/step": alias("rl_step_counter", counter="rollout"),
    "rollout/response_len": alias("rl_response_length_tokens"),  # /mean|median|max|min
    "rollout/repetition_frac": alias("rl_response_repetition_ratio"),
    "rollout/truncated_ratio": alias("rl_response_truncated_ratio"),
    "rollout/prefix_cache_hit_rate": alias("rl_prefix_cache_hit_ratio"),
    "rollout/avg_cached_tokens_per_sample": alias("rl_cached_prompt_tokens"),
    "rollout/spec_accept_rate": alias("rl_speculative_accept_ratio"),
    "rollout/spec_accept_length": alias("rl_speculative_accept_length_tokens"),
})
# ------------------------------------------------------------------ rollout/{field} (Megatron side)
KEYS.update({
    "rollout/rewards": alias("rl_normalized_reward", note="after group normalisation"),
    # the raw task reward of the step (Miles lab ranges: "the mean reward of the step"), before
    # group normalisation: the same meaning as veRL critic/score, so the same series
    "rollout/raw_reward": alias("rl_score", note="the raw task reward of the step, before normalisation"),
    "rollout/response_lengths": alias("rl_response_length_tokens"),
    "rollout/total_lengths": alias("rl_sequence_length_tokens"),
    "rollout/truncated": alias("rl_response_truncated_ratio"),
    "rollout/round_number": alias("rl_turns"),
    "rollout/entropy": alias("rl_entropy", note="rollout-data entropy, per-rollout mean"),
    "rollout/advantages": alias("rl_advantage"),
    "rollout/returns": alias("rl_return"),
    "rollout/values": alias("rl_value"),
    # the KL slime folds into the reward (--kl-coef), before the coefficient: veRL's in-reward
    # KL (actor/reward_kl_penalty), not train/kl_loss (the loss term, rl_reference_kl)
    "rollout/kl": alias("rl_reward_kl_penalty", note="log_probs - ref_log_probs, per-rollout mean, "
                        "before --kl-coef"),
})
# rollout/log_probs is compute_log_prob before the update (slime actor.py:363): pi_old
for _f, _model in (("log_probs", "old"), ("ref_log_probs", "reference"),
                  ("rollout_log_probs", "rollout"), ("teacher_log_probs", "teacher")):
    KEYS[f"rollout/{_f}"] = alias("rl_token_logprob", policy=_model, note="per-rollout mean")
KEYS["rollout/opd_reverse_kl"] = alias("rl_distillation_divergence", note="per-rollout mean")
KEYS["rollout/correct_entropy"] = alias("rl_correct_response_entropy")
KEYS["rollout/top_p_kept_vocab_per_token"] = alias("rl_top_p_kept_vocab_tokens")

# ------------------------------------------------------------------ perf/*
KEYS.update({
    "perf/step_time": alias("rl_step_duration_seconds", note="train_wait + train"),
    "perf/tokens_per_gpu_per_sec": alias("rl_gpu_throughput_tokens_per_second", phase="rollout"),
    "perf/effective_tokens_per_gpu_per_sec": alias("rl_rollout_throughput_tokens_per_second",
                                                   sample="all", effective="true"),
    "perf/non_generation_time": alias("rl_rollout_non_generation_seconds"),  # /mean|median|max|min
    "perf/log_probs_tflops": alias("rl_achieved_flops_per_second", scale=1e12, phase="log_probs"),
    "perf/ref_log_probs_tflops": alias("rl_achieved_flops_per_second", scale=1e12,
                                       phase="ref_log_probs"),
    "perf/actor_train_tflops": alias("rl_achieved_flops_per_second", scale=1e12, phase="actor_train"),
    "perf/actor_train_tok_per_s": alias("rl_throughput_tokens_per_second", phase="actor_train"),
    # train_wait / (train_wait + train) (observability/train_metric_utils.py:399): in a
    # synchronous colocated run train_wait is the rollout itself, so no idle share
    "perf/wait_time_ratio": alias("rl_train_wait_ratio", note="train_wait_time / step_time"),
    "perf/update_weights_wire_bytes": alias("rl_weight_sync_bytes"),
    "perf/update_weights_density": alias("rl_weight_sync_density"),
})
for _eff in ("", "effective_"):
    _e = "true" if _eff else "false"
    KEYS[f"perf/longest_{_eff}sample_tokens_per_sec"] = alias(
        "rl_rollout_throughput_tokens_per_second", sample="longest", effective=_e)
    KEYS[f"perf/longest_{_eff}sample_tokens_per_sec_without_non_generation"] = alias(
        "rl_rollout_throughput_tokens_per_second", sample="longest", effective=_e,
        generation="only")
    # ends in _time but is not a trainer phase: keep it out of the perf/{timer}_time family
    KEYS[f"perf/longest_{_eff}sample_non_generation_time"] = alias(
        "rl_rollout_non_generation_seconds", sample="longest", effective=_e)

# ------------------------------------------------------------------ multi_turn/* (--log-multi-turn)
_MT = "multi_turn/"
for _stat in ("mean", "max", "min"):
    KEYS[f"{_MT}raw_response_length/response_length_{_stat}"] = alias(
        "rl_response_length_tokens", subset="with_observations", stat=_stat,
        note="includes tool/observation tokens")
    KEYS[f"{_MT}wo_obs_response_length/response_length_{_stat}"] = alias(
        "rl_response_length_tokens", subset="without_observations", stat=_stat)
    KEYS[f"{_MT}multi_turn_metric/round_number_{_stat}"] = alias("rl_turns", stat=_stat)
KEYS[f"{_MT}raw_response_length/response_length_clip_ratio"] = alias(
    "rl_response_truncated_ratio", subset="with_observations")

# ------------------------------------------------------------------ eval/*
KEYS.update(config_keys())  # the Megatron argument table printed at start-up
KEYS["eval/step"] = alias("rl_step_counter", counter="eval")

# SGLang request fields (PD fields only with prefill/decode disaggregation).
_STATS = r"/(?P<stat>mean|median|max|min)$"
_DURATION = (r"^perf/(?P<phase>prefill|decode)/(?P<step>bootstrap_queue|bootstrap|alloc_wait|forward|"
             r"transfer_queue|transfer|prealloc)_duration" + _STATS)

PATTERNS = [
    # train/: lr and MTP first, since `lr-pg_0` would otherwise read as role "lr".
    # logged after train_one_step stepped opt_param_scheduler: the LR of the next update
    pattern(r"^train/(?:actor-)?lr-pg_(?P<param_group>\d+)$", "rl_next_learning_rate",
            role="policy"),
    pattern(r"^train/critic-lr-pg_(?P<param_group>\d+)$", "rl_next_learning_rate", role="critic"),
    pattern(r"^train/(?:(?P<role>[a-z_]+)-)?mtp_(?P<layer>\d+)_loss$", "rl_mtp_loss"),
    # anything else (custom loss terms under a role prefix) has no meaning we can name: fallback.
    # rollout/
    pattern(r"^rollout/zero_std/count_(?P<reward>.+)$", "rl_tied_groups"),
    pattern(r"^rollout/error_cat/(?P<category>.+)$", "rl_reward_category_ratio"),
    pattern(r"^rollout/dynamic_filter/drop_(?P<reason>.+)$", "rl_dynamic_filter_dropped"),
    pattern(r"^rollout/correct_length/p(?P<pct>\d+)$", "rl_response_length_tokens",
            subset="correct", stat="p{pct}"),
    # perf/
    pattern(_DURATION, "rl_inference_request_duration_seconds"),
    pattern(r"^perf/request/(?P<step>e2e_latency|queue_time)" + _STATS,
            "rl_inference_request_duration_seconds", phase="request"),
    pattern(r"^perf/decode/throughput" + _STATS, "rl_inference_decode_throughput_tokens_per_second"),
    pattern(r"^perf/prefill/transfer_speed_gb_s" + _STATS, "rl_inference_kv_transfer_bytes_per_second",
            scale=1e9),
    pattern(r"^perf/prefill/transfer_total_mb" + _STATS, "rl_inference_kv_transfer_bytes", scale=1e6),
    pattern(r"^perf/prefill/retry_count" + _STATS, "rl_inference_kv_transfer_retries"),
    pattern(r"^perf/(?P<phase>[^/]+)_time$", "rl_phase_duration_seconds"),
    # passrate/
    pattern(r"^passrate/pass@(?P<k>\d+)$", "rl_pass_at_k_ratio"),
    # eval/: suffixed forms before the bare dataset
    pattern(r"^eval/(?P<data_source>.+)-pass@(?P<k>\d+)$", "rl_validation_pass_at_k_ratio"),
    pattern(r"^eval/(?P<data_source>.+)-truncated_ratio$", "rl_validation_response_truncated_ratio"),
    pattern(r"^eval/(?P<data_source>[^/]+)/response_len(?:/(?P<stat>mean|median|max|min))?$",
            "rl_validation_response_length_tokens"),
    # sum(rewards) / len(rewards) (observability/rollout_metrics.py:232): the reward's own scale
    pattern(r"^eval/(?P<data_source>[^/]+)$", "rl_validation_score", var="reward"),
]

IGNORED: dict[str, str] = {}

FALLBACK = [
    (re.compile(r"^eval/[^/]+/(?!response_len(?:/(?:mean|median|max|min))?$).+$"),
     "a per-dataset evaluation statistic with no per-dataset canonical metric"),
    (re.compile(r"^train/[a-z_]+-[^/]+$"),
     "a term a custom loss reports under a role prefix; its meaning is the user's"),
]

VOCABULARY = Vocabulary(
    name="slime", title="slime", keys=KEYS, patterns=PATTERNS, ignored=IGNORED,
    fallback_patterns=FALLBACK,
    step_keys=("train/step",),
    doc="Console `step N: {dict}` / `perf N: {dict}` / `eval N: {dict}` lines (Python dict reprs); "
        "W&B and TensorBoard carry the same keys.",
)
