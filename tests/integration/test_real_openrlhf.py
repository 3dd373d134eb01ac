"""OpenRLHF (the released package, tests/requirements/openrlhf.txt): our logger in the trainer's
logger slot, called by the release's own `PPOTrainer.save_logs_and_checkpoints`, with args
parsed by the release's own train_ppo_ray argument parser and `hierarchize`.

On CPU, `openrlhf.trainer.ppo_trainer` does not import: openrlhf.models.ring_attn_utils imports
flash_attn (CUDA-only wheels) and openrlhf.models.utils imports deepspeed (no wheel; its sdist
build needs a CUDA toolchain for its ops). So the method is compiled from the installed
ppo_trainer.py and the parser from the installed cli/train_ppo_ray.py (its `__main__` block,
up to parse_args), not re-typed here: the code that runs is the release's, line for line.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
import types
import urllib.error
import urllib.request

import pytest

from tests.integration.real_packages import config_series, need, scrape_url, source_function
from tests.unit.integrations._check import assert_exported, numeric_frame
from tests.helpers import framework_keys

OPENRLHF_KEYS = framework_keys("openrlhf")

pytestmark = pytest.mark.integration


def _package_file(*parts):
    openrlhf = need("openrlhf")
    return os.path.join(os.path.dirname(openrlhf.__file__), *parts)


def real_parser() -> argparse.ArgumentParser:
    """train_ppo_ray.py's own parser: its __main__ block up to `args = parser.parse_args()`."""
    path = _package_file("cli", "train_ppo_ray.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    main = next(n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))
    # the file's standard-library imports (argparse, os, datetime), not ray/vllm
    body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and all(
        (a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0] in sys.stdlib_module_names
        for a in n.names)]
    for stmt in main.body:
        if isinstance(stmt, ast.Assign) and "parse_args" in ast.unparse(stmt.value):
            break
        body.append(stmt)
    ns: dict = {}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), ns)
    return ns["parser"]


def real_args(argv):
    config = need("openrlhf.utils.config")
    return config.hierarchize(real_parser().parse_args(argv))


ARGV = ["--actor.model_name_or_path", "/ckpt/Qwen2.5-7B/", "--algo.advantage.estimator", "group_norm",
        "--rollout.batch_size", "128", "--rollout.n_samples_per_prompt", "8",
        "--train.batch_size", "256", "--train.max_epochs", "2", "--actor.max_norm", "0.8",
        "--rollout.max_new_tokens", "4096", "--vllm.gpu_memory_utilization", "0.6",
        "--logger.wandb.run_name", "orlhf-real", "--logger.logging_steps", "1"]


def test_save_logs_and_checkpoints_feeds_our_logger():
    ray = need("ray", "ppo_trainer.py's checkpoint branch calls ray.get")
    from exporter.integrations.openrlhf import attach
    path = _package_file("trainer", "ppo_trainer.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    ppo = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PPOTrainer")
    # PPOTrainer inherits the method from BasePPOTrainer (0.11); a release that overrides it
    # changes the path under test
    assert [ast.unparse(b) for b in ppo.bases] == ["BasePPOTrainer"]
    assert not any(getattr(n, "name", "") == "save_logs_and_checkpoints" for n in ppo.body)
    save_logs = source_function(path, "BasePPOTrainer.save_logs_and_checkpoints", {"ray": ray})
    args = real_args(ARGV)
    args.ckpt.save_steps = float("inf")  # what PPOTrainer does for save_steps=-1: no checkpoint
    trainer = types.SimpleNamespace(args=args, wandb_logger=None, tensorboard_logger=None)
    ours = attach(trainer, port=0, addr="127.0.0.1")
    assert trainer.tensorboard_logger is ours

    frames = [numeric_frame(OPENRLHF_KEYS, step) for step in (1, 2, 3)]
    for step, frame in enumerate(frames, 1):
        save_logs(trainer, step, dict(frame, generated_samples=("some text", 0.5)))
    ours.exporter.flush()
    series = scrape_url(ours.exporter.url)
    assert_exported(series, frames, "openrlhf")
    assert series[("rl_training_step", ())] == 3
    info = [dict(l) for n, l in series if n == "rl_run_info"][0]
    assert (info["framework"], info["algorithm"], info["model"]) == ("openrlhf", "group_norm", "Qwen2.5-7B")
    # 2 epochs x ceil(128 prompts x 8 samples / 256)
    assert config_series(series) == {"n_mini": 8.0, "max_grad_norm": 0.8, "max_response_length": 4096.0,
                                     "rollout_gpu_memory_fraction": 0.6, "pi_old_from_rollout": 0.0,
                                     "kl_loss_coef": 0.0, "kl_reward_coef": 0.01,
                                     "async_training": 0.0, "colocated": 0.0}
    url = ours.exporter.url
    trainer.tensorboard_logger.close()  # end of fit()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2).read()


def test_default_args_config_values():
    from exporter.integrations.openrlhf import config_values
    args = real_args([])
    # defaults: rollout.batch_size 1024 x 1 sample / train.batch_size 128, 1 epoch;
    # rollout.max_new_tokens unset (per-prompt limit): not exported
    # algo.kl.init_coef 0.01 without --algo.kl.use_loss: the KL goes into the reward
    assert config_values(args) == {"n_mini": 8.0, "max_grad_norm": 1.0, "rollout_gpu_memory_fraction": 0.95,
                                   "pi_old_from_rollout": 0.0, "kl_loss_coef": 0.0,
                                   "kl_reward_coef": 0.01, "async_training": 0.0, "colocated": 0.0}
    loss = real_args(["--algo.kl.use_loss", "--train.async_enable"])
    got = config_values(loss)
    assert (got["kl_loss_coef"], got["kl_reward_coef"], got["async_training"]) == (0.01, 0.0, 1.0)
