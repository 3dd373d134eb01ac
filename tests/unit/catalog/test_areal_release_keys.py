"""Every key a whole AReaL run of each release printed (tests/data/runs/areal/KEYS-<release>.txt,
taken from the run's own StatsLogger tables) reaches a named metric or a deliberate fallback:
AReaL builds its keys at run time, so its releases are mined from run output, not source."""
from pathlib import Path

import pytest

from exporter.catalog import CATALOG

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs" / "areal"
KEYS = sorted(RUNS.glob("KEYS-*.txt"))


def keys(path):
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and ln[0] != "#"]


def test_there_are_release_key_lists():
    assert KEYS


@pytest.mark.parametrize("path", KEYS, ids=lambda p: p.stem)
def test_release_keys_are_decided(path):
    missed = [k for k in keys(path) if (r := CATALOG.resolve(k, "areal")).fallback
              and not r.deliberate]
    assert not missed, f"{path.name}: {missed}"


def test_areal_03_scope_names_the_headline_series():
    names = {k: CATALOG.resolve(k, "areal").metric.name for k in (
        "grpo_actor/task_reward/avg", "grpo_actor/entropy/avg", "grpo_actor/grad_norm",
        "grpo_actor/actor_loss/avg", "grpo_actor/no_eos_ratios/avg", "grpo_actor/clip_ratio/avg")}
    assert names == {"grpo_actor/task_reward/avg": "rl_score", "grpo_actor/entropy/avg": "rl_entropy",
                     "grpo_actor/grad_norm": "rl_grad_norm",
                     "grpo_actor/actor_loss/avg": "rl_policy_loss",
                     "grpo_actor/no_eos_ratios/avg": "rl_batch_longest_sequence_ratio",
                     "grpo_actor/clip_ratio/avg": "rl_policy_clip_ratio"}
