"""ms-swift (modelscope/ms-swift 3.x - 4.x): GRPO/PPO/DPO/KTO/GKD on HF Trainer subclasses.

Its RLHF trainers subclass TRL's, so TRL's keys (completions/*, rewards/{func}/mean|std,
clip_ratio/*, kl, frac_reward_zero_std, DPO rewards/logps/logits ...) mean the same here and
are copied in. ms-swift adds its own progress keys on every log line (swift/trainers/patcher.py,
earlier callback.py; Megatron: megatron/callbacks/print.py):

- `global_step/max_steps` is a string "2/4389": the step is the part before the slash;
- `train_speed(iter/s)` (before 4.0) or `train_speed(s/it)` (4.x) over the run so far;
- `memory(GiB)` the peak torch memory reserved on this device;
- `elapsed_time`, `remaining_time`, `percentage` are human-readable strings.

Keys of GRPO variants that have no canonical meaning (FIPO, SDAR, RLSD internals, per-channel
losses) stay on the bounded fallback, on purpose. Framework name: `swift` (the command users
run); `ms-swift` is accepted too.
"""
import re

from . import trl as _trl
from ..metrics import SPLIT, STAT
from ..model import GAUGE, LAST, MEAN, Metric, Vocabulary, alias, pattern

GIB = 2.0 ** 30

METRICS = [
    Metric("rl_average_step_duration_seconds", GAUGE, "s",
           "Wall time per optimizer step averaged over the run so far (ms-swift train_speed(s/it)); "
           "the last step's own time is rl_step_duration_seconds (step_time).", (STAT, SPLIT), LAST,
           group="timing"),
    Metric("rl_sequence_accuracy_ratio", GAUGE, "1",
           "Fraction of sequences whose every target token is the model's argmax prediction "
           "(ms-swift seq_acc with --acc_strategy seq); the per-token value is "
           "rl_token_accuracy_ratio.", (STAT, SPLIT), MEAN, group="preference"),
]

K = dict(_trl.K)
K.update({
    "train_speed(iter/s)": alias("rl_trainer_steps_per_second", phase="train",
                                 note="optimizer steps per second over the run so far"),
    "train_speed(s/it)": alias("rl_average_step_duration_seconds",
                               note="4.x: seconds per optimizer step, averaged over the run so far"),
    "memory(GiB)": alias("rl_gpu_memory_peak_bytes", scale=GIB, kind="reserved",
                         note="peak torch memory reserved on this device"),
    "completion_length": alias("rl_response_length_tokens", agg=MEAN, note="GRPO before 3.3"),
    "completions_length": alias("rl_response_length_tokens", agg=MEAN),
    "response_clip_ratio": alias("rl_response_truncated_ratio", agg=MEAN),
    "num_turns": alias("rl_turns"),
    # swift/metrics/acc.py compute_acc: argmax(logits) == label over the label tokens
    # (labels != -100), keyed f"{acc_strategy}_acc"; --acc_strategy token is the default
    "token_acc": alias("rl_token_accuracy_ratio", note="3.x+: argmax == label over label tokens"),
    "seq_acc": alias("rl_sequence_accuracy_ratio", note="3.x+ with --acc_strategy seq"),
    "teacher_kl": alias("rl_distillation_divergence", note="GKD/on-policy distillation KL"),
    # train/inference mismatch correction (rollout_importance_sampling_mode)
    "is_weight_mean": alias("rl_rollout_importance_weight"),
    "ess": alias("rl_importance_ess_ratio"),
    "clipped_frac": alias("rl_rollout_importance_weight_clamped_ratio",
                          note="Megatron GRPO: IS weights that hit the truncation bound"),
    "k3_kl": alias("rl_train_inference_kl", estimator="k3"),
    "training_log_ppl": alias("rl_log_perplexity", engine="trainer"),
    "rollout_log_ppl": alias("rl_log_perplexity", engine="rollout"),
})
P = list(_trl.P) + [
    pattern(r"^rollout_correction/k3_kl$", "rl_train_inference_kl", estimator="k3"),
]

VOCABULARY = Vocabulary(
    name="swift", title="ms-swift", keys=K, patterns=P,
    ignored={
        **_trl.VOCABULARY.ignored,
        "elapsed_time": "a human-readable duration string ('1h 2m 3s'); the step timestamps say it",
        "remaining_time": "a human-readable ETA string; derived from the step rate",
        "percentage": "a progress string ('12.50%'); rl_training_step over max_steps",
    },
    fallback_patterns=[
        (re.compile(r"^(?:chi2_(?:seq|token)|log_ppl_(?:abs_)?diff(?:_max|_min)?|ppl_ratio|"
                    r"training_ppl|rollout_ppl)$|^rollout_correction/"),
         "a rollout-correction diagnostic with no canonical metric"),
        (re.compile(r"^(?:fipo/|sdar/|rlsd_|future_kl$|influence_weight$|safety_mask$|"
                    r"entropy_logs$|entropy/threshold$)"),
         "an internal of one GRPO variant (FIPO, SDAR, RLSD, entropy masking)"),
        (re.compile(r"^loss_[^/]+$"), "the loss of one user-defined data channel"),
        (re.compile(r"^acc$"),
         "two meanings by release and task: 2.x token accuracy, or sequence accuracy with "
         "--acc_strategy sentence (swift/utils/metric.py); 3.x+ label accuracy of seq_cls and "
         "reranker tasks (swift/trainers/mixin.py), where LM training logs token_acc|seq_acc"),
    ],
    step_keys=("global_step/max_steps", "step", "global_step"),
    eval_prefixes=("eval_",),
    doc="HF Trainer log dicts as ms-swift prints them ({'loss': ..., 'global_step/max_steps': "
        "'2/4389', ...}), logging.jsonl, and trainer_state.json log_history.",
)
