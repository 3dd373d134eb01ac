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
import os

from ._common import disabled, get_path, make_exporter, metric_values

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


class RLExporterBackend:
    """A veRL Tracking backend: `log(data, step)` and `finish()`."""

    def __init__(self, project_name: str | None = None, experiment_name: str | None = None,
                 config=None, *, exporter=None, **exporter_kwargs):
        self._owned = exporter is None
        self.exporter = exporter
        self._finished = False
        if exporter is None:
            kw = settings_from_config(config)
            kw.update({k: v for k, v in exporter_kwargs.items() if v is not None})
            kw.setdefault("run", os.environ.get("RL_EXPORTER_RUN") or experiment_name)
            algo = get_path(config, "algorithm", "adv_estimator")
            kw.setdefault("algorithm", str(algo) if algo is not None else None)
            path = get_path(config, "actor_rollout_ref", "model", "path")
            kw.setdefault("model", os.path.basename(str(path).rstrip("/")) if path else None)
            self.exporter = make_exporter(FRAMEWORK, **kw)
            if self.exporter.url:
                print(f"rl-exporter (verl): scrape {self.exporter.url}")
        try:  # phases in progress: veRL's marked_timer phases (gen, update_actor, ...) while open
            from ..timers import track_loaded_phase_timers
            track_loaded_phase_timers(self.exporter)
        except Exception as e:
            log.error("rl-exporter (verl): phase tracking off: %r", e)

    def log(self, data, step):
        """Called by Tracking.log(data=metrics, step=global_steps) once per step."""
        if self._finished or self.exporter is None:
            return
        try:
            self.exporter.log(metric_values(data), step=step)
        except Exception as e:  # never raise into the trainer
            log.error("rl-exporter (verl): log failed: %r", e)

    def finish(self, exit_code: int = 0):
        if self._finished:
            return
        self._finished = True
        if self.exporter is not None:
            self.exporter.flush()
            if self._owned:
                self.exporter.close()


def _tracking_class():
    from verl.utils.tracking import Tracking
    return Tracking


def register(tracking_cls=None):
    """Teach veRL's Tracking the backend name "rl_exporter". Idempotent; returns the class.

    Accepts an explicit class (tests, forks with their own Tracking); by default patches
    verl.utils.tracking.Tracking. With RL_EXPORTER_DISABLE=1 it does nothing.
    """
    if disabled():
        return tracking_cls
    if tracking_cls is None:
        try:
            tracking_cls = _tracking_class()
        except ImportError as e:
            log.error("rl-exporter (verl): verl is not importable here (%s); nothing registered", e)
            return None
    if tracking_cls.__dict__.get("_rl_exporter_registered"):
        return tracking_cls
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
    tracking_cls._rl_exporter_registered = True
    return tracking_cls
