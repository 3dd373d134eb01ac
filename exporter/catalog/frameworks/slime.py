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
from ..metrics import SPLIT, STAT
from ..model import GAUGE, MAX, MEAN, SUM, Metric, Vocabulary, alias, pattern

METRICS = [
    Metric("rl_step_counter", GAUGE, "{step}",
           "slime/Miles step counters other than the training step: counter=rollout (rollout/step, "
           "the rollout id) and counter=eval (eval/step). Compare with rl_training_step.",
           (STAT, SPLIT, "counter"), MAX, group="run"),
    Metric("rl_train_stat", GAUGE, "1",
           "slime/Miles train/{role}-{key} values with no canonical metric (e.g. custom loss terms "
           "reported by a --custom-loss-function); `quantity` is the raw key.",
           (STAT, SPLIT, "role", "quantity"), MEAN, group="policy"),
    Metric("rl_mismatch_correction", GAUGE, "1",
           "slime/Miles train/inference mismatch corrections: ois (untruncated IS weight), "
           "tis_clipfrac, tis_abs, opsm_clipfrac (off-policy sequence masking).",
           (STAT, SPLIT, "quantity"), MEAN, group="consistency"),
    Metric("rl_rollout_stat", GAUGE, "1",
           "slime/Miles per-rollout means of Megatron rollout-data fields with no canonical metric "
           "(rollout/log_probs, ref_log_probs, rollout_log_probs, teacher_log_probs, opd_reverse_kl, "
           "correct_entropy, top_p_kept_vocab_per_token).",
           (STAT, SPLIT, "quantity"), MEAN, group="rollout"),
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
           "slime/Miles rollout throughput variants: quantity=effective_per_gpu "
           "(perf/effective_tokens_per_gpu_per_sec) and the longest sample's rates "
           "(perf/longest_{,effective_}sample_tokens_per_sec[_without_non_generation]).",
           (STAT, SPLIT, "quantity"), MEAN, group="throughput"),
    Metric("rl_rollout_non_generation_seconds", GAUGE, "s",
           "Time a rollout sample spent outside generation (tools, reward, queueing): "
           "slime perf/non_generation_time/{mean,median,max,min} over samples; quantity=longest_sample"
           "|longest_effective_sample for the longest one.", (STAT, SPLIT, "quantity"), MEAN,
           group="timing"),
    Metric("rl_inference_request_stat", GAUGE, "1",
           "SGLang per-request statistics collected by slime (perf/request/*, perf/decode/*, "
           "perf/prefill/*): seconds for *_duration, e2e_latency and queue_time, tokens/s for "
           "decode/throughput, GB/s, MB and counts for the prefill transfer fields. `quantity` is "
           "the key path, e.g. request/e2e_latency.", (STAT, SPLIT, "quantity"), MEAN,
           group="rollout"),
    Metric("rl_weight_sync_bytes", GAUGE, "By",
           "Bytes sent on the wire by the last weight update to the engines "
           "(slime perf/update_weights_wire_bytes).", (STAT, SPLIT), MAX, group="timing"),
    Metric("rl_weight_sync_density", GAUGE, "1",
           "Density of the last weight update as slime reports it (perf/update_weights_density).",
           (STAT, SPLIT), MEAN, group="timing"),
    Metric("rl_validation_sample_stat", GAUGE, "1",
           "Per-dataset evaluation sample statistics (slime/Miles eval/{dataset}/{stat key}, "
           "eval/{dataset}-truncated_ratio, Miles eval/{dataset}-none_reward_ratio); `quantity` is "
           "the key after the dataset, e.g. response_len.", (STAT, SPLIT, "data_source", "quantity"),
           MEAN, group="validation"),
]

GB = 2.0 ** 30

# ------------------------------------------------------------------ train/* (one dict per step)
_TRAIN = {
    "loss": alias("rl_loss"),
    "pg_loss": alias("rl_policy_loss"),
    "entropy_loss": alias("rl_entropy_loss"),
    "pg_clipfrac": alias("rl_policy_clip_ratio"),
    "ppo_kl": alias("rl_policy_kl"),
    "kl_loss": alias("rl_kl_loss"),
    "train_rollout_logprob_abs_diff": alias("rl_train_inference_logprob_abs_diff"),
    "tis": alias("rl_rollout_importance_weight", note="mean truncated IS weight (--use-tis)"),
    "ois": alias("rl_mismatch_correction", quantity="ois"),
    "tis_clipfrac": alias("rl_mismatch_correction", quantity="tis_clipfrac"),
    "tis_abs": alias("rl_mismatch_correction", quantity="tis_abs"),
    "opsm_clipfrac": alias("rl_mismatch_correction", quantity="opsm_clipfrac"),
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
    "train/critic-value_loss": alias("rl_value_loss"),
    "train/critic-value_clipfrac": alias("rl_value_clip_ratio"),
    "train/critic-grad_norm": alias("rl_critic_grad_norm"),
    # value keys without the role prefix (single-role runs)
    "train/value_loss": alias("rl_value_loss"),
    "train/value_clipfrac": alias("rl_value_clip_ratio"),
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
    "rollout/rewards": alias("rl_reward", note="reward after normalisation/shaping"),
    "rollout/raw_reward": alias("rl_score", note="raw reward-model / verifier score"),
    "rollout/response_lengths": alias("rl_response_length_tokens"),
    "rollout/total_lengths": alias("rl_sequence_length_tokens"),
    "rollout/truncated": alias("rl_response_truncated_ratio"),
    "rollout/round_number": alias("rl_turns"),
    "rollout/entropy": alias("rl_entropy", note="rollout-data entropy, per-rollout mean"),
    "rollout/advantages": alias("rl_advantage"),
    "rollout/returns": alias("rl_return"),
    "rollout/values": alias("rl_value"),
    "rollout/kl": alias("rl_reference_kl", note="log_probs - ref_log_probs, per-rollout mean"),
})
for _f in ("log_probs", "ref_log_probs", "rollout_log_probs", "teacher_log_probs", "opd_reverse_kl",
           "correct_entropy", "top_p_kept_vocab_per_token"):
    KEYS[f"rollout/{_f}"] = alias("rl_rollout_stat", quantity=_f)

# ------------------------------------------------------------------ perf/*
KEYS.update({
    "perf/step_time": alias("rl_step_duration_seconds", note="train_wait + train"),
    "perf/tokens_per_gpu_per_sec": alias("rl_gpu_throughput_tokens_per_second", phase="rollout"),
    "perf/effective_tokens_per_gpu_per_sec": alias("rl_rollout_throughput_tokens_per_second",
                                                   quantity="effective_per_gpu"),
    "perf/non_generation_time": alias("rl_rollout_non_generation_seconds"),  # /mean|median|max|min
    "perf/log_probs_tflops": alias("rl_achieved_flops_per_second", scale=1e12, phase="log_probs"),
    "perf/ref_log_probs_tflops": alias("rl_achieved_flops_per_second", scale=1e12,
                                       phase="ref_log_probs"),
    "perf/actor_train_tflops": alias("rl_achieved_flops_per_second", scale=1e12, phase="actor_train"),
    "perf/actor_train_tok_per_s": alias("rl_throughput_tokens_per_second", phase="actor_train"),
    "perf/wait_time_ratio": alias("rl_trainer_idle_ratio", note="train_wait_time / step_time"),
    "perf/update_weights_wire_bytes": alias("rl_weight_sync_bytes"),
    "perf/update_weights_density": alias("rl_weight_sync_density"),
})
for _eff in ("", "effective_"):
    KEYS[f"perf/longest_{_eff}sample_tokens_per_sec"] = alias(
        "rl_rollout_throughput_tokens_per_second", quantity=f"longest_{_eff}sample")
    KEYS[f"perf/longest_{_eff}sample_tokens_per_sec_without_non_generation"] = alias(
        "rl_rollout_throughput_tokens_per_second",
        quantity=f"longest_{_eff}sample_without_non_generation")
    # ends in _time but is not a trainer phase: keep it out of the perf/{timer}_time family
    KEYS[f"perf/longest_{_eff}sample_non_generation_time"] = alias(
        "rl_rollout_non_generation_seconds", quantity=f"longest_{_eff}sample")

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
KEYS["eval/step"] = alias("rl_step_counter", counter="eval")

# SGLang request fields (PD fields only with prefill/decode disaggregation).
_SGLANG = (r"request/(?:e2e_latency|queue_time)|decode/throughput"
           r"|prefill/(?:bootstrap_queue_duration|bootstrap_duration|alloc_wait_duration|"
           r"forward_duration|transfer_queue_duration|transfer_speed_gb_s|transfer_total_mb|"
           r"retry_count)"
           r"|decode/(?:prealloc_duration|bootstrap_duration|alloc_wait_duration|"
           r"transfer_duration|forward_duration)")

PATTERNS = [
    # train/: lr and MTP first, since `lr-pg_0` would otherwise read as role "lr".
    pattern(r"^train/(?:actor-)?lr-pg_(?P<param_group>\d+)$", "rl_learning_rate"),
    pattern(r"^train/critic-lr-pg_(?P<param_group>\d+)$", "rl_critic_learning_rate",
            note="param_group is not a label of rl_critic_learning_rate; groups share one series"),
    pattern(r"^train/(?:(?P<role>[a-z_]+)-)?mtp_(?P<layer>\d+)_loss$", "rl_mtp_loss"),
    # anything else a (custom) loss reports under a role prefix. Unprefixed unknown train/ keys
    # are left to the fallback: posttrain and veRL's SFT trainer use train/ too.
    pattern(r"^train/(?P<role>[a-z_]+)-(?P<quantity>[^/]+)$", "rl_train_stat"),
    # rollout/
    pattern(r"^rollout/zero_std/count_(?P<reward>.+)$", "rl_tied_groups"),
    pattern(r"^rollout/error_cat/(?P<category>.+)$", "rl_reward_category_ratio"),
    pattern(r"^rollout/dynamic_filter/drop_(?P<reason>.+)$", "rl_dynamic_filter_dropped"),
    pattern(r"^rollout/correct_length/p(?P<pct>\d+)$", "rl_response_length_tokens",
            subset="correct", stat="p{pct}"),
    # perf/
    pattern(r"^perf/(?P<quantity>" + _SGLANG + r")/(?P<stat>mean|median|max|min)$",
            "rl_inference_request_stat"),
    pattern(r"^perf/(?P<phase>[^/]+)_time$", "rl_phase_duration_seconds"),
    # passrate/
    pattern(r"^passrate/pass@(?P<k>\d+)$", "rl_pass_at_k_ratio"),
    # eval/: suffixed forms before the bare dataset
    pattern(r"^eval/(?P<data_source>.+)-pass@(?P<k>\d+)$", "rl_validation_pass_at_k_ratio"),
    pattern(r"^eval/(?P<data_source>.+)-(?P<quantity>truncated_ratio)$", "rl_validation_sample_stat"),
    pattern(r"^eval/(?P<data_source>[^/]+)/(?P<quantity>.+?)(?:/(?P<stat>mean|median|max|min))?$",
            "rl_validation_sample_stat"),
    pattern(r"^eval/(?P<data_source>[^/]+)$", "rl_validation_score"),
]

IGNORED: dict[str, str] = {}

VOCABULARY = Vocabulary(
    name="slime", title="slime", keys=KEYS, patterns=PATTERNS, ignored=IGNORED,
    step_keys=("train/step",),
    doc="Console `step N: {dict}` / `perf N: {dict}` / `eval N: {dict}` lines (Python dict reprs); "
        "W&B and TensorBoard carry the same keys.",
)
