"""LLaMA-Factory (hiyouga/LLaMA-Factory): SFT, DPO/KTO/ORPO, PPO and GRPO forks on the HF Trainer.

Its LogCallback (src/llamafactory/train/callbacks.py) appends one JSON object per logging step to
`<output_dir>/trainer_log.jsonl`, picked from the Trainer's last log_history entry:

    {"current_steps": 1, "total_steps": 5100, "loss": 0.6491, "accuracy": 1.0,
     "lr": 9.8e-10, "epoch": 0.0019, "percentage": 0.02, "elapsed_time": "0:01:03",
     "remaining_time": "3 days, 17:51:32"}

- `current_steps` is state.global_step (the step), `total_steps` state.max_steps;
- `lr` is the Trainer's `learning_rate`, `accuracy` DPO's `rewards/accuracies`, `reward` PPO's
  mean reward; `loss`, `eval_loss`, `epoch` are the HF keys, so HF/TRL keys (forks log GRPO
  keys such as `reward_std`, `completion_length`) resolve as TRL's;
- `percentage`, `elapsed_time`, `remaining_time` are progress (strings or derived numbers);
  `throughput` is tokens per second, `total_tokens` the tokens seen.
"""
from . import trl as _trl
from ..model import Vocabulary, alias

K = dict(_trl.K)
K.update({
    "lr": alias("rl_learning_rate", note="the Trainer's learning_rate, renamed by LogCallback"),
    "accuracy": alias("rl_preference_accuracy_ratio",
                      note="DPO/KTO rewards/accuracies, renamed by LogCallback"),
    "throughput": alias("rl_throughput_tokens_per_second", phase="train",
                        note="tokens seen / elapsed time since training started"),
    "total_tokens": alias("rl_tokens_total", note="state.num_input_tokens_seen"),
})

VOCABULARY = Vocabulary(
    name="llamafactory", title="LLaMA-Factory", keys=K, patterns=list(_trl.P),
    ignored={
        **_trl.VOCABULARY.ignored,
        "total_steps": "state.max_steps, the planned length of the run, not a per-step value",
        "percentage": "progress: current_steps / total_steps x 100",
        "elapsed_time": "a human-readable duration string; the step timestamps say it",
        "remaining_time": "a human-readable ETA string; derived from the step rate",
    },
    fallback_patterns=list(_trl.VOCABULARY.fallback_patterns),
    step_keys=("current_steps", "step"),
    eval_prefixes=("eval_",),
    doc="LogCallback's trainer_log.jsonl records ({\"current_steps\": N, \"total_steps\": T, "
        "\"loss\": ..., \"lr\": ...}) and trainer_state.json log_history.",
)
