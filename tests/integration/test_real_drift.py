"""Drift between the pinned framework releases and what our adapters rely on.

With the pins (scripts/test) these pass; `scripts/test --upstream` installs the newest
releases and runs them again: a failure names the hook whose signature changed or the metric
keys the release no longer writes.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
from importlib.metadata import version

import pytest

from tests.integration.real_packages import ROOT, need
from tests.helpers import framework_keys

OPENRLHF_KEYS, VERL_KEYS = framework_keys("openrlhf"), framework_keys("verl")

pytestmark = pytest.mark.integration

PINNED = json.load(open(os.path.join(ROOT, "tests", "requirements", "pinned_keys.json")))


def params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def literals(package: str) -> set[str]:
    root = os.path.dirname(importlib.util.find_spec(package).origin)
    out: set[str] = set()
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                out.update(re.findall(r'"([^"\n]{1,120})"', text))
                out.update(re.findall(r"'([^'\n]{1,120})'", text))
    return out


def _dropped(package, keys):
    need(package)
    pinned = next(v for k, v in PINNED.items() if k.startswith(package + "=="))
    lit = literals(package)
    now = {k for k in keys if k in lit}
    return version(package), sorted(set(pinned) - now), sorted(now - set(pinned))


@pytest.mark.parametrize("package,keys", [("verl", VERL_KEYS), ("openrlhf", OPENRLHF_KEYS)])
def test_metric_keys_still_written(package, keys):
    ver, dropped, new = _dropped(package, keys)
    if new:
        print(f"{package} {ver}: keys now also written: {new}")
    assert not dropped, f"{package} {ver} no longer writes {dropped} (pinned release did)"


def test_verl_tracking_interface():
    Tracking = need("verl.utils.tracking").Tracking
    assert params(Tracking.__init__)[:5] == ["self", "project_name", "experiment_name", "default_backend", "config"]
    assert params(Tracking.log)[:3] == ["self", "data", "step"]
    assert isinstance(Tracking.supported_backend, list) and callable(Tracking.finish)


def test_openrlhf_logger_interface():
    lu = need("openrlhf.utils.logging_utils")
    for cls in (lu.WandbLogger, lu.TensorboardLogger):
        assert params(cls.log_train) == ["self", "global_step", "logs_dict"], cls
        assert params(cls.log_eval) == ["self", "global_step", "logs_dict"], cls
    path = os.path.join(os.path.dirname(lu.__file__), "..", "trainer", "ppo_trainer.py")
    src = open(path, encoding="utf-8").read()
    assert "self.tensorboard_logger.log_train(global_step, logs_dict)" in src
    assert "self.tensorboard_logger.close()" in src


def test_areal_stats_logger_interface():
    StatsLogger = need("areal.utils.stats_logger").StatsLogger
    assert params(StatsLogger.commit) == ["self", "epoch", "step", "global_step", "data"]
    assert params(StatsLogger.__init__)[:3] == ["self", "config", "ft_spec"]
    src = inspect.getsource(StatsLogger.commit)
    assert 'endswith("__count")' in src and "max(global_step, self._last_commit_step + 1)" in src


def test_swift_callback_interface():
    callbacks = need("swift.callbacks")
    base = need("swift.callbacks.base")
    mixin = need("swift.trainers.mixin")
    assert isinstance(callbacks.callbacks_map, dict)
    assert params(base.TrainerCallback.__init__) == ["self", "args", "trainer"]
    assert "callbacks_map[callback](args, self)" in inspect.getsource(mixin.SwiftMixin._get_callbacks)


def _import_error(module):
    try:
        __import__(module)
    except ModuleNotFoundError as e:
        return e.name
    return None


def test_openrlhf_trainer_module_fails_only_on_cuda_packages():
    need("openrlhf")
    missing = _import_error("openrlhf.trainer.ppo_trainer")
    # None: it imports now, and the compiled-from-source path in test_real_openrlhf can go
    assert missing in (None, "flash_attn", "deepspeed", "vllm"), missing
    print(f"openrlhf.trainer.ppo_trainer: {'imports' if missing is None else 'needs ' + missing}")


def test_swift_rlhf_trainers_fail_only_on_trl_version():
    need("swift.callbacks")
    missing = _import_error("swift.rlhf_trainers.arguments")
    assert missing is None or missing.startswith("trl."), missing
    print(f"swift.rlhf_trainers.arguments: {'imports' if missing is None else 'needs ' + missing}")
