"""Shared plumbing for the framework integrations: how an adapter gets, feeds and closes its
Exporter, and how it reads the trainer settings the alert rules need."""
from __future__ import annotations

import logging
import math
import os
import time

log = logging.getLogger("rl_exporter")


def keep_our_loggers() -> None:
    """Make rl-exporter's loggers log again after a framework reconfigured logging.

    dictConfig(disable_existing_loggers=True) (AReaL, on import) disables every logger that
    existed then; AReaL's getLogger also swaps in a new root logger and manager on every call,
    so a logger created after that hangs under a root with no handlers, and
    logging.getLogger("rl_exporter") no longer returns the object our modules log through.
    Either way a user would never see our errors, or could not set their level. Re-enable
    ours, register our modules' loggers with the current manager, and hang them under
    logging.root again."""
    import sys
    manager = logging.Logger.manager
    for name, m in list(sys.modules.items()):
        lg = getattr(m, "log", None) if name.startswith("exporter") else None
        if isinstance(lg, logging.Logger) and lg.name.startswith("rl_exporter"):
            manager.loggerDict[lg.name] = lg
    ours = [lg for name, lg in list(manager.loggerDict.items())
            if isinstance(lg, logging.Logger) and (name == "rl_exporter" or name.startswith("rl_exporter."))]
    for lg in ours:
        lg.disabled = False
        top = lg
        while top.parent is not None:
            top = top.parent
        if top is not logging.root:
            lg.parent = logging.root

# Environment knobs every integration honours (explicit arguments win).
ENV_PORT = "RL_EXPORTER_PORT"
ENV_ADDR = "RL_EXPORTER_ADDR"
ENV_RUN = "RL_EXPORTER_RUN"
ENV_OTLP = "RL_EXPORTER_OTLP_ENDPOINT"
ENV_DISABLE = "RL_EXPORTER_DISABLE"

# rl_config_value{parameter=...}: the trainer settings the alert rules read, under one name
# whatever the framework calls them.
CONFIG_N_MINI = "n_mini"                     # optimizer updates per rollout batch (1 = on-policy)
CONFIG_MAX_GRAD_NORM = "max_grad_norm"       # gradient clipping threshold
CONFIG_MAX_RESPONSE_LENGTH = "max_response_length"   # generation limit, tokens
CONFIG_ROLLOUT_GPU_MEMORY = "rollout_gpu_memory_fraction"  # engine's share of GPU memory, 0..1
# the last training step of the run: RLRunStalled does not page on a run that reached it (a
# finished run whose exporter keeps serving), and the fleet dashboard counts it finished
CONFIG_TOTAL_STEPS = "total_training_steps"
# Settings that change what a rule's series mean (docs/integrations.md "Settings that change a
# rule's meaning"); booleans are 1/0, and a setting the config does not decide is left out:
# 1 where pi_old in the PPO ratio is the rollout engine's log-probs, not the trainer's own
# recompute (the ratio is then not identically 1 at n_mini = 1, so the clip can bind)
CONFIG_PI_OLD_FROM_ROLLOUT = "pi_old_from_rollout"
CONFIG_KL_LOSS_COEF = "kl_loss_coef"         # KL-to-reference coefficient in the loss (0: none)
CONFIG_KL_REWARD_COEF = "kl_reward_coef"     # KL-to-reference coefficient in the reward (0: none)
CONFIG_ASYNC = "async_training"              # 1: rollouts overlap training (off-policy samples)
CONFIG_COLOCATED = "colocated"               # 1: trainer and rollout engine share the GPUs
CONFIG_UPDATE_WEIGHTS_INTERVAL = "update_weights_interval"  # rollouts per weight push (slime/Miles)
CONFIG_PARAMETERS = (CONFIG_N_MINI, CONFIG_MAX_GRAD_NORM, CONFIG_MAX_RESPONSE_LENGTH,
                     CONFIG_ROLLOUT_GPU_MEMORY, CONFIG_TOTAL_STEPS, CONFIG_PI_OLD_FROM_ROLLOUT,
                     CONFIG_KL_LOSS_COEF, CONFIG_KL_REWARD_COEF, CONFIG_ASYNC, CONFIG_COLOCATED,
                     CONFIG_UPDATE_WEIGHTS_INTERVAL)


def get_path(obj, *path):
    """obj.p1.p2... through dicts, OmegaConf configs (.get) or attributes; None when missing."""
    for p in path:
        if obj is None:
            return None
        try:
            obj = obj.get(p) if hasattr(obj, "get") else getattr(obj, p, None)
        except Exception:  # a config object that refuses unknown keys
            return None
    return obj


def first(obj, *paths):
    """The first of several get_path(obj, *path) that is not None."""
    for path in paths:
        v = get_path(obj, *path)
        if v is not None:
            return v
    return None


def disabled() -> bool:
    return os.environ.get(ENV_DISABLE, "").strip().lower() in ("1", "true", "yes", "on")


REGISTERED = "_rl_exporter_registered"  # the mark register_once puts on what it patched


def register_once(framework: str, target, load, patch, *, what: str, mark: bool = True):
    """The register() every integration shares: nothing under RL_EXPORTER_DISABLE=1 (the
    target is returned as given); without a target, `load()` imports the framework's own one
    (an ImportError is logged and None returned: the trainer runs without us); `patch(target)`
    wraps what it needs, once: the target is then marked in its own __dict__ (so a subclass
    of a patched class is patched on its own), and a marked target is returned as it is.
    `mark=False` for a patch that is idempotent itself (adding to a registry dict)."""
    if disabled():
        return target
    if target is None:
        try:
            target = load()
        except ImportError as e:
            log.error("rl-exporter (%s): %s is not importable here (%s); nothing registered",
                      framework, what, e)
            return None
    if mark and vars(target).get(REGISTERED):
        return target
    patch(target)
    if mark:
        setattr(target, REGISTERED, True)
    return target


def model_basename(path) -> str | None:
    """The model label from a checkpoint path or hub id ('/ckpt/Qwen2.5-7B/' -> 'Qwen2.5-7B')."""
    if not path:
        return None
    return os.path.basename(str(path).rstrip("/")) or None


def env_rank() -> int | None:
    """The process rank from the launcher's environment (RANK, SLURM_PROCID, ...), or None."""
    from ..core.pipeline import env_rank
    return env_rank()


def exporter_kwargs(overrides: dict | None = None) -> dict:
    """Exporter(...) keyword arguments from the environment, then `overrides` on top.

    RL_EXPORTER_PORT (int; "none" or "" to not serve), RL_EXPORTER_ADDR, RL_EXPORTER_RUN,
    RL_EXPORTER_OTLP_ENDPOINT. An override of None means "not given", except port=None,
    which means "no /metrics server" (as for Exporter itself).
    """
    kw: dict = {}
    port = os.environ.get(ENV_PORT)
    if port is not None:
        p = port.strip().lower()
        if p in ("", "none", "off"):
            kw["port"] = None
        else:
            try:
                kw["port"] = int(p)
            except ValueError:
                log.error("rl-exporter: %s=%r is not a port number; using the default", ENV_PORT, port)
    if os.environ.get(ENV_ADDR):
        kw["addr"] = os.environ[ENV_ADDR]
    if os.environ.get(ENV_RUN):
        kw["run"] = os.environ[ENV_RUN]
    if os.environ.get(ENV_OTLP):
        kw["otlp_endpoint"] = os.environ[ENV_OTLP]
    for k, v in (overrides or {}).items():
        if v is not None or k == "port":
            kw[k] = v
    return kw


def make_exporter(framework: str, **kwargs):
    """A new Exporter for `framework`, configured from the environment and kwargs.

    A bad OTLP setting costs the OTLP push, never the exporter: it is logged and the
    exporter starts without it.
    """
    from ..hook import Exporter
    kw = exporter_kwargs(kwargs)
    kw["framework"] = framework
    try:
        return Exporter(**kw)
    except Exception as e:
        if not kw.get("otlp_endpoint"):
            raise
        log.error("rl-exporter (%s): OTLP endpoint %r not usable (%r); exporting without OTLP",
                  framework, kw["otlp_endpoint"], e)
        kw.pop("otlp_endpoint")
        return Exporter(**kw)


def metric_values(frame) -> dict:
    """The frame without values that are never metrics (sample tables, lists, dicts, bytes).
    Strings stay: the catalog maps some string keys to state series, and the exporter counts
    the rest as rejected values."""
    return {k: v for k, v in frame.items()
            if v is not None and not isinstance(v, (bytes, list, tuple, dict, set))}


def number(v) -> float | None:
    """v as a finite float, or None (missing, a string like 'auto', a bool, NaN)."""
    if v is None or isinstance(v, (bool, str, bytes)):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def flag(v) -> float | None:
    """A boolean setting as 1.0/0.0 (True/False, "true"/"false", 1/0); None when unknown."""
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, str):
        s = v.strip().lower()
        return 1.0 if s in ("true", "1", "yes", "on") else 0.0 if s in ("false", "0", "no", "off") else None
    f = number(v)
    return None if f is None else (1.0 if f else 0.0)


def coef_if(enabled, coef) -> float | None:
    """A coefficient that only acts when its switch is on: 0 when off, None when unknown."""
    on = flag(enabled)
    if on is None:
        return None
    return number(coef) if on else 0.0


def set_config(exporter, values: dict) -> dict:
    """Export {parameter: value} as rl_config_value{parameter=...}; returns what was set.
    Values that are not finite numbers are skipped (a setting left at 'auto' is unknown)."""
    done = {}
    if exporter is None:
        return done
    for p, v in values.items():
        f = number(v)
        if f is None:
            continue
        try:
            if exporter.store.set("rl_config_value", f, {"parameter": p}):
                done[p] = f
        except Exception as e:  # a settings problem never reaches the trainer
            log.error("rl-exporter: rl_config_value{parameter=%r} not set: %r", p, e)
    # in the spool too, so a post-mortem of it reads the run as its live rules did
    try:
        spool = exporter.pipeline.spool
        if done and spool is not None:
            spool.settings(done, time.time())
    except Exception as e:  # counted by the writer where it failed to write; never raised
        log.error("rl-exporter: the run's settings not spooled: %r", e)
    return done


class ExporterOwner:
    """The lifecycle every adapter shares: an exporter it either got (and leaves open) or
    created (and closes), a log path that never raises into the trainer, and a close that
    runs once."""

    framework = "auto"

    def __init__(self, exporter=None):
        self.exporter = exporter
        self._owned = exporter is None
        self._closed = False

    def _start(self, config_values: dict | None = None, **kwargs):
        """Create this adapter's exporter (unless it was given one); never raises."""
        if self.exporter is None and not self._closed:
            try:
                self.exporter = make_exporter(self.framework, **kwargs)
                self._owned = True
                if self.exporter.url:
                    log.info("rl-exporter (%s): scrape %s", self.framework, self.exporter.url)
            except Exception as e:  # metrics must not stop the run
                log.error("rl-exporter (%s): exporter not started: %r", self.framework, e)
                self.exporter = None
        if config_values:
            set_config(self.exporter, config_values)
        return self.exporter

    def _log(self, frame, step) -> None:
        if self._closed or self.exporter is None:
            return
        try:
            self.exporter.log(metric_values(frame), step=step)
        except Exception as e:  # never raise into the trainer
            log.error("rl-exporter (%s): log failed: %r", self.framework, e)

    def close(self) -> None:
        """Flush; close the exporter only if this adapter created it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        ex = self.exporter
        if ex is None:
            return
        try:
            ex.flush()
            if self._owned:
                ex.close()
        except Exception as e:
            log.error("rl-exporter (%s): close failed: %r", self.framework, e)
