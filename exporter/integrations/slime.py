"""slime: export what slime's tracking `log(args, metrics, step_key)` receives.

slime logs through module functions in its logging utils (slime/utils/logging_utils.py, in
newer trees slime/observability/logging_utils.py):

    init_tracking(args, primary=True)        # driver: primary; Megatron actors: primary=False
    log(args, metrics, step_key)             # step_key in train/step, rollout/step, eval/step
    finish_tracking(args)                    # where it exists

The step rides inside the dict under step_key, and one run has several counters: train/step
(= rollout_id * steps_per_rollout + step_id) for `train/*`, rollout/step (= rollout_id) for
`rollout/*`, `perf/*`, `multi_turn/*`, `passrate/*`, and eval/step for `eval/*`. Prometheus has
one step series (rl_training_step), so every frame is put on the training-step axis:
train/step as is, a rollout id times args.num_steps_per_rollout (1 when unset), never
moving backwards (evaluation of rollout r is logged after its training steps). The step key
itself is not exported as a metric (as slime's TensorBoard path drops it).

One line, before slime's training loop imports its logging utils elsewhere (e.g. at the top of
train.py):

    from exporter.integrations.slime import register; register()

register() wraps the module's init_tracking / log / finish_tracking; every process that calls
init_tracking gets an exporter: the primary (driver) on RL_EXPORTER_PORT (default 9464), the
others on that port + 1 + RANK, so the Megatron ranks that log `train/*` are scrapable too.
"""
from __future__ import annotations

import atexit
import functools
import importlib
import logging
import math
import sys

from ._common import (CONFIG_ASYNC, CONFIG_COLOCATED, CONFIG_KL_LOSS_COEF, CONFIG_KL_REWARD_COEF,
                      CONFIG_MAX_GRAD_NORM, CONFIG_MAX_RESPONSE_LENGTH, CONFIG_N_MINI,
                      CONFIG_PI_OLD_FROM_ROLLOUT, CONFIG_ROLLOUT_GPU_MEMORY,
                      CONFIG_UPDATE_WEIGHTS_INTERVAL, ExporterOwner, coef_if, env_rank,
                      exporter_kwargs, flag, model_basename, number,
                      register_once)

log = logging.getLogger("rl_exporter")

FRAMEWORK = "slime"
TRAIN_STEP_KEYS = ("train/step", "eval/train_step")
DEFAULT_PORT = 9464
MODULES = ("slime.utils.logging_utils", "slime.observability.logging_utils")


def config_values(args) -> dict:
    """The settings the alert rules read, from slime/Miles' parsed args (slime/utils/arguments.py).

    n_mini: optimizer steps per rollout = num_steps_per_rollout, else
    ceil(rollout_batch_size * n_samples_per_prompt / global_batch_size).
    max_grad_norm: clip_grad (Megatron). max_response_length: rollout_max_response_len.
    rollout_gpu_memory_fraction: sglang_mem_fraction_static.
    pi_old_from_rollout: use_rollout_logprobs (slime loss.py:965). kl_loss_coef: kl_loss_coef
    when use_kl_loss; kl_reward_coef: kl_coef (rollout/kl is 0 when it is 0, loss.py:743-746).
    colocated: colocate. async_training: 1 with Miles' fully_async; 0 when colocated (train_async.py
    and fully_async refuse --colocate); otherwise not in the args (train.py or train_async.py).
    update_weights_interval: rollouts per weight push.
    """
    g = lambda name: number(getattr(args, name, None))  # noqa: E731
    out = {}
    n_mini = g("num_steps_per_rollout")
    if n_mini is None:
        rbs, n, gbs = g("rollout_batch_size"), g("n_samples_per_prompt") or 1.0, g("global_batch_size")
        if rbs and gbs and gbs > 0:
            n_mini = float(math.ceil(rbs * n / gbs))
    out[CONFIG_N_MINI] = n_mini
    out[CONFIG_MAX_GRAD_NORM] = g("clip_grad")
    out[CONFIG_MAX_RESPONSE_LENGTH] = g("rollout_max_response_len")
    out[CONFIG_ROLLOUT_GPU_MEMORY] = g("sglang_mem_fraction_static")
    out[CONFIG_PI_OLD_FROM_ROLLOUT] = flag(getattr(args, "use_rollout_logprobs", None))
    out[CONFIG_KL_LOSS_COEF] = coef_if(getattr(args, "use_kl_loss", None), g("kl_loss_coef"))
    out[CONFIG_KL_REWARD_COEF] = g("kl_coef")
    colocated = flag(getattr(args, "colocate", None))
    out[CONFIG_COLOCATED] = colocated
    if flag(getattr(args, "fully_async", None)):
        out[CONFIG_ASYNC] = 1.0
    elif colocated:
        out[CONFIG_ASYNC] = 0.0
    out[CONFIG_UPDATE_WEIGHTS_INTERVAL] = g("update_weights_interval")
    return {k: v for k, v in out.items() if v is not None}


def placeholder_keys(args, framework: str) -> frozenset:
    """Keys this run writes as placeholders, not measurements: dropped before export.

    Miles computes the update-pass entropy only with --entropy-coef != 0 or
    --observe-training-entropy and otherwise logs train/entropy_loss as new_zeros(())
    (miles/backends/training_utils/loss_hub/losses.py:113,303-308); slime always computes it
    (slime/backends/megatron_utils/loss.py:976,1112), and so do Miles releases without that
    flag (a run of April 2026 logs train/entropy_loss 0.29 at --entropy-coef 0.00)."""
    if framework != "miles" or args is None or not hasattr(args, "observe_training_entropy"):
        return frozenset()
    coef = number(getattr(args, "entropy_coef", None))
    if coef is None or coef != 0 or getattr(args, "observe_training_entropy", False):
        return frozenset()  # computed, or the setting is unknown: keep what is logged
    return frozenset({"train/entropy_loss", "train/actor-entropy_loss"})


class StepAxis:
    """Puts slime/Miles frames on one training-step axis."""

    def __init__(self, steps_per_rollout: int | None = None):
        self.steps_per_rollout = steps_per_rollout if steps_per_rollout and steps_per_rollout > 0 else 1
        self.last = None

    def step(self, step_key: str | None, value):
        if value is None or isinstance(value, (str, bytes)):
            return self.last
        try:
            v = float(value)
        except (TypeError, ValueError):
            return self.last
        if step_key in TRAIN_STEP_KEYS:
            s = v
        else:
            # rollout/step, eval/step: a rollout id. slime evaluates rollout r after training on
            # it, so its first train step (r * steps_per_rollout) may already be behind us; the
            # axis never moves backwards.
            s = v * self.steps_per_rollout
            if self.last is not None and s < self.last:
                s = self.last
        self.last = s
        return s


class SlimeTracker(ExporterOwner):
    """One process's exporter for slime-style `log(metrics, step_key)` calls."""

    def __init__(self, args=None, *, primary: bool = True, run: str | None = None, exporter=None,
                 framework: str = FRAMEWORK, **kwargs):
        super().__init__(exporter)
        self.framework = framework
        spr = getattr(args, "num_steps_per_rollout", None)
        self.axis = StepAxis(spr if isinstance(spr, int) else None)
        self._placeholders = placeholder_keys(args, framework)
        if exporter is None:
            kw = exporter_kwargs(kwargs)
            if "port" not in kw:
                kw["port"] = getattr(args, "rl_exporter_port", None) or DEFAULT_PORT
            if not primary and kw.get("port"):
                kw["port"] = int(kw["port"]) + 1 + (env_rank() or 0)
            kw.setdefault("run", run or getattr(args, "wandb_group", None)
                          or getattr(args, "tb_experiment_name", None) or getattr(args, "wandb_project", None))
            kw.setdefault("model", model_basename(getattr(args, "hf_checkpoint", None)))
            algo = getattr(args, "advantage_estimator", None)
            kw.setdefault("algorithm", str(algo) if algo else None)
            try:
                values = config_values(args) if primary else {}
            except Exception as e:
                log.error("rl-exporter (%s): settings not read: %r", framework, e)
                values = {}
            self._start(values, **kw)
        if self.exporter is not None:
            _track_phases(self.exporter)

    def log(self, metrics, step_key: str | None = None, step=None):
        if self._closed:
            return
        raw = metrics.get(step_key) if step_key else None
        s = self.axis.step(step_key, raw if raw is not None else step)
        drop = self._placeholders
        self._log({k: v for k, v in metrics.items() if k != step_key and k not in drop}, s)

    def finish(self):
        self.close()


_tracker: SlimeTracker | None = None


def _track_phases(exporter) -> None:
    """Phases in progress: slime's/Miles' Timer phases (train, actor_train, update_weights, ...)."""
    for name in ("slime.utils.timer", "miles.utils.timer"):
        mod = sys.modules.get(name)  # loaded by the trainer; never imported from here
        if mod is None:
            continue
        try:
            from ._phases import track_start_end_timer
            track_start_end_timer(exporter, mod.Timer)
        except Exception as e:
            log.info("rl-exporter (slime): phases in progress off: %r", e)


def register(module=None, **kwargs):
    """Wrap slime's logging utils (init_tracking / log / finish_tracking). Idempotent."""
    return register_once(FRAMEWORK, module, _logging_utils,
                         lambda m: _patch(m, kwargs), what=" or ".join(MODULES))


def _logging_utils():
    err = None
    for name in MODULES:
        try:
            return importlib.import_module(name)
        except ImportError as e:
            err = e
    raise err


def _patch(module, kwargs: dict) -> None:
    orig_init = module.init_tracking
    orig_log = module.log
    orig_finish = getattr(module, "finish_tracking", None)

    @functools.wraps(orig_init)
    def init_tracking(args, primary: bool = True, **kw):
        global _tracker
        result = orig_init(args, primary, **kw)
        if _tracker is None:
            try:
                _tracker = SlimeTracker(args, primary=primary, **kwargs)
                atexit.register(_tracker.finish)
            except Exception as e:
                log.error("rl-exporter (slime): exporter not started: %r", e)
        return result

    @functools.wraps(orig_log)
    def log_(args, metrics, step_key: str, *a, **kw):
        try:
            return orig_log(args, metrics, step_key, *a, **kw)
        finally:
            if _tracker is not None:
                try:
                    _tracker.log(dict(metrics), step_key)
                except Exception as e:
                    log.error("rl-exporter (slime): log failed: %r", e)

    module.init_tracking = init_tracking
    module.log = log_
    if orig_finish is not None:
        @functools.wraps(orig_finish)
        def finish_tracking(*a, **kw):
            try:
                return orig_finish(*a, **kw)
            finally:
                finish()

        module.finish_tracking = finish_tracking


def tracker() -> SlimeTracker | None:
    """This process's tracker (after init_tracking ran), for tests and flushes."""
    return _tracker


def finish() -> None:
    """Finish this process's tracker and forget it (finish_tracking calls it): a later
    init_tracking in the same process, a second run, gets an exporter of its own."""
    global _tracker
    t, _tracker = _tracker, None
    if t is not None:
        t.finish()
