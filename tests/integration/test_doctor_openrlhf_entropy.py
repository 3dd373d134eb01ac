"""OpenRLHF's entropy, in OpenRLHF's own console format, replayed through doctor with the real
engine: `entropy_loss` is aggregate_loss(output.entropy) (openrlhf 0.11.2
trainer/ray/ppo_actor.py:346-351), the entropy itself, so a collapse of it is RLEntropyCollapse;
a healthy run's slow decay is not."""
from __future__ import annotations

import math
import random

import pytest

from tests.integration.test_doctor import doctor_json, needs_engine

pytestmark = [pytest.mark.integration, needs_engine]


def openrlhf_log(entropy) -> str:
    """120 global steps of `✨ Global step N: {status}` (ppo_trainer.py:551), 60 s apart."""
    rng = random.Random(3)
    out = []
    for step in range(1, 121):
        status = {"policy_loss": round(rng.uniform(-0.01, 0.01), 5), "entropy_loss": round(entropy(step), 4),
                  "actor_lr": 1e-06, "actor_grad_norm": round(rng.uniform(0.3, 0.6), 3),
                  "ppo_clip_ratio": round(rng.uniform(0.001, 0.01), 4), "ppo_kl": round(rng.uniform(1e-4, 1e-3), 6),
                  "kl": round(0.01 + 0.0001 * step, 5), "reward": round(0.5 + 0.05 * math.sin(step / 5), 4),
                  "response_length": round(rng.uniform(400, 420), 1), "truncated": 0.02,
                  "timing/make_experience": 20.0, "timing/ppo_train": 30.0, "timing/broadcast": 2.0,
                  "timing/generation": 8.0, "timing/step_total": 60.0}
        minute = 30 + step
        ts = f"08-13 {10 + minute // 60:02d}:{minute % 60:02d}:00"
        out.append(f"INFO {ts} ppo_trainer.py:551] \u2728 Global step {step}: {status}")
    return "\n".join(out) + "\n"


def alerts(tmp_path, entropy) -> set:
    path = tmp_path / "openrlhf.log"
    path.write_text(openrlhf_log(entropy), encoding="utf-8")
    return {r["alert"] for r in doctor_json(str(path), "--format", "openrlhf")}


def test_entropy_collapse_fires_on_openrlhf(tmp_path):
    # 1.2 for 90 steps, then 0.1: a collapse within a few steps
    assert "RLEntropyCollapse" in alerts(tmp_path, lambda s: 1.2 if s <= 90 else 0.1)


def test_a_slow_decay_is_no_collapse(tmp_path):
    assert "RLEntropyCollapse" not in alerts(tmp_path, lambda s: 1.2 - 0.004 * s)
