"""veRL: the rl_exporter backend driven exactly as veRL's Tracking drives its backends.

`Tracking` below reproduces verl/utils/tracking.py (verl-project/verl 1dda039b9c63, 2026-08-22; the released 0.9.1 is exercised for real in tests/integration/test_real_verl.py): the
`supported_backend` list checked by an assert, per-name construction in __init__,
`log(data, step)` fanning out as `logger_instance.log(data=data, step=step)`, `finish()`
finishing the known backends by name once, and `__del__` calling finish(). RayPPOTrainer.fit()
logs validation-before-train at step 0, then one merged dict per step with
`logger.log(data=metrics, step=self.global_steps)`, and never calls finish() itself: the
Tracking object's __del__ does.
"""
from __future__ import annotations

import gc
import sys
import types
import urllib.request

import numpy as np
import pytest

from exporter.integrations import verl as rlx_verl
from exporter.testing import scrape

from ._check import assert_exported, numeric_frame
from tests.helpers import framework_keys, scrape_text

VERL_KEYS = framework_keys("verl")


class LocalLogger:  # verl.utils.logger.LocalLogger, console backend (prints one line per step)
    def __init__(self, print_to_console=True):
        self.lines = []

    def log(self, data, step):
        self.lines.append(f"step:{step} - " + " - ".join(f"{k}:{v!r}" for k, v in data.items()))

    def finish(self):
        pass


def make_tracking_class():
    class Tracking:
        supported_backend = ["wandb", "mlflow", "swanlab", "vemlp_wandb", "tensorboard", "console",
                             "clearml", "trackio", "file", "rl_insight"]

        def __init__(self, project_name, experiment_name, default_backend="console", config=None):
            if isinstance(default_backend, str):
                default_backend = [default_backend]
            for backend in default_backend:
                if backend == "tracking":
                    pass
                else:
                    assert backend in self.supported_backend, f"{backend} is not supported"
            self.logger = {}
            self._finished = False
            if "console" in default_backend:
                self.console_logger = LocalLogger(print_to_console=True)
                self.logger["console"] = self.console_logger

        def log(self, data, step, backend=None):
            for default_backend, logger_instance in self.logger.items():
                if backend is None or default_backend in backend:
                    logger_instance.log(data=data, step=step)

        def finish(self, exit_code: int = 0):
            if getattr(self, "_finished", False):
                return
            self._finished = True
            loggers = getattr(self, "logger", {})
            if "console" in loggers:
                loggers["console"].finish()

        def __del__(self):
            self.finish()

    return Tracking


def verl_step_frame(step: int) -> dict:
    """One merged fit() dict: every real veRL key; worker-reduced values are numpy scalars."""
    frame = numeric_frame(VERL_KEYS, step)
    for k in list(frame):
        if k.startswith(("actor/", "critic/vf", "critic/grad", "critic/lr")):
            frame[k] = np.float64(frame[k])
    frame["training/global_step"] = step
    frame["training/epoch"] = 0
    return frame


CONFIG = {"trainer": {"project_name": "p", "experiment_name": "grpo-qwen-a", "logger": ["console", "rl_exporter"],
                      "rl_exporter": {"port": 0}},
          "algorithm": {"adv_estimator": "grpo"},
          "actor_rollout_ref": {"model": {"path": "/models/Qwen2.5-0.5B/"}}}


def test_unregistered_name_is_rejected_like_verl_does():
    Tracking = make_tracking_class()
    with pytest.raises(AssertionError, match="rl_exporter is not supported"):
        Tracking("p", "e", default_backend=["console", "rl_exporter"])


def test_tracking_fit_sequence_exports_every_step_and_finishes(monkeypatch):
    monkeypatch.setenv("RL_EXPORTER_FINAL_SCRAPE_GRACE", "0")  # scraped once: no end hold here
    Tracking = make_tracking_class()
    assert rlx_verl.register(Tracking) is Tracking
    assert rlx_verl.register(Tracking) is Tracking  # idempotent: no double wrapping
    assert Tracking.supported_backend.count("rl_exporter") == 1

    logger = Tracking(project_name="p", experiment_name="grpo-qwen-a",
                      default_backend=CONFIG["trainer"]["logger"], config=CONFIG)
    backend = logger.logger["rl_exporter"]
    ex = backend.exporter
    assert ex.run == "grpo-qwen-a" and ex.framework == "verl"

    val = {"val-core/openai/gsm8k/reward/mean@1": 0.41, "val-aux/openai/gsm8k/reward/std@1": 0.2}
    logger.log(data=val, step=0)                       # validation before training
    frames = [val]
    for step in (1, 2, 3):
        f = verl_step_frame(step)
        logger.log(data=f, step=step)
        frames.append(f)

    series = scrape(ex)
    assert_exported(series, frames, "verl")
    assert series[("rl_training_step", ())] == 3.0
    info = [k for k in series if k[0] == "rl_run_info"][0][1]
    assert ("algorithm", "grpo") in info and ("model", "Qwen2.5-0.5B") in info and ("framework", "verl") in info
    # the console backend saw the same calls (the fan-out really went through Tracking)
    assert len(logger.console_logger.lines) == 4

    # also over HTTP, as Prometheus would
    url = ex.url
    body = scrape_text(url)
    assert 'rl_training_step{run="grpo-qwen-a"} 3.0' in body

    # fit() returns -> Tracking is garbage-collected -> __del__ -> finish() -> our finish()
    del logger
    gc.collect()
    assert backend._closed and ex._closed
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2).read()


def test_finish_is_idempotent_and_log_after_finish_is_dropped():
    Tracking = make_tracking_class()
    rlx_verl.register(Tracking)
    t = Tracking("p", "e", default_backend="rl_exporter", config={"trainer": {"rl_exporter": {"port": None}}})
    b = t.logger["rl_exporter"]
    t.log(data={"actor/pg_loss": 1.0}, step=1)
    t.finish()
    t.finish()
    b.log({"actor/pg_loss": 2.0}, 2)  # after finish: ignored, no error
    assert b._closed and b.exporter._closed


def test_bad_settings_are_reported_not_fatal(caplog):
    Tracking = make_tracking_class()
    rlx_verl.register(Tracking)
    cfg = {"trainer": {"rl_exporter": {"port": None, "colour": "blue"}}}
    t = Tracking("p", "e", default_backend=["console", "rl_exporter"], config=cfg)
    assert "rl_exporter" in t.logger
    assert any("colour" in r.getMessage() for r in caplog.records)
    t.finish()


def test_register_patches_verl_module_when_importable(monkeypatch):
    Tracking = make_tracking_class()
    for name in ("verl", "verl.utils", "verl.utils.tracking"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["verl.utils.tracking"].Tracking = Tracking
    sys.modules.pop("exporter.integrations._verl_plugin", None)
    import exporter.integrations._verl_plugin  # noqa: F401  (the verl.plugins entry point)
    assert "rl_exporter" in Tracking.supported_backend
    t = Tracking("p", "e", default_backend=["rl_exporter"], config={"trainer": {"rl_exporter": {"port": None}}})
    t.finish()


def test_register_without_verl_is_a_logged_noop(monkeypatch, caplog):
    for name in ("verl", "verl.utils", "verl.utils.tracking"):  # import -> ImportError, even
        monkeypatch.setitem(sys.modules, name, None)             # when verl is installed
    assert rlx_verl.register() is None
    assert any("not importable" in r.getMessage() for r in caplog.records)
