"""Miles (radixark/miles), a slime fork: slime's keys plus Miles' own.

The slime vocabulary is copied in (same key families, same meanings) and Miles' additions are
layered on top: loss_hub keys (train/ess_ratio, train/train_rollout_kl), async weight-version
statistics, zero_std percentages, TITO mismatch rates, MFU and host-memory perf keys and the
extra eval keys. Miles' own patterns go first so that, e.g., eval/skipped_{reason} is not read
as an eval dataset. Miles' Prometheus backend (miles_metric_*) re-exports the same keys; this
vocabulary reads the raw keys.
"""
import re

from ..metrics import SPLIT, STAT
from ..model import GAUGE, LAST, MAX, MEAN, SUM, Metric, Vocabulary, alias, pattern
from . import slime

METRICS = [
    Metric("rl_policy_ratio_ess", GAUGE, "1",
           "Effective sample size ratio of the PPO update's importance weights pi_new / pi_old "
           "(Miles train/ess_ratio). The same as rl_importance_ess_ratio (weights pi_old / "
           "pi_rollout) only where pi_old is the rollout's log-probs (--use-rollout-logprobs).",
           (STAT, SPLIT), MEAN, group="consistency"),
    Metric("rl_sample_weight_version", GAUGE, "{version}",
           "Weight version of the policy that generated the step's samples (Miles "
           "rollout/weight_version/{mean,median,max,min}). Compare with rl_training_step for the lag.",
           (STAT, SPLIT), MEAN, group="async"),
    Metric("rl_mixed_version_sample_ratio", GAUGE, "1",
           "Fraction of samples generated across more than one weight version (Miles "
           "rollout/weight_version/mixed_version_ratio).", (STAT, SPLIT), MEAN, group="async"),
    Metric("rl_group_outcome_ratio", GAUGE, "1",
           "Fraction of prompt groups with a tied outcome: outcome=all_zero|all_one (Miles "
           "rollout/zero_std/all_zero_percentage|all_one_percentage, percent scaled to 0..1).",
           (STAT, SPLIT, "outcome"), MEAN, group="groups"),
    Metric("rl_tito_session_mismatch_ratio", GAUGE, "1",
           "Miles token-in/token-out session mismatch rate per server version and mismatch type "
           "(rollout/tito_session_mismatch_rate/{server_version}[/{type}]).",
           (STAT, SPLIT, "server_version", "type"), MEAN, group="consistency"),
    Metric("rl_host_memory_bytes", GAUGE, "By",
           "Miles host-memory figures other than `used` (perf/cpu_memory_{kind}_gb); "
           "used memory is rl_host_memory_used_bytes.", (STAT, SPLIT, "kind"), MAX, group="memory"),
    Metric("rl_peak_flops_per_second", GAUGE, "FLOP/s",
           "Peak dense FLOP/s of one training GPU used as the MFU denominator (Miles "
           "perf/mfu_peak_tflops, --mfu-peak-tflops or a built-in table).", (STAT, SPLIT), LAST,
           group="throughput"),
    Metric("rl_validation_none_reward_ratio", GAUGE, "1",
           "Fraction of evaluation samples of a dataset whose reward came back None (Miles "
           "eval/{dataset}-none_reward_ratio).", (STAT, SPLIT, "data_source"), MEAN,
           group="validation"),
    Metric("rl_eval_skipped", GAUGE, "1",
           "Evaluation samples skipped per reason (Miles eval/skipped_{reason}).",
           (STAT, SPLIT, "reason"), SUM, group="validation"),
    Metric("rl_episode_response_length_tokens", GAUGE, "{token}",
           "Response tokens per original rollout (episode), summed over the training samples "
           "compaction split it into: unlabelled, the trainable (loss-masked) model-output tokens "
           "with shared prefixes counted once (Miles rollout/episode_response_length/*); "
           "tokens=all, masked plus unmasked tokens of every sample, shared prefixes counted each "
           "time (rollout/episode_total_response_length/mean).", (STAT, SPLIT, "tokens"), MEAN,
           group="length"),
    Metric("rl_eval_lag_steps", GAUGE, "{step}",
           "How many training steps late an evaluation on a dedicated fleet finished (Miles "
           "eval/lag_steps).", (STAT, SPLIT), MAX, group="validation"),
]

GB = 2.0 ** 30  # psutil bytes / 1024**3, as in slime/veRL

KEYS = dict(slime.KEYS)
_TRAIN_EXTRA = {
    # miles/backends/training_utils/loss_hub/losses.py:113,303-308: entropy_loss is
    # new_zeros(()) unless --entropy-coef != 0 or --observe-training-entropy; then the entropy.
    # The 0 placeholder is dropped by the Miles integration (exporter/integrations/miles.py);
    # read from a log it stays 0, which RLEntropyCollapse's relative test never fires on
    "entropy_loss": alias("rl_entropy", phase="update",
                          note="the entropy itself; 0 when neither --entropy-coef nor "
                               "--observe-training-entropy is set (not computed)"),
    # ESS of w = pi_new / pi_old = exp(-ppo_kl) (loss_hub/losses.py:286-289,368): the PPO
    # update's ratio, not veRL's rollout-correction weights pi_old / pi_rollout
    "ess_ratio": alias("rl_policy_ratio_ess"),
    "train_rollout_kl": alias("rl_train_inference_kl", estimator="k3"),
}
for _k, _a in _TRAIN_EXTRA.items():
    KEYS[f"train/{_k}"] = _a
    KEYS[f"train/actor-{_k}"] = _a

KEYS.update({
    # async: the weight version of the samples (statistics resolve through the base key)
    "rollout/weight_version": alias("rl_sample_weight_version"),
    "rollout/weight_version/mixed_version_ratio": alias("rl_mixed_version_sample_ratio"),
    "rollout/zero_std/all_zero_percentage": alias("rl_group_outcome_ratio", scale=0.01,
                                                  outcome="all_zero"),
    "rollout/zero_std/all_one_percentage": alias("rl_group_outcome_ratio", scale=0.01,
                                                 outcome="all_one"),
    # compaction-aware rollout metrics (miles/ray/rollout/metrics.py, PRs #2710 and #2765)
    "rollout/num_training_samples": alias("rl_responses", subset="rollout", agg=SUM,
                                          note="training rows of the rollout step, compaction "
                                               "fragments included"),
    # the terminal reward of each original rollout (its compaction fragments averaged first),
    # rollouts weighted equally; equals rollout/raw_reward when every rollout is one sample
    "rollout/episode_raw_reward": alias("rl_episode_reward"),
    "rollout/episode_response_length": alias("rl_episode_response_length_tokens"),
    "rollout/episode_total_response_length": alias("rl_episode_response_length_tokens",
                                                   tokens="all"),
    # perf
    "perf/mfu_peak_tflops": alias("rl_peak_flops_per_second", scale=1e12),
    "perf/actor_train_mfu": alias("rl_mfu_ratio", role="actor", phase="train", source="framework",
                                  note="0..1; actor_train_tflops / peak"),
    "perf/cpu_memory_used_gb": alias("rl_host_memory_used_bytes", scale=GB),
    # eval
    "eval/lag_steps": alias("rl_eval_lag_steps"),
})

PATTERNS = [
    pattern(r"^rollout/tito_session_mismatch_rate/(?P<server_version>[^/]+)(?:/(?P<type>.+))?$",
            "rl_tito_session_mismatch_ratio"),
    pattern(r"^perf/cpu_memory_(?P<kind>.+)_gb$", "rl_host_memory_bytes", scale=GB),
    pattern(r"^eval/(?P<data_source>.+)-none_reward_ratio$", "rl_validation_none_reward_ratio"),
    pattern(r"^eval/skipped_(?P<reason>.+)$", "rl_eval_skipped"),
] + list(slime.PATTERNS)

IGNORED = dict(slime.IGNORED)

VOCABULARY = Vocabulary(
    name="miles", title="Miles", keys=KEYS, patterns=PATTERNS, ignored=IGNORED,
    fallback_patterns=list(slime.FALLBACK) + [
        (re.compile(r"^perf/fully_async/"), "fully-async queue bookkeeping"),
    ],
    step_keys=("train/step",),
    doc="Console `[ts process] file:line - step N: {dict}`, the JSONL MetricEvent `metrics` object "
        "(--save-debug-event-data), W&B/TensorBoard/MLflow; keys as in slime plus Miles' own.",
)
