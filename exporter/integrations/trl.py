"""TRL / Hugging Face Trainer: a TrainerCallback that exports every logged dict.

    from exporter.integrations.trl import RLExporterCallback
    trainer = GRPOTrainer(..., callbacks=[RLExporterCallback(run="grpo-qwen-a")])
    # or: trainer.add_callback(RLExporterCallback())

What it does, per Trainer event (transformers' TrainerCallback protocol):
- on_log(logs): the dict HF/TRL logged (the same dict that lands in state.log_history, without
  its "step") is exported with step = state.global_step, through the "trl" vocabulary
  (GRPO, RLOO, DPO, KTO, PPO, SFT key sets; `eval_*` copies become split="eval").
- on_step_end: a step heartbeat (rl_training_step and its timestamp advance every optimizer
  step even when logging_steps > 1, so a stalled trainer is told apart from a quiet one).
- on_train_end: flush, then close the exporter this callback created (stops /metrics).

Only the world-main process exports (state.is_world_process_zero) unless all_processes=True;
in that mode each process needs its own port (e.g. port=9464 + LOCAL_RANK).

transformers is imported only when the callback class is first used, so importing this
module costs nothing.
"""
from __future__ import annotations

import logging
import os
import sys

from ._common import make_exporter, metric_values

log = logging.getLogger("rl_exporter")

FRAMEWORK = "trl"

# TRL/HF config class -> the algorithm label on rl_run_info.
_ALGORITHMS = {
    "GRPOConfig": "grpo", "RLOOConfig": "rloo", "DPOConfig": "dpo", "KTOConfig": "kto",
    "PPOConfig": "ppo", "ORPOConfig": "orpo", "CPOConfig": "cpo", "SFTConfig": "sft",
    "RewardConfig": "rm", "OnlineDPOConfig": "online_dpo", "GKDConfig": "gkd",
    "XPOConfig": "xpo", "NashMDConfig": "nash_md", "BCOConfig": "bco", "PRMConfig": "prm",
}


def algorithm_of(args) -> str | None:
    """The algorithm a TrainingArguments subclass implies (GRPOConfig -> 'grpo')."""
    for cls in type(args).__mro__:
        if cls.__name__ in _ALGORITHMS:
            return _ALGORITHMS[cls.__name__]
    return None


def _model_name(model) -> str | None:
    if model is None:
        return None
    cfg = getattr(model, "config", None)
    name = getattr(cfg, "_name_or_path", None) or getattr(model, "name_or_path", None)
    if not name and cfg is not None:
        name = getattr(cfg, "model_type", None)
    return os.path.basename(str(name).rstrip("/")) if name else None


class _CallbackImpl:
    """The callback's behaviour; mixed into transformers.TrainerCallback on first use."""

    def __init__(self, run: str | None = None, *, exporter=None, all_processes: bool = False,
                 algorithm: str | None = None, model: str | None = None,
                 close_on_train_end: bool = True, framework: str = FRAMEWORK, **exporter_kwargs):
        self.run = run
        self.exporter = exporter
        self._owned = False            # we close only the exporter we created
        self.all_processes = all_processes
        self.algorithm = algorithm
        self.model = model
        self.close_on_train_end = close_on_train_end
        self.framework = framework
        self.exporter_kwargs = exporter_kwargs
        self._active: bool | None = None  # decided once we see a TrainerState

    # -------------------------------------------------------------- plumbing
    def _is_exporting(self, state) -> bool:
        if self._active is None:
            main = bool(getattr(state, "is_world_process_zero", True))
            self._active = main or self.all_processes
        return self._active

    def _ensure(self, args, state, model=None):
        if self.exporter is not None or not self._is_exporting(state):
            return self.exporter
        run = self.run or os.environ.get("RL_EXPORTER_RUN") or getattr(args, "run_name", None) \
            or os.path.basename(str(getattr(args, "output_dir", "") or "").rstrip("/")) or None
        kw = dict(self.exporter_kwargs)
        kw.setdefault("algorithm", self.algorithm or algorithm_of(args))
        kw.setdefault("model", self.model or _model_name(model))
        if self.all_processes and kw.get("rank") is None:
            kw["rank"] = getattr(args, "process_index", None)
        try:
            self.exporter = make_exporter(self.framework, run=run, **kw)
            self._owned = True
            if self.exporter.url:
                log.info("rl-exporter (trl): scrape %s", self.exporter.url)
            _track_phases(self.exporter)
        except Exception as e:  # never break training over metrics
            log.error("rl-exporter (trl): could not start the exporter: %r", e)
            self._active = False
        return self.exporter

    # -------------------------------------------------------------- events
    def on_train_begin(self, args, state, control, **kwargs):
        self._ensure(args, state, kwargs.get("model"))

    def on_step_end(self, args, state, control, **kwargs):
        ex = self._ensure(args, state, kwargs.get("model"))
        if ex is not None:
            ex.log({}, step=state.global_step)  # heartbeat: the step advanced

    def on_log(self, args, state, control, logs=None, **kwargs):
        ex = self._ensure(args, state, kwargs.get("model"))
        if ex is not None and logs:
            ex.log(metric_values(logs), step=state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        ex = self.exporter
        if ex is None:
            return
        ex.flush()
        if self.close_on_train_end and self._owned:
            ex.close()
            self.exporter = None
            self._owned = False


_CLASS = None


def _track_phases(exporter) -> None:
    """Phases in progress for GRPO: generation (and scoring) vs. the rest of the optimiser
    step; GPU samples go to the innermost, so generation inside a step counts as generate."""
    try:
        module = sys.modules.get("trl.trainer.grpo_trainer")  # loaded when GRPO trains
        GRPOTrainer = getattr(module, "GRPOTrainer", None)
        if GRPOTrainer is None:
            return
        from ..timers import track_phase_call
        track_phase_call(exporter, GRPOTrainer, "_generate_and_score_completions", "generate")
        track_phase_call(exporter, GRPOTrainer, "training_step", "training_step")
    except Exception as e:
        log.info("rl-exporter (trl): phases in progress off: %r", e)


def _callback_class():
    global _CLASS
    if _CLASS is None:
        from transformers import TrainerCallback

        class RLExporterCallback(_CallbackImpl, TrainerCallback):
            __doc__ = __doc__
            __init__ = _CallbackImpl.__init__

        RLExporterCallback.__module__ = __name__
        _CLASS = RLExporterCallback
    return _CLASS


def __getattr__(name):
    if name == "RLExporterCallback":
        return _callback_class()
    raise AttributeError(name)
