"""AReaL: export what StatsLogger.commit() logs, with AReaL's own step.

AReaL's trainer merges actor/rollout/eval stats and calls
`StatsLogger.commit(epoch, step, global_step, data)` (rank 0 only). commit() drops every
`*__count` key, logs each item of `data` (a dict or a list of dicts) at
`log_step = max(global_step, last_commit_step + 1) + i` and then sets
`last_commit_step = log_step + len(data) - 1`. The hook below does exactly that, so Grafana's
step axis is the one wandb/TensorBoard show for the same run.

One line, on the trainer's logger instance:

    from exporter.integrations.areal import attach
    attach(trainer.stats_logger)          # PPOTrainer/RLTrainer: self.stats_logger

or, before the trainer is built, for every StatsLogger in the process:

    from exporter.integrations.areal import register
    register()                            # wraps areal.utils.stats_logger.StatsLogger

Keys keep AReaL's names (`ppo_actor/update/actor_loss/avg`, `timeperf/train_step`,
`train_perf/tokens_per_second`, ...); the "areal" vocabulary maps them.
"""
from __future__ import annotations

import functools
import logging
import os
import sys

from ._common import (CONFIG_ASYNC, CONFIG_COLOCATED, CONFIG_KL_LOSS_COEF, CONFIG_KL_REWARD_COEF,
                      CONFIG_MAX_GRAD_NORM, CONFIG_MAX_RESPONSE_LENGTH, CONFIG_N_MINI,
                      CONFIG_PI_OLD_FROM_ROLLOUT, CONFIG_ROLLOUT_GPU_MEMORY, ExporterOwner,
                      flag, get_path, keep_our_loggers, model_basename, number,
                      register_once)

log = logging.getLogger("rl_exporter")

FRAMEWORK = "areal"
COUNT_SUFFIX = "__count"


def _rank() -> int:
    """torch.distributed rank, 0 when not initialised. Never imports torch itself: if the
    process has not imported torch.distributed, no process group can exist."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except Exception:
        pass
    return 0


def config_values(config) -> dict:
    """The settings the alert rules read, from AReaL's experiment config (GRPOConfig/PPOConfig
    dataclass or its OmegaConf form).

    n_mini: actor.ppo_n_minibatches (updates per training step). max_grad_norm:
    actor.optimizer.gradient_clipping. max_response_length: gconfig.max_new_tokens.
    rollout_gpu_memory_fraction: sglang.mem_fraction_static, or vllm.gpu_memory_utilization
    when rollout.backend is vllm.
    pi_old_from_rollout: 1 unless actor.recompute_logprob or actor.use_decoupled_loss
    (areal/trainer/ppo/actor.py:178-191: old_logp = the engine's logprobs). kl_reward_coef:
    actor.kl_ctl where a reference model is configured (rl_trainer.py:179; without one
    ref_logp is zeros and kl_rewards is no KL), else 0; AReaL has no KL loss (kl_loss_coef 0).
    async_training: rollout.max_head_offpolicyness > 0. colocated: the actor's or the rollout's
    scheduling_strategy is a colocation with the other (rl_trainer.py:433-438).
    """
    out = {
        CONFIG_N_MINI: number(get_path(config, "actor", "ppo_n_minibatches")),
        CONFIG_MAX_GRAD_NORM: number(get_path(config, "actor", "optimizer", "gradient_clipping")),
        CONFIG_MAX_RESPONSE_LENGTH: number(get_path(config, "gconfig", "max_new_tokens")),
    }
    engine = str(get_path(config, "rollout", "backend") or get_path(config, "allocation_mode") or "")
    if engine.split(":")[0].strip().lower() == "vllm":
        out[CONFIG_ROLLOUT_GPU_MEMORY] = number(get_path(config, "vllm", "gpu_memory_utilization"))
    elif get_path(config, "sglang") is not None:
        out[CONFIG_ROLLOUT_GPU_MEMORY] = number(get_path(config, "sglang", "mem_fraction_static"))
    recompute = flag(get_path(config, "actor", "recompute_logprob"))
    decoupled = flag(get_path(config, "actor", "use_decoupled_loss"))
    if recompute is not None or decoupled is not None:
        out[CONFIG_PI_OLD_FROM_ROLLOUT] = 0.0 if (recompute or decoupled) else 1.0
    kl = number(get_path(config, "actor", "kl_ctl"))
    if kl is not None:
        out[CONFIG_KL_REWARD_COEF] = kl if get_path(config, "ref") is not None else 0.0
        out[CONFIG_KL_LOSS_COEF] = 0.0
    stale = number(get_path(config, "rollout", "max_head_offpolicyness"))
    out[CONFIG_ASYNC] = None if stale is None else (1.0 if stale > 0 else 0.0)
    strategies = [(get_path(config, a, "scheduling_strategy"), b) for a, b in
                  (("actor", "rollout"), ("rollout", "actor"))]
    if any(s is not None for s, _ in strategies):
        out[CONFIG_COLOCATED] = 1.0 if any(
            str(getattr(get_path(s, "type"), "value", get_path(s, "type"))) == "colocation"
            and get_path(s, "target") == other for s, other in strategies) else 0.0
    return {k: v for k, v in out.items() if v is not None}


class RLExporterStatsHook(ExporterOwner):
    """Mirror of StatsLogger.commit's export path: same filtering, same steps."""

    framework = FRAMEWORK

    def __init__(self, config=None, *, run: str | None = None, exporter=None,
                 all_ranks: bool = False, **exporter_kwargs):
        super().__init__(exporter)
        self.all_ranks = all_ranks
        self._last_commit_step = -1
        self._config = config
        self._exporter_kwargs = exporter_kwargs
        self._run = run
        # the exporter is created on the first commit of rank 0 (or any rank if all_ranks)

    def _ensure(self):
        if self.exporter is None and not self._closed:
            keep_our_loggers()  # AReaL's logging setup disabled them
            cfg = self._config
            sl = get_path(cfg, "stats_logger") or cfg
            exp, trial = get_path(sl, "experiment_name"), get_path(sl, "trial_name")
            run = self._run or os.environ.get("RL_EXPORTER_RUN") or (
                f"{exp}_{trial}" if exp and trial else exp or trial)
            kw = dict(self._exporter_kwargs)
            kw.setdefault("model", model_basename(get_path(cfg, "actor", "path")))
            try:
                values = config_values(cfg)
            except Exception as e:
                log.error("rl-exporter (areal): settings not read: %r", e)
                values = {}
            if self._start(values, run=run, **kw) is not None:
                try:  # phases in progress: stats_tracker.record_timing(key) phases while open
                    # only when AReaL loaded it: importing it here would run AReaL's logging
                    # dictConfig, which disables every logger already created (ours included)
                    stats_tracker = sys.modules.get("areal.utils.stats_tracker")
                    if stats_tracker is not None:
                        from ._phases import track_phase_timer
                        track_phase_timer(self.exporter, stats_tracker, "record_timing")
                except Exception as e:
                    log.info("rl-exporter (areal): phases in progress off: %r", e)
        return self.exporter

    def commit(self, epoch: int, step: int, global_step: int, data) -> None:
        if self._closed or (not self.all_ranks and _rank() != 0):
            return
        self._ensure()
        items = [data] if isinstance(data, dict) else list(data)
        log_step = max(global_step, self._last_commit_step + 1)
        for i, item in enumerate(items):
            frame = {k: v for k, v in item.items() if not str(k).endswith(COUNT_SUFFIX)}
            self._log(frame, log_step + i)
        self._last_commit_step = log_step + len(items) - 1

    # StatsLogger checkpoints its last step; keep ours in step after a resume.
    def state_dict(self) -> dict:
        return {"last_commit_step": self._last_commit_step}

    def load_state_dict(self, state: dict) -> None:
        self._last_commit_step = state.get("last_commit_step", self._last_commit_step)


def _wrap(obj_or_cls, hook_for):
    """Wrap commit/close/load_state_dict so the hook sees the same calls, after AReaL's own."""
    orig_commit = obj_or_cls.commit
    orig_close = getattr(obj_or_cls, "close", None)
    orig_load = getattr(obj_or_cls, "load_state_dict", None)

    @functools.wraps(orig_commit)
    def commit(self, epoch, step, global_step, data):
        hook = hook_for(self)
        # AReaL filters and logs a copy; give the hook the same input, untouched
        snapshot = [dict(d) for d in data] if isinstance(data, (list, tuple)) else dict(data)
        try:
            return orig_commit(self, epoch, step, global_step, data)
        finally:
            try:
                hook.commit(epoch, step, global_step, snapshot)
            except Exception as e:
                log.error("rl-exporter (areal): commit export failed: %r", e)

    def close(self, *a, **kw):
        try:
            return orig_close(self, *a, **kw) if orig_close else None
        finally:
            hook_for(self).close()

    def load_state_dict(self, state, *a, **kw):
        try:
            return orig_load(self, state, *a, **kw) if orig_load else None
        finally:
            hook_for(self).load_state_dict(state)

    return commit, close, load_state_dict


def attach(stats_logger, **kwargs) -> RLExporterStatsHook:
    """Export every commit of this StatsLogger instance; returns the hook."""
    existing = getattr(stats_logger, "_rl_exporter_hook", None)
    if existing is not None:
        return existing
    keep_our_loggers()  # AReaL's logging setup disabled them
    cfg = getattr(stats_logger, "exp_config", None) or getattr(stats_logger, "config", None)
    hook = RLExporterStatsHook(cfg, **kwargs)
    hook._last_commit_step = getattr(stats_logger, "_last_commit_step", -1)
    stats_logger._rl_exporter_hook = hook
    commit, close, load = _wrap(type(stats_logger), lambda self: hook)
    # bind on the instance only
    stats_logger.commit = commit.__get__(stats_logger)
    stats_logger.close = close.__get__(stats_logger)
    stats_logger.load_state_dict = load.__get__(stats_logger)
    return hook


def register(stats_logger_cls=None, **kwargs):
    """Wrap StatsLogger (default areal.utils.stats_logger.StatsLogger) for every instance."""
    def hook_for(self):
        h = self.__dict__.get("_rl_exporter_hook")
        if h is None:
            cfg = getattr(self, "exp_config", None) or getattr(self, "config", None)
            h = RLExporterStatsHook(cfg, **kwargs)
            self._rl_exporter_hook = h
        return h

    def patch(cls) -> None:
        cls.commit, cls.close, cls.load_state_dict = _wrap(cls, hook_for)
    return register_once(FRAMEWORK, stats_logger_cls, _stats_logger_class, patch, what="areal")


def _stats_logger_class():
    from areal.utils.stats_logger import StatsLogger
    return StatsLogger
