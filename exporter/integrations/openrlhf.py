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
import os

from ._common import get_path, make_exporter, metric_values

log = logging.getLogger("rl_exporter")

FRAMEWORK = "openrlhf"


def run_name_of(args) -> str | None:
    """OpenRLHF's run name: logger.wandb.run_name (0.11) or wandb_run_name (older flat args)."""
    return get_path(args, "logger", "wandb", "run_name") or get_path(args, "wandb_run_name")


class RLExporterLogger:
    """log_train / log_eval / close, exported to Prometheus (and OTLP) through rl-exporter."""

    def __init__(self, args=None, *, run: str | None = None, exporter=None, **exporter_kwargs):
        self._owned = exporter is None
        self._closed = False
        if exporter is None:
            run = run or os.environ.get("RL_EXPORTER_RUN") or run_name_of(args)
            algo = get_path(args, "algo", "advantage", "estimator") or get_path(args, "advantage_estimator")
            model = get_path(args, "actor", "model_name_or_path") or get_path(args, "pretrain")
            exporter_kwargs.setdefault("algorithm", str(algo) if algo else None)
            exporter_kwargs.setdefault("model", os.path.basename(str(model).rstrip("/")) if model else None)
            exporter = make_exporter(FRAMEWORK, run=run, **exporter_kwargs)
        self.exporter = exporter

    def log_train(self, global_step: int, logs_dict) -> None:
        if self._closed:
            return
        frame = metric_values({k: v for k, v in dict(logs_dict).items() if k != "generated_samples"})
        self.exporter.log(frame, step=global_step)

    def log_eval(self, global_step: int, logs_dict) -> None:
        if self._closed:
            return
        frame = {}
        for k, v in metric_values(dict(logs_dict)).items():
            frame[k if str(k).startswith("eval_") else f"eval_{k}"] = v
        self.exporter.log(frame, step=global_step)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.exporter.flush()
        if self._owned:
            self.exporter.close()


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
