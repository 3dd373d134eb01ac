"""carbonteq-ai/posttrain (42da687): its canonical names over TRL and veRL backends.

Not the posttrain of seed 000 (that one is the `posttrain` vocabulary). carbonteq's
`normalize_grpo_metrics` renames TRL GRPO / veRL keys to `train/rl/*`,
`train/{grad_norm,learning_rate,step_time_seconds,num_tokens}` and
`serve/backend/*`; for non-GRPO TRL trainers its TrainerCallback forwards every
numeric log key as `train/{key}` and `eval_{key}` as `train/validation/{key}`.
Those forwarded keys reuse the TRL vocabulary (same alias, split="eval" for
validation) so a DPO run through posttrain lands on the same series as plain TRL.

Where carbonteq folds two native keys into one name, the TRL meaning wins (its
GRPO path is the primary one) and the note says what the veRL source means.
"""
import re
from dataclasses import replace

from . import trl as _trl
from ..metrics import SPLIT, STAT
from ..model import GAUGE, MAX, MEAN, SUM, Metric, Pattern, Vocabulary, alias

METRICS = [
    Metric("rl_rollouts", GAUGE, "{rollout}",
           "Rollouts this step by outcome (posttrain-carbonteq train/rl/rollouts_{outcome}: "
           "attempted, completed, failed, truncated, unscorable).", (STAT, SPLIT, "outcome"), SUM,
           group="rollout"),
    Metric("rl_speculative_drafts", GAUGE, "{draft}",
           "Speculative-decoding drafts proposed by the serving backend (serve/backend/speculative_drafts).",
           (STAT, SPLIT), SUM, group="rollout"),
    Metric("rl_speculative_tokens", GAUGE, "{token}",
           "Speculative-decoding tokens by kind=draft|accepted (serve/backend/speculative_*_tokens).",
           (STAT, SPLIT, "kind"), SUM, group="rollout"),
    Metric("rl_kv_cache_capacity_tokens", GAUGE, "{token}",
           "KV-cache capacity of the serving backend (serve/backend/kv_cache_capacity_tokens).",
           (STAT, SPLIT), MAX, group="rollout"),
    Metric("rl_kv_cache_peak_usage_ratio", GAUGE, "1",
           "Peak fraction of the KV cache in use (serve/backend/kv_cache_peak_usage_ratio). "
           "Near 1: requests queue or get preempted.", (STAT, SPLIT), MAX, group="rollout"),
]

K = {
    # ---- reward and groups
    "train/rl/reward_mean": alias("rl_reward", agg=MEAN),
    "train/rl/reward_std": alias("rl_reward", stat="std"),
    "train/rl/group_zero_variance_fraction": alias("rl_group_zero_std_ratio"),
    # ---- policy
    "train/rl/policy_loss": alias("rl_policy_loss", agg=MEAN,
                                  note="from TRL policy_loss, or TRL `loss` when no policy_loss; veRL actor/pg_loss"),
    "train/rl/entropy": alias("rl_entropy", agg=MEAN),
    "train/rl/clip_fraction": alias("rl_policy_clip_ratio", agg=MEAN),
    "train/rl/clip_fraction_low": alias("rl_policy_clip_ratio", bound="low", agg=MEAN),
    "train/rl/clip_fraction_high": alias("rl_policy_clip_ratio", bound="high", agg=MEAN),
    "train/grad_norm": alias("rl_grad_norm"),
    "train/learning_rate": alias("rl_learning_rate"),
    "train/step_time_seconds": alias("rl_step_duration_seconds"),
    # ---- rollouts
    **{f"train/rl/rollouts_{o}": alias("rl_rollouts", outcome=o)
       for o in ("attempted", "completed", "failed", "truncated", "unscorable")},
    "train/rl/completion_tokens_total": alias("rl_response_length_tokens", stat="sum", agg=SUM,
                                              note="sum of completion lengths in the step"),
    "train/rl/completion_tokens_mean": alias("rl_response_length_tokens", agg=MEAN),
    "train/rl/completion_tokens_max": alias("rl_response_length_tokens", stat="max"),
    "train/rl/completion_truncation_rate": alias("rl_response_truncated_ratio", agg=MEAN),
    "train/rl/rollout_tokens_per_second": alias("rl_throughput_tokens_per_second", phase="rollout",
                                                note="completion_tokens_total / time/rollout_seconds"),
    # ---- tools
    "train/rl/tool_call_frequency": alias("rl_tool_calls", agg=MEAN,
                                          note="TRL tools/call_frequency: calls per completion (carbonteq "
                                               "validates it as 0..1)"),
    "train/rl/tool_failure_frequency": alias("rl_tool_call_failure_ratio"),
    # ---- train/inference consistency (vLLM IS correction)
    "train/rl/sampling_logp_delta_mean": alias("rl_train_inference_logprob_abs_diff", agg=MEAN),
    "train/rl/sampling_logp_delta_max": alias("rl_train_inference_logprob_abs_diff", stat="max"),
    "train/rl/importance_sampling_ratio_mean": alias("rl_rollout_importance_weight"),
    "train/rl/importance_sampling_ratio_min": alias("rl_rollout_importance_weight", stat="min"),
    "train/rl/importance_sampling_ratio_max": alias("rl_rollout_importance_weight", stat="max"),
    "train/rl/importance_sampling_ratio_clamped_fraction": alias("rl_rollout_importance_weight_clamped_ratio"),
    # ---- async staleness (from veRL training/off_policy/*)
    "train/rl/policy_staleness_mean": alias("rl_sample_staleness_steps", agg=MEAN),
    "train/rl/policy_staleness_max": alias("rl_sample_staleness_steps", stat="max"),
    "train/rl/trajectory_version_span_mean": alias("rl_trajectory_version_span"),
    # ---- serving backend
    "serve/backend/speculative_drafts": alias("rl_speculative_drafts"),
    "serve/backend/speculative_draft_tokens": alias("rl_speculative_tokens", kind="draft"),
    "serve/backend/speculative_accepted_tokens": alias("rl_speculative_tokens", kind="accepted"),
    "serve/backend/speculative_acceptance_rate": alias("rl_speculative_accept_ratio"),
    "serve/backend/speculative_accepted_length": alias("rl_speculative_accept_length_tokens"),
    "serve/backend/kv_cache_capacity_tokens": alias("rl_kv_cache_capacity_tokens"),
    "serve/backend/kv_cache_peak_usage_ratio": alias("rl_kv_cache_peak_usage_ratio"),
}

# train/rl/time/{phase}_seconds: rollout, reward, actor_forward, actor_update, weight_sync, checkpoint
P = [Pattern(re.compile(r"^train/rl/time/(?P<phase>.+)_seconds$"),
             alias("rl_phase_duration_seconds"))]


# ---- non-GRPO TRL trainers forwarded by the callback: train/{key} and train/validation/{key}
def _as_eval(a):
    """The TRL alias with split="eval" (or unchanged for keys that are held-out already)."""
    from .. import metrics as _m
    metric = next((m for m in _m.METRICS + _trl.METRICS if m.name == a.metric), None)
    if metric is None or "split" not in metric.labels:
        return None
    return replace(a, labels=tuple(sorted(dict(a.labels, split="eval").items())))


# HF eval_loss -> train/validation/loss etc. first: their own meaning beats "eval copy of loss".
for _k, _a in _trl.K.items():
    if _k.startswith("eval_"):
        K.setdefault(f"train/validation/{_k[len('eval_'):]}", _a)
for _k, _a in _trl.K.items():
    if _k.startswith("eval_"):
        continue
    K.setdefault(f"train/{_k}", _a)
    _e = _as_eval(_a)
    if _e is not None:
        K.setdefault(f"train/validation/{_k}", _e)
for _p in _trl.P:
    _body = _p.regex.pattern.lstrip("^")
    if _as_eval(_p.alias) is not None:
        P.append(Pattern(re.compile("^train/validation/" + _body), _as_eval(_p.alias)))
    P.append(Pattern(re.compile("^train/" + _body), _p.alias))

VOCABULARY = Vocabulary(
    name="posttrain_carbonteq", title="posttrain (carbonteq-ai)", keys=K, patterns=P,
    ignored={f"train/validation/{k[len('eval_'):]}": why for k, why in _trl.VOCABULARY.ignored.items()
             if k.startswith("eval_")},
    fallback_patterns=[
        (re.compile(r"^train/rl/kl$"),
         "carbonteq folds TRL kl (to the reference) and veRL actor/ppo_kl (old vs current policy) "
         "into this one name, so it has no single meaning"),
        (re.compile(r"^train/num_tokens$"),
         "TRL num_tokens (cumulative) or veRL perf/total_num_tokens (one step's) by backend "
         "(grpo_observations.py:103,149): no single meaning, so no counter"),
    ],
    step_keys=("step",),
    doc="Records normalised by carbonteq-ai/posttrain; its veRL ingest reads verl-metrics.jsonl "
        "lines {step, data}.",
)
