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

from ._common import (CONFIG_ASYNC, CONFIG_COLOCATED, CONFIG_KL_LOSS_COEF, CONFIG_KL_REWARD_COEF,
                      CONFIG_MAX_GRAD_NORM, CONFIG_MAX_RESPONSE_LENGTH, CONFIG_N_MINI,
                      CONFIG_PI_OLD_FROM_ROLLOUT, CONFIG_ROLLOUT_GPU_MEMORY, CONFIG_TOTAL_STEPS,
                      ExporterOwner, flag, model_basename, number)

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


def config_values(args, state=None) -> dict:
    """The settings the alert rules read, from a TrainingArguments subclass (GRPOConfig, ...).

    n_mini: optimizer updates per generated batch. TRL generates steps_per_generation
    micro-batches at once and reuses them num_iterations times; every
    gradient_accumulation_steps micro-batches make one update. 1 means on-policy (the
    importance ratio is exactly 1, so nothing can be clipped).
    """
    out = {CONFIG_MAX_GRAD_NORM: number(getattr(args, "max_grad_norm", None))}
    iters = number(getattr(args, "num_iterations", None))
    if iters is not None:
        accum = number(getattr(args, "gradient_accumulation_steps", None)) or 1.0
        spg = number(getattr(args, "steps_per_generation", None)) or accum
        out[CONFIG_N_MINI] = iters * spg / accum
    out[CONFIG_MAX_RESPONSE_LENGTH] = number(getattr(args, "max_completion_length", None))
    if getattr(args, "use_vllm", False):
        out[CONFIG_ROLLOUT_GPU_MEMORY] = number(getattr(args, "vllm_gpu_memory_utilization", None))
    # the last global_step: TrainerState.max_steps (set at train start, also for epoch-based
    # runs), else args.max_steps when positive (-1 means "from the epochs")
    total = number(getattr(state, "max_steps", None)) or number(getattr(args, "max_steps", None))
    out[CONFIG_TOTAL_STEPS] = total if total and total > 0 else None
    out.update(online_settings(args))
    return {k: v for k, v in out.items() if v is not None}


def online_settings(args) -> dict:
    """The settings of an online trainer that generates its own samples (GRPO/RLOO configs:
    num_generations), for TRL and ms-swift's subclasses of them; {} for offline trainers.

    pi_old_from_rollout: 0, old_per_token_logps is the trainer's recompute or a detach
    (trl 1.16 grpo_trainer.py:2642-2656,3066). kl_loss_coef: beta (k3 in the loss), or, under
    ms-swift's kl_in_reward (rloo / reinforce++ defaults, rlhf_args.py:370-376), kl_reward_coef.
    async_training: ms-swift's async_generate (one step stale). colocated: generation on the
    training GPUs (no vLLM, or vllm_mode colocate), 0 for a vLLM server."""
    if getattr(args, "num_generations", None) is None:
        return {}
    out = {CONFIG_PI_OLD_FROM_ROLLOUT: 0.0}
    beta = number(getattr(args, "beta", None))
    if beta is not None:
        in_reward = bool(flag(getattr(args, "kl_in_reward", None)))
        out[CONFIG_KL_LOSS_COEF] = 0.0 if in_reward else beta
        out[CONFIG_KL_REWARD_COEF] = beta if in_reward else 0.0
    out[CONFIG_ASYNC] = flag(getattr(args, "async_generate", False))
    server = flag(getattr(args, "use_vllm", False)) and \
        str(getattr(args, "vllm_mode", "") or "").lower() == "server"
    out[CONFIG_COLOCATED] = 0.0 if server else 1.0
    return out


def _model_name(model) -> str | None:
    if model is None:
        return None
    cfg = getattr(model, "config", None)
    name = getattr(cfg, "_name_or_path", None) or getattr(model, "name_or_path", None)
    if not name and cfg is not None:
        name = getattr(cfg, "model_type", None)
    return model_basename(name)


class _CallbackImpl(ExporterOwner):
    """The callback's behaviour; mixed into transformers.TrainerCallback on first use."""

    def __init__(self, run: str | None = None, *, exporter=None, all_processes: bool = False,
                 algorithm: str | None = None, model: str | None = None,
                 close_on_train_end: bool = True, framework: str = FRAMEWORK, **exporter_kwargs):
        ExporterOwner.__init__(self, exporter)
        self.run = run
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
            or model_basename(getattr(args, "output_dir", None))
        kw = dict(self.exporter_kwargs)
        kw.setdefault("algorithm", self.algorithm or algorithm_of(args))
        kw.setdefault("model", self.model or _model_name(model))
        if self.all_processes and kw.get("rank") is None:
            kw["rank"] = getattr(args, "process_index", None)
        self._closed = False  # a second train() starts a new exporter
        try:
            cfg = config_values(args, state)
        except Exception as e:
            log.error("rl-exporter (%s): settings not read: %r", self.framework, e)
            cfg = {}
        if self._start(cfg, run=run, **kw) is None:
            self._active = False
        else:
            _track_phases(self.exporter)
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
            self._log(logs, state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        ex = self.exporter
        if ex is None:
            return
        if self.close_on_train_end and self._owned:
            self.close()
            self.exporter = None
        else:
            ex.flush()


_CLASS = None


def _track_phases(exporter) -> None:
    """Phases in progress for GRPO: generation (and scoring) vs. the rest of the optimiser
    step; GPU samples go to the innermost, so generation inside a step counts as generate."""
    try:
        module = sys.modules.get("trl.trainer.grpo_trainer")  # loaded when GRPO trains
        GRPOTrainer = getattr(module, "GRPOTrainer", None)
        if GRPOTrainer is None:
            return
        from ._phases import track_phase_call
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
