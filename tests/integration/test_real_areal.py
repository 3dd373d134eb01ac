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
    # AReaL's defaults: pi_old is the engine's log-probs (recompute_logprob and
    # use_decoupled_loss False), no reference model (kl_ctl acts on nothing), synchronous
    # (max_head_offpolicyness 0), actor and rollout on separate GPUs
    assert config_series(series) == {"n_mini": 4.0, "max_grad_norm": 0.5, "max_response_length": 2048.0,
                                     "rollout_gpu_memory_fraction": 0.8, "pi_old_from_rollout": 1.0,
                                     "kl_loss_coef": 0.0, "kl_reward_coef": 0.0,
                                     "async_training": 0.0, "colocated": 0.0}
    sl.close()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2).read()


def test_vllm_rollout_reads_vllm_memory_fraction(tmp_path):
    from exporter.integrations.areal import config_values
    cfg = load_config(tmp_path, "vllm:\n  gpu_memory_utilization: 0.65\n")
    cfg.rollout.backend = "vllm"
    assert config_values(cfg)["rollout_gpu_memory_fraction"] == 0.65


REF = """ref:
  backend: fsdp:d1
  experiment_name: areal-real
  trial_name: t1
  path: /ckpt/Qwen3-1.7B/
"""


def test_kl_coefficient_and_mode_from_a_real_config(tmp_path):
    from exporter.integrations.areal import config_values
    # kl_ctl scales kl_rewards (-kl_ctl x KL, areal/trainer/ppo/actor.py:202) only with a
    # reference model (rl_trainer.py:179); the decoupled loss recomputes pi_old
    cfg = load_config(tmp_path, REF)
    cfg.actor.kl_ctl = 0.05
    assert config_values(cfg)["kl_reward_coef"] == 0.05
    cfg.actor.use_decoupled_loss = True
    cfg.rollout.max_head_offpolicyness = 4
    got = config_values(cfg)
    assert (got["pi_old_from_rollout"], got["async_training"]) == (0.0, 1.0)


def kl_run(tmp_path, kl_of_step, steps=100):
    """AReaL's StatsLogger commits of a run with a reference model (kl_ctl 0.1) through the
    integration, one /metrics scrape a minute: the rl_* series Prometheus would store."""
    import math
    stats_logger = need("areal.utils.stats_logger")
    io_struct = need("areal.api.io_struct")
    from exporter.integrations.areal import attach
    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = load_config(tmp_path, REF)
    cfg.actor.kl_ctl = 0.1
    sl = stats_logger.StatsLogger(cfg, io_struct.FinetuneSpec(total_train_epochs=1, dataset_size=64,
                                                                train_batch_size=8))
    hook = attach(sl, port=0, addr="127.0.0.1")
    scrapes = []
    try:
        for step in range(steps):
            kl = kl_of_step(step)
            # kl_rewards = -kl_ctl * kl_estimator(old, ref) (areal/trainer/ppo/actor.py:202), as
            # the stats tracker exports it (avg/min/max over n_valid_tokens)
            sl.commit(0, step, step, {
                "ppo_actor/kl_rewards/avg": -0.1 * kl, "ppo_actor/kl_rewards/min": -0.3 * kl,
                "ppo_actor/kl_rewards/max": 0.0, "ppo_actor/n_valid_tokens": 4096.0,
                "ppo_actor/task_reward/avg": 0.5 + 0.1 * math.sin(step),
                "ppo_actor/update/entropy/avg": 0.6, "ppo_actor/update/grad_norm": 0.4})
            hook.exporter.flush()
            scrapes.append(scrape_url(hook.exporter.url))
    finally:
        sl.close()
    return scrapes


def promtool_alerts(tmp_path, scrapes, alert: str) -> bool:
    """Whether `alert` fires at the last minute of the scrapes, evaluated by promtool with the
    shipped rule file over the scraped rl_* series (one scrape a minute)."""
    import subprocess
    import yaml
    from pathlib import Path
    names = sorted({k for s in scrapes for k in s if k[0].startswith("rl_")})
    series = []
    for name, labels in names:
        lab = ", ".join(['run="r"'] + [f'{k}="{v}"' for k, v in labels])
        values = " ".join(str(s[(name, labels)]) if (name, labels) in s else "_" for s in scrapes)
        series.append({"series": f"{name}{{{lab}}}", "values": values})
    rules = Path(__file__).resolve().parents[2] / "exporter" / "rules" / "rl-exporter.rules.yaml"
    end = f"{len(scrapes) - 1}m"
    doc = {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": f'count(ALERTS{{alertname="{alert}", alertstate="firing"}}) or vector(0)',
                              "eval_time": end, "exp_samples": [{"labels": "{}", "value": 1}]}]}]}
    path = tmp_path / "case.test.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    p = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=300)
    return p.returncode == 0


def test_reference_kl_runaway_fires_on_an_areal_kl_blowup(tmp_path):
    pytest.importorskip("yaml")
    from tests.conftest import require_binary
    require_binary("promtool")
    # KL 0.03 for 80 steps, then 0.15 rising 0.05 a step: -kl_ctl x KL in AReaL's kl_rewards;
    # read 10 steps into the blow-up, against the 0.03 baseline before it
    blowup = kl_run(tmp_path / "a", lambda s: 0.03 if s < 80 else 0.15 + 0.05 * (s - 80), steps=91)
    assert blowup[-1][("rl_reward_kl_term", ())] == pytest.approx(-0.1 * (0.15 + 0.05 * 10))
    assert blowup[-1][("rl_config_value", (("parameter", "kl_reward_coef"),))] == 0.1
    assert promtool_alerts(tmp_path / "a", blowup, "RLReferenceKLRunaway")
    # the same run at a steady KL 0.03: silent
    steady = kl_run(tmp_path / "b", lambda s: 0.03, steps=91)
    assert not promtool_alerts(tmp_path / "b", steady, "RLReferenceKLRunaway")
