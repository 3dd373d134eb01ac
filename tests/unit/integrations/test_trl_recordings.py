"""The recorded TRL GRPOTrainer runs (tests/data/trl/*.spool, made by tests/data/trl/record.py)
read back with our spool parser, and each shows the dynamics it was recorded for. Guards the
recordings that the alert replays use: a re-recording that loses its pathology fails here."""
from __future__ import annotations

import json
import os
import statistics

import pytest

from exporter.logs.spool import SpoolParser

DIR = os.path.join(os.path.dirname(__file__), "..", "..", "data", "trl")
RUNS = ("healthy", "lr_x1000", "constant_reward", "truncation", "entropy_collapse", "reward_zero",
        "reward_unwired", "lr_x10000", "beta_x10000")


def load(run):
    path = os.path.join(DIR, f"{run}.spool")
    assert os.path.getsize(path) < 1_000_000
    p = SpoolParser()
    steps = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            for fr in p.feed(line):
                if "loss" in fr.data:
                    steps[int(fr.step)] = fr.data
    assert not p.rejected, p.rejected
    return steps


@pytest.fixture(scope="module")
def runs():
    return {r: load(r) for r in RUNS}


def series(steps, key, lo=1, hi=10**9):
    return [steps[s][key] for s in sorted(steps) if lo <= s <= hi]


def test_every_run_has_300_logged_steps_and_its_settings(runs):
    for run, steps in runs.items():
        assert sorted(steps) == list(range(1, 301)), run
        meta = json.load(open(os.path.join(DIR, f"{run}.json")))
        assert meta["rl_config_value"]["n_mini"] == 1.0  # on-policy GRPO: nothing can be clipped
        assert meta["rl_config_value"]["max_response_length"] == meta["max_completion_length"]


def test_healthy_learns_without_collapse_or_truncation(runs):
    h = runs["healthy"]
    assert statistics.mean(series(h, "reward", 201, 300)) > statistics.mean(series(h, "reward", 1, 20)) + 0.3
    assert min(series(h, "entropy")) > 0.5
    assert max(series(h, "completions/clipped_ratio")) <= 0.125
    assert max(series(h, "clip_ratio/region_mean")) == 0.0
    assert sum(g > 0 for g in series(h, "grad_norm")) >= 295


def test_lr_x1000_throws_the_policy_off_the_reference_at_once(runs):
    """lr 0.1 (1000x the healthy 1e-4): no NaN and no grad-norm explosion (Adam's step size
    is the learning rate, and TRL reports the pre-clip norm of a policy it keeps wrecking);
    the first update throws the policy far from the reference and entropy swings."""
    r, h = runs["lr_x1000"], runs["healthy"]
    assert max(series(r, "kl", 2, 3)) > 2.0 and min(series(r, "kl", 2)) > 0.5
    assert max(series(h, "kl", 2, 30)) < 0.1
    assert min(series(r, "entropy", 2, 4)) < 0.5 * r[1]["entropy"]
    assert all(g == g and g < 1e3 for g in series(r, "grad_norm"))


def test_constant_reward_has_no_learning_signal(runs):
    c = runs["constant_reward"]
    for key, value in (("grad_norm", 0.0), ("reward_std", 0.0), ("frac_reward_zero_std", 1.0), ("kl", 0.0),
                       ("loss", 0.0)):
        assert set(series(c, key)) == {value}, key
    assert min(series(c, "entropy")) > 2.0  # nothing moves


def test_truncation_clips_most_completions(runs):
    t = runs["truncation"]
    assert statistics.mean(series(t, "completions/clipped_ratio")) >= 0.85
    assert max(series(t, "completions/mean_length")) <= 2.0


def test_entropy_collapse(runs):
    e = runs["entropy_collapse"]
    assert statistics.mean(series(e, "entropy", 1, 10)) > 1.5
    assert max(series(e, "entropy", 60)) < 0.2 and statistics.mean(series(e, "entropy", 60)) < 0.02
    assert min(series(e, "reward", 60)) >= 0.95


def test_reward_zero_scores_every_sample_zero(runs):
    z = runs["reward_zero"]
    for key in ("reward", "reward_std", "grad_norm"):
        assert set(series(z, key)) == {0.0}, key
    assert set(series(z, "frac_reward_zero_std")) == {1.0}


def test_reward_unwired_earns_only_the_constant_bonus(runs):
    u = runs["reward_unwired"]
    assert set(series(u, "reward")) == {0.5} and set(series(u, "reward_std")) == {0.0}
    assert set(series(u, "grad_norm")) == {0.0}


def test_lr_x10000_is_broken_from_the_first_update(runs):
    """lr 1.0: the KL to the reference is above 1 from step 2 (no baseline could hold it) and
    the entropy is at 0 within a few steps."""
    r = runs["lr_x10000"]
    assert r[1]["kl"] == 0.0 and min(series(r, "kl", 2)) > 1.0
    assert min(series(r, "entropy", 2, 10)) < 0.01
    assert statistics.median(series(r, "entropy", 100)) < 0.01


def test_beta_x10000_has_a_loss_and_gradient_no_healthy_run_has(runs):
    """beta 1000 (10,000x the healthy 0.1) and lr 0.1: the KL term makes the loss thousands and
    the pre-clip gradient norm thousands of times max_grad_norm 1.0 from step 2."""
    b = runs["beta_x10000"]
    assert min(series(b, "loss", 2, 10)) > 1000
    assert max(series(b, "grad_norm", 2, 10)) > 1000 and b[1]["grad_norm"] < 10
    meta = json.load(open(os.path.join(DIR, "beta_x10000.json")))
    assert meta["rl_config_value"]["max_grad_norm"] == 1.0
