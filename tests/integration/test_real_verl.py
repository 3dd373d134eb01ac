"""veRL (the released package, tests/requirements/verl.txt): our "rl_exporter" backend inside
veRL's own `Tracking`, configured by veRL's own Hydra trainer config.

veRL's load_plugins() imports the `verl.plugins` entry point rl-exporter declares; register()
is what that import runs. The config is composed from verl/trainer/config/ppo_trainer.yaml
with command-line style overrides, as `python -m verl.trainer.main_ppo ...` does.
"""
from __future__ import annotations

import os
import urllib.error
import urllib.request

import pytest

from tests.integration.real_packages import config_series, need, scrape_url
from tests.unit.integrations._check import assert_exported, numeric_frame
from tests.helpers import framework_keys

VERL_KEYS = framework_keys("verl")

pytestmark = pytest.mark.integration

OVERRIDES = [
    "data.train_batch_size=64",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_epochs=2",
    "data.max_response_length=1024",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.7",
    "actor_rollout_ref.actor.optim.clip_grad=0.5",
    "actor_rollout_ref.model.path=/ckpt/Qwen2.5-0.5B-Instruct/",
    "algorithm.adv_estimator=grpo",
    "trainer.experiment_name=verl-real",
    "+trainer.rl_exporter.port=0",
    "+trainer.rl_exporter.addr=127.0.0.1",
]


def compose_config(overrides):
    need("hydra", "veRL composes its trainer config with Hydra")
    verl = need("verl")
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    GlobalHydra.instance().clear()  # AReaL's loader leaves its own Hydra context behind
    d = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=d, version_base=None):
        return compose("ppo_trainer", overrides=list(overrides))


def test_tracking_serves_what_verl_logs_with_config_values():
    tracking = need("verl.utils.tracking")
    from exporter.integrations import verl as rlx
    rlx.register()  # what the verl.plugins entry point runs; idempotent
    Tracking = tracking.Tracking
    assert "rl_exporter" in Tracking.supported_backend

    cfg = compose_config(OVERRIDES)
    t = Tracking(project_name="p", experiment_name=cfg.trainer.experiment_name,
                 default_backend=["console", "rl_exporter"], config=cfg)
    backend = t.logger["rl_exporter"]
    url = backend.exporter.url
    assert url and url.startswith("http://127.0.0.1:")

    frames = [numeric_frame(VERL_KEYS, step) for step in (1, 2, 3)]
    for step, frame in enumerate(frames, 1):
        t.log(data=frame, step=step)
    backend.exporter.flush()
    series = scrape_url(url)
    assert_exported(series, frames, "verl")
    assert series[("rl_training_step", ())] == 3
    info = [dict(l) for n, l in series if n == "rl_run_info"]
    assert info and info[0]["framework"] == "verl" and info[0]["algorithm"] == "grpo"
    assert info[0]["model"] == "Qwen2.5-0.5B-Instruct"
    # 2 epochs x 64/16 mini-batches; clip_grad; response_length follows data.max_response_length
    assert config_series(series) == {"n_mini": 8.0, "max_grad_norm": 0.5,
                                     "max_response_length": 1024.0,
                                     "rollout_gpu_memory_fraction": 0.7, "pi_old_from_rollout": 0.0, "kl_loss_coef": 0.0,
                                     "kl_reward_coef": 0.0, "async_training": 0.0, "colocated": 1.0}

    t.finish()
    assert backend._closed and backend.exporter._closed
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2).read()


def test_default_config_values():
    need("verl.utils.tracking")
    from exporter.integrations.verl import config_values
    cfg = compose_config([])
    # veRL's defaults: train_batch_size 1024 / ppo_mini_batch_size 256, 1 epoch
    # the v1 trainer in sync mode (trainer.v1.trainer_mode, _generated_ppo_trainer.yaml:981) on
    # the hybrid engine; no rollout-correction bypass, use_kl_loss and use_kl_in_reward false
    assert config_values(cfg) == {"n_mini": 4.0, "max_grad_norm": 1.0, "max_response_length": 512.0,
                                  "rollout_gpu_memory_fraction": 0.5, "pi_old_from_rollout": 0.0,
                                  "kl_loss_coef": 0.0, "kl_reward_coef": 0.0,
                                  "async_training": 0.0, "colocated": 1.0}
    bypass = compose_config(["algorithm.rollout_correction.bypass_mode=true",
                             "actor_rollout_ref.actor.use_kl_loss=true",
                             "trainer.v1.trainer_mode=separate_async"])
    got = config_values(bypass)
    assert (got["pi_old_from_rollout"], got["kl_loss_coef"], got["async_training"],
            got["colocated"]) == (1.0, 0.001, 1.0, 0.0)
