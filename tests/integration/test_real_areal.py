"""AReaL (the released package, tests/requirements/areal.txt): our hook on AReaL's own
`StatsLogger`, built from an experiment config that AReaL's own loader (`load_expr_config`,
Hydra + the GRPOConfig dataclass) reads from a YAML file, as `python -m areal... --config` does.
wandb and swanlab run in their "disabled" mode (no network); StatsLogger still imports them.
"""
from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from tests.integration.real_packages import config_series, need, scrape_url
from tests.unit.integrations._check import assert_exported, numeric_frame
from tests.helpers import framework_keys

AREAL_KEYS = framework_keys("areal")

pytestmark = pytest.mark.integration

YAML = """
experiment_name: areal-real
trial_name: t1
allocation_mode: sglang:d1+fsdp:d1
cluster:
  fileroot: {root}
  name_resolve:
    type: nfs
    nfs_record_root: {root}/name_resolve
actor:
  backend: fsdp:d1
  experiment_name: ${{experiment_name}}
  trial_name: ${{trial_name}}
  path: /ckpt/Qwen3-1.7B/
  ppo_n_minibatches: 4
  optimizer:
    gradient_clipping: 0.5
gconfig:
  max_new_tokens: 2048
sglang:
  mem_fraction_static: 0.8
rollout:
  backend: sglang
  experiment_name: ${{experiment_name}}
  trial_name: ${{trial_name}}
train_dataset:
  path: /data/gsm8k
  type: rl
  batch_size: 8
stats_logger:
  experiment_name: ${{experiment_name}}
  trial_name: ${{trial_name}}
  fileroot: {root}
  wandb:
    mode: disabled
  swanlab:
    mode: disabled
""" + "".join(f"""{sec}:
  experiment_name: ${{{{experiment_name}}}}
  trial_name: ${{{{trial_name}}}}
  fileroot: {{root}}
""" for sec in ("saver", "evaluator", "recover"))


def load_config(tmp_path, extra=""):
    cli_args = need("areal.api.cli_args")
    path = tmp_path / "grpo.yaml"
    path.write_text(YAML.format(root=tmp_path) + extra)
    cfg, _ = cli_args.load_expr_config(["--config", str(path)], cli_args.GRPOConfig)
    return cfg


def test_stats_logger_commits_reach_metrics_with_areal_steps(tmp_path):
    stats_logger = need("areal.utils.stats_logger")
    io_struct = need("areal.api.io_struct")
    from exporter.integrations.areal import attach
    cfg = load_config(tmp_path)
    sl = stats_logger.StatsLogger(cfg, io_struct.FinetuneSpec(total_train_epochs=1, dataset_size=64,
                                                                train_batch_size=8))
    hook = attach(sl, port=0, addr="127.0.0.1")
    frames = [numeric_frame(AREAL_KEYS, step) for step in range(3)]
    for step, frame in enumerate(frames):
        sl.commit(0, step, step, dict(frame, **{"ppo_actor/update/actor_loss__count": 8}))
    # a list commit: two items at consecutive steps, as StatsLogger logs them
    sl.commit(0, 3, 3, [{"ppo_actor/update/actor_loss/avg": 0.25}, {"ppo_actor/update/actor_loss/avg": 0.5}])
    assert sl._last_commit_step == hook._last_commit_step == 4
    hook.exporter.flush()
    url = hook.exporter.url
    series = scrape_url(url)
    assert_exported(series, frames + [{"ppo_actor/update/actor_loss/avg": 0.5}], "areal")
    assert series[("rl_training_step", ())] == 4
    assert not any("__count" in dict(l).get("key", "") for n, l in series)
    info = [dict(l) for n, l in series if n == "rl_run_info"][0]
    assert (info["framework"], info["model"]) == ("areal", "Qwen3-1.7B")
    assert config_series(series) == {"n_mini": 4.0, "max_grad_norm": 0.5, "max_response_length": 2048.0,
                                     "rollout_gpu_memory_fraction": 0.8}
    sl.close()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2).read()


def test_vllm_rollout_reads_vllm_memory_fraction(tmp_path):
    from exporter.integrations.areal import config_values
    cfg = load_config(tmp_path, "vllm:\n  gpu_memory_utilization: 0.65\n")
    cfg.rollout.backend = "vllm"
    assert config_values(cfg)["rollout_gpu_memory_fraction"] == 0.65
