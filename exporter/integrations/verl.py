"""veRL: a tracking backend named "rl_exporter" for verl.utils.tracking.Tracking.

veRL's Tracking builds its backends from a fixed list (`Tracking.supported_backend`, checked
with an assert) and a chain of `if "<name>" in default_backend:` blocks, then fans every
`log(data, step)` out to each backend and calls each one's `finish()` by name. There is no
registry, so `register()` adds the name to `supported_backend` and wraps `Tracking.__init__`
(construct our backend when "rl_exporter" is listed) and `Tracking.finish` (finish it too).
It is idempotent and must run in the process that constructs Tracking (veRL's TaskRunner, a
Ray actor), which is what the `verl.plugins` entry point is for:

    # installed rl-exporter declares   [project.entry-points."verl.plugins"]
    #                                   rl_exporter = "exporter.integrations._verl_plugin"
    # veRL's load_plugins() imports it on the driver and, through Ray's
    # worker_process_setup_hook, in every worker -> register() has run where Tracking lives.
    python3 -m verl.trainer.main_ppo ... 'trainer.logger=[console,rl_exporter]'

Older veRL without plugins: make the hook run in Ray workers yourself,
    +ray_kwargs.ray_init.runtime_env.worker_process_setup_hook=exporter.integrations.verl.register
or call `exporter.integrations.verl.register()` at the top of your own TaskRunner.

Settings (all optional): `+trainer.rl_exporter.port=9464`, `.addr`, `.run`, `.otlp_endpoint`
(any Exporter keyword), else the RL_EXPORTER_* environment variables; the run defaults to
trainer.experiment_name. The zero-code alternative is the sidecar reading veRL's `file`
logger JSONL (VERL_FILE_LOGGER_PATH); see docs/integrations.md.
"""
from __future__ import annotations

import functools
import inspect
import logging
import math
import os

from ._common import (CONFIG_ASYNC, CONFIG_COLOCATED, CONFIG_KL_LOSS_COEF, CONFIG_KL_REWARD_COEF,
                      CONFIG_MAX_GRAD_NORM, CONFIG_MAX_RESPONSE_LENGTH, CONFIG_N_MINI,
                      CONFIG_PI_OLD_FROM_ROLLOUT, CONFIG_ROLLOUT_GPU_MEMORY, CONFIG_TOTAL_STEPS,
                      ExporterOwner, coef_if, first, flag, get_path, model_basename,
                      number, register_once)

log = logging.getLogger("rl_exporter")

BACKEND = "rl_exporter"
FRAMEWORK = "verl"


def _exporter_params() -> set[str]:
    from ..hook import Exporter
    return set(inspect.signature(Exporter.__init__).parameters) - {"self", "framework"}


def settings_from_config(config) -> dict:
    """Exporter keywords from config['trainer']['rl_exporter'] (unknown keys are logged, dropped)."""
    raw = get_path(config, "trainer", "rl_exporter")
    if not raw:
        return {}
    try:
        items = dict(raw.items())
    except Exception:
        log.error("rl-exporter (verl): trainer.rl_exporter should be a mapping, got %r", raw)
        return {}
    allowed = _exporter_params()
    out = {k: v for k, v in items.items() if k in allowed}
    bad = sorted(set(items) - allowed)
    if bad:
        log.error("rl-exporter (verl): ignoring unknown trainer.rl_exporter settings %s (known: %s)",
                  bad, ", ".join(sorted(allowed)))
    return out


def config_values(config) -> dict:
    """The settings the alert rules read, from veRL's trainer config (OmegaConf or dict).

    n_mini: actor updates per training step = ppo_epochs * ceil(data.train_batch_size /
    actor.ppo_mini_batch_size) (both in prompts; veRL scales both by rollout.n).
    max_grad_norm: actor.optim.clip_grad (actor.grad_clip in older trees).
    max_response_length: rollout.response_length, else data.max_response_length.
    rollout_gpu_memory_fraction: rollout.gpu_memory_utilization (vLLM/SGLang KV-cache share).
    total_training_steps: trainer.total_training_steps (the run's last global step).
    pi_old_from_rollout: algorithm.rollout_correction.bypass_mode (old_log_probs =
    rollout_log_probs, v1/trainer_base.py:1641-1647). kl_loss_coef: actor.kl_loss_coef when
    actor.use_kl_loss. kl_reward_coef: algorithm.kl_ctrl.kl_coef when algorithm.use_kl_in_reward.
    async_training / colocated: see run_mode().
    """
    actor = get_path(config, "actor_rollout_ref", "actor")
    rollout = get_path(config, "actor_rollout_ref", "rollout")
    out = {}
    tbs = number(get_path(config, "data", "train_batch_size"))
    mbs = number(get_path(actor, "ppo_mini_batch_size"))
    if tbs and mbs and mbs > 0:
        epochs = number(get_path(actor, "ppo_epochs")) or 1.0
        out[CONFIG_N_MINI] = epochs * math.ceil(tbs / mbs)
    out[CONFIG_MAX_GRAD_NORM] = number(first(actor, ("optim", "clip_grad"), ("grad_clip",)))
    out[CONFIG_MAX_RESPONSE_LENGTH] = number(first(
        config, ("actor_rollout_ref", "rollout", "response_length"), ("data", "max_response_length")))
    out[CONFIG_ROLLOUT_GPU_MEMORY] = number(get_path(rollout, "gpu_memory_utilization"))
    # RayPPOTrainer writes the computed total back into trainer.total_training_steps before
    # fit() builds its Tracking; global_steps runs 1..total, so the last step equals it
    total = number(get_path(config, "trainer", "total_training_steps"))
    out[CONFIG_TOTAL_STEPS] = total if total and total > 0 else None
    out[CONFIG_PI_OLD_FROM_ROLLOUT] = flag(get_path(config, "algorithm", "rollout_correction",
                                                    "bypass_mode"))
    out[CONFIG_KL_LOSS_COEF] = coef_if(get_path(actor, "use_kl_loss"), get_path(actor, "kl_loss_coef"))
    out[CONFIG_KL_REWARD_COEF] = coef_if(get_path(config, "algorithm", "use_kl_in_reward"),
                                         get_path(config, "algorithm", "kl_ctrl", "kl_coef"))
    out.update(run_mode(config))
    return {k: v for k, v in out.items() if v is not None}


def run_mode(config) -> dict:
    """async_training and colocated from veRL's config.

    - the fully-async recipe (experimental/fully_async_policy) adds an `async_training`
      section; the one-step-off recipe a top-level `rollout` resource pool: both async,
      the rollout on GPUs of its own;
    - the v1 trainer (trainer.use_v1, 0.9.1's default): trainer.v1.trainer_mode sync |
      colocate_async | separate_async (_generated_ppo_trainer.yaml:979-987);
    - otherwise the synchronous ray trainer; colocated as actor_rollout_ref.hybrid_engine.
    """
    if get_path(config, "async_training") is not None or \
            get_path(config, "rollout", "n_gpus_per_node") is not None:
        return {CONFIG_ASYNC: 1.0, CONFIG_COLOCATED: 0.0}
    hybrid = flag(get_path(config, "actor_rollout_ref", "hybrid_engine"))
    if flag(get_path(config, "trainer", "use_v1")):
        mode = str(get_path(config, "trainer", "v1", "trainer_mode") or "sync").strip().lower()
        if mode == "colocate_async":
            return {CONFIG_ASYNC: 1.0, CONFIG_COLOCATED: 1.0}
        if mode == "separate_async":
            return {CONFIG_ASYNC: 1.0, CONFIG_COLOCATED: 0.0}
        if mode != "sync":
            return {}
    return {CONFIG_ASYNC: 0.0, CONFIG_COLOCATED: hybrid}


class RLExporterBackend(ExporterOwner):
    """A veRL Tracking backend: `log(data, step)` and `finish()`."""

    framework = FRAMEWORK

    def __init__(self, project_name: str | None = None, experiment_name: str | None = None,
                 config=None, *, exporter=None, **exporter_kwargs):
        super().__init__(exporter)
        if exporter is None:
            kw = settings_from_config(config)
            kw.update({k: v for k, v in exporter_kwargs.items() if v is not None})
            kw.setdefault("run", os.environ.get("RL_EXPORTER_RUN") or experiment_name)
            algo = get_path(config, "algorithm", "adv_estimator")
            kw.setdefault("algorithm", str(algo) if algo is not None else None)
            kw.setdefault("model", model_basename(get_path(config, "actor_rollout_ref", "model", "path")))
            try:
                cfg = config_values(config)
            except Exception as e:  # an odd config costs the settings, not the backend
                log.error("rl-exporter (verl): settings not read: %r", e)
                cfg = {}
            self._start(cfg, **kw)
            if self.exporter is not None and self.exporter.url:
                print(f"rl-exporter (verl): scrape {self.exporter.url}")
        try:  # phases in progress: veRL's marked_timer phases (gen, update_actor, ...) while open
            from ._phases import track_loaded_phase_timers
            track_loaded_phase_timers(self.exporter)
        except Exception as e:
            log.error("rl-exporter (verl): phase tracking off: %r", e)

    def log(self, data, step):
        """Called by Tracking.log(data=metrics, step=global_steps) once per step."""
        self._log(data, step)

    def finish(self, exit_code: int = 0):
        self.close()


def _tracking_class():
    from verl.utils.tracking import Tracking
    return Tracking


def register(tracking_cls=None):
    """Teach veRL's Tracking the backend name "rl_exporter". Idempotent; returns the class.

    Accepts an explicit class (tests, forks with their own Tracking); by default patches
    verl.utils.tracking.Tracking. With RL_EXPORTER_DISABLE=1 it does nothing.
    """
    return register_once(FRAMEWORK, tracking_cls, _tracking_class, _patch, what="verl")


def _patch(tracking_cls) -> None:
    supported = list(getattr(tracking_cls, "supported_backend", []))
    if BACKEND not in supported:
        tracking_cls.supported_backend = supported + [BACKEND]

    orig_init = tracking_cls.__init__
    orig_finish = getattr(tracking_cls, "finish", None)

    @functools.wraps(orig_init)
    def __init__(self, project_name, experiment_name, default_backend="console", config=None,
                 *args, **kwargs):
        orig_init(self, project_name, experiment_name, default_backend, config, *args, **kwargs)
        names = [default_backend] if isinstance(default_backend, str) else list(default_backend or ())
        if BACKEND in names:
            try:
                self.logger[BACKEND] = RLExporterBackend(project_name, experiment_name, config)
            except Exception as e:  # a metrics failure must not stop the run
                log.error("rl-exporter (verl): backend not started: %r", e)

    tracking_cls.__init__ = __init__

    if orig_finish is not None:
        @functools.wraps(orig_finish)
        def finish(self, *args, **kwargs):
            # Tracking.finish() finishes its known backends by name; ours is not among them.
            ours = getattr(self, "logger", {}).get(BACKEND) if isinstance(
                getattr(self, "logger", None), dict) else None
            try:
                return orig_finish(self, *args, **kwargs)
            finally:
                if ours is not None:
                    ours.finish()

        tracking_cls.finish = finish
