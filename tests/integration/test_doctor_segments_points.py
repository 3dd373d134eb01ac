"""doctor on logs too short to confirm (point findings) and logs holding several runs
(segments), with the real engine."""
from __future__ import annotations

import json
import random

import pytest

from tests.integration.test_doctor import cli, needs_engine

pytestmark = [pytest.mark.integration, needs_engine]


def doctor(path) -> list[dict]:
    p = cli("doctor", str(path), "--json")
    return [json.loads(line) for line in p.stdout.splitlines()]


def verl_line(step, score, rng):
    return (f"step:{step} - critic/score/mean:{score:.4f} - critic/score/max:1.0 - "
            f"critic/score/min:0.0 - actor/entropy:{0.5 - 0.001 * step:.4f} - "
            f"actor/grad_norm:{rng.uniform(0.3, 0.6):.3f} - actor/pg_loss:{rng.uniform(-.01, .01):.4f}"
            f" - response_length/mean:{rng.uniform(300, 400):.1f} - timing_s/step:60.0")


def test_two_runs_back_to_back_are_two_segments_and_no_collapse(tmp_path):
    # the second run starts at step 1 with its own (lower) reward: one series would read
    # the seam as RLRewardCollapse
    rng = random.Random(1)
    lines = [verl_line(s, rng.uniform(.55, .75), rng) for s in range(1, 81)]
    lines += [verl_line(s, rng.uniform(.05, .2) + .002 * s, rng) for s in range(1, 81)]
    log = tmp_path / "two_runs.log"
    log.write_text("\n".join(lines) + "\n")
    rows = doctor(log)
    assert [r["alert"] for r in rows] == [None], rows
    segs = rows[0]["segments"]
    assert [(g["segment"], g["first_step"], g["last_step"]) for g in segs] == [(1, 1, 80), (2, 1, 80)]
    assert "went back" in segs[1]["why"]


def test_a_pasted_step_with_nan_loss_and_every_answer_cut_is_not_healthy(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("{'loss': 'nan', 'grad_norm': 'nan', 'learning_rate': '1e-06', 'reward': '0', "
                   "'reward_std': '0', 'completions/clipped_ratio': '1.0', 'epoch': '0.01'}\n")
    rows = doctor(log)
    names = {r["alert"] for r in rows}
    assert names == {"RLPointNonFiniteLoss", "RLPointNonFiniteGradNorm", "RLPointNoRewardVariance",
                     "RLPointTruncationHigh"}, rows
    for r in rows:
        assert r["confirmed"] is False and r["severity"] == "warning" and r["segment"] == 1
        assert "too few steps to confirm" in r["summary"] and r["step"] == 0


def test_a_confirmed_alert_replaces_its_point_finding(tmp_path):
    # 60 steps of zero gradient: RLGradNormZero confirms it, no RLPointGradNormZero beside it
    rng = random.Random(2)
    lines = [verl_line(s, rng.uniform(.4, .6), rng).replace("actor/grad_norm:", "actor/grad_norm:0.0#")
             .split("#")[0] + " - actor/pg_loss:0.0 - timing_s/step:60.0" for s in range(1, 61)]
    log = tmp_path / "zero_grad.log"
    log.write_text("\n".join(lines) + "\n")
    names = {r["alert"] for r in doctor(log)}
    assert "RLGradNormZero" in names and "RLPointGradNormZero" not in names, names
