"""OpenRLHF (0.11): a logger with OpenRLHF's logger interface.

OpenRLHF's trainers hold up to two loggers, `self.wandb_logger` and `self.tensorboard_logger`
(WandbLogger / TensorboardLogger in openrlhf/utils/logging_utils.py), and call them as

    logger.log_train(global_step, logs_dict)   # save_logs_and_checkpoints, every logging_steps
    logger.log_eval(global_step, logs_dict)    # after evaluation (eval_* keys)
    logger.close()                             # end of fit()

`RLExporterLogger` has the same three methods (and the same constructor argument, `args`), so
it can sit in either slot. The one-line change, in the process that owns the trainer:

    from exporter.integrations.openrlhf import attach
    attach(trainer)        # tees the trainer's tensorboard_logger slot into rl-exporter

`attach` keeps an existing TensorBoard (or W&B) logger working: both receive every call.
`generated_samples` (a text table) and None values are dropped, like OpenRLHF's own loggers do.
log_eval keys without the `eval_` prefix get it, so they export as split="eval" copies.
The step is OpenRLHF's global_step (one per PPO/GRPO training step).
"""
from __future__ import annotations

import logging
import math
import os

from ._common import (CONFIG_ASYNC, CONFIG_COLOCATED, CONFIG_KL_LOSS_COEF, CONFIG_KL_REWARD_COEF,
                      CONFIG_MAX_GRAD_NORM, CONFIG_MAX_RESPONSE_LENGTH, CONFIG_N_MINI,
                      CONFIG_PI_OLD_FROM_ROLLOUT, CONFIG_ROLLOUT_GPU_MEMORY, ExporterOwner, first,
                      flag, get_path, model_basename, number)

log = logging.getLogger("rl_exporter")

FRAMEWORK = "openrlhf"


def run_name_of(args) -> str | None:
    """OpenRLHF's run name: logger.wandb.run_name (0.11) or wandb_run_name (older flat args)."""
    return get_path(args, "logger", "wandb", "run_name") or get_path(args, "wandb_run_name")


def config_values(args) -> dict:
    """The settings the alert rules read, from OpenRLHF's args (0.11's nested namespace from
    hierarchize(), or the flat argparse names of older releases).

    n_mini: actor updates per rollout = train.max_epochs * ceil(rollout.batch_size *
    rollout.n_samples_per_prompt / train.batch_size).
    max_grad_norm: actor.max_norm. max_response_length: rollout.max_new_tokens (unset means
    data.max_len minus each prompt's length: no single limit, so nothing is exported).
    rollout_gpu_memory_fraction: vllm.gpu_memory_utilization.
    pi_old_from_rollout: 0 (the actor recomputes the old log-probs in make_experience).
    kl_loss_coef / kl_reward_coef: algo.kl.init_coef, in the loss with algo.kl.use_loss, else in
    the reward. async_training: train.async_enable. colocated: train.colocate_all.
    """
    out = {}
    rbs = number(first(args, ("rollout", "batch_size"), ("rollout_batch_size",)))
    n = number(first(args, ("rollout", "n_samples_per_prompt"), ("n_samples_per_prompt",))) or 1.0
    tbs = number(first(args, ("train", "batch_size"), ("train_batch_size",)))
    if rbs and tbs and tbs > 0:
        epochs = number(first(args, ("train", "max_epochs"), ("max_epochs",))) or 1.0
        out[CONFIG_N_MINI] = epochs * math.ceil(rbs * n / tbs)
    out[CONFIG_MAX_GRAD_NORM] = number(first(args, ("actor", "max_norm"), ("max_norm",)))
    out[CONFIG_MAX_RESPONSE_LENGTH] = number(first(args, ("rollout", "max_new_tokens"),
                                                   ("generate_max_len",)))
    out[CONFIG_ROLLOUT_GPU_MEMORY] = number(first(args, ("vllm", "gpu_memory_utilization"),
                                                  ("vllm_gpu_memory_utilization",)))
    out[CONFIG_PI_OLD_FROM_ROLLOUT] = 0.0
    coef = number(first(args, ("algo", "kl", "init_coef"), ("init_kl_coef",)))
    in_loss = flag(first(args, ("algo", "kl", "use_loss"), ("use_kl_loss",)))
    if coef is not None and in_loss is not None:
        out[CONFIG_KL_LOSS_COEF] = coef if in_loss else 0.0
        out[CONFIG_KL_REWARD_COEF] = 0.0 if in_loss else coef
    out[CONFIG_ASYNC] = flag(first(args, ("train", "async_enable"), ("async_train",)))
    out[CONFIG_COLOCATED] = flag(first(args, ("train", "colocate_all"), ("colocate_all_models",)))
    return {k: v for k, v in out.items() if v is not None}


class RLExporterLogger(ExporterOwner):
    """log_train / log_eval / close, exported to Prometheus (and OTLP) through rl-exporter."""

    framework = FRAMEWORK

    def __init__(self, args=None, *, run: str | None = None, exporter=None, **exporter_kwargs):
        super().__init__(exporter)
        if exporter is None:
            run = run or os.environ.get("RL_EXPORTER_RUN") or run_name_of(args)
            algo = first(args, ("algo", "advantage", "estimator"), ("advantage_estimator",))
            exporter_kwargs.setdefault("algorithm", str(algo) if algo else None)
            exporter_kwargs.setdefault("model", model_basename(
                first(args, ("actor", "model_name_or_path"), ("pretrain",))))
            try:
                cfg = config_values(args)
            except Exception as e:
                log.error("rl-exporter (openrlhf): settings not read: %r", e)
                cfg = {}
            self._start(cfg, run=run, **exporter_kwargs)

    def log_train(self, global_step: int, logs_dict) -> None:
        if self._closed:
            return
        self._log({k: v for k, v in dict(logs_dict).items() if k != "generated_samples"}, global_step)

    def log_eval(self, global_step: int, logs_dict) -> None:
        if self._closed:
            return
        frame = {}
        for k, v in dict(logs_dict).items():
            frame[k if str(k).startswith("eval_") else f"eval_{k}"] = v
        self._log(frame, global_step)


class TeeLogger:
    """Forwards every call to the framework's own logger, then to ours."""

    def __init__(self, theirs, ours: RLExporterLogger):
        self.theirs, self.ours = theirs, ours

    def log_train(self, global_step, logs_dict):
        try:
            self.theirs.log_train(global_step, logs_dict)
        finally:
            self.ours.log_train(global_step, logs_dict)

    def log_eval(self, global_step, logs_dict):
        try:
            if hasattr(self.theirs, "log_eval"):  # some OpenRLHF loggers have no log_eval
                self.theirs.log_eval(global_step, logs_dict)
        finally:
            self.ours.log_eval(global_step, logs_dict)

    def close(self):
        try:
            self.theirs.close()
        finally:
            self.ours.close()

    def __getattr__(self, name):  # anything else (writer, handle, samples_table) is theirs
        return getattr(self.theirs, name)


def attach(trainer, *, slot: str | None = None, **kwargs) -> RLExporterLogger:
    """Plug an RLExporterLogger into an OpenRLHF trainer; returns it.

    Uses the trainer's `tensorboard_logger` slot (another with slot=...); a logger already in
    the slot keeps receiving every call.
    """
    args = getattr(trainer, "args", None) or get_path(trainer, "strategy", "args")
    ours = RLExporterLogger(args, **kwargs)
    slot = slot or "tensorboard_logger"
    theirs = getattr(trainer, slot, None)
    setattr(trainer, slot, TeeLogger(theirs, ours) if theirs is not None else ours)
    return ours
