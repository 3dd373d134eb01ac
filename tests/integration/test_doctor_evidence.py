"""doctor on real logs for what a relative rule cannot see: runs broken from their first logged
step (the sanity bounds), a reward pinned at 0, at its maximum or at a constant, a run that has
run its course, and each finding's evidence (its runbook's first checks answered from the log).
Real TRL GRPOTrainer runs on CPU (tests/data/trl/record.py), whole public runs
(tests/data/runs/) and a pasted excerpt (tests/data/real/), with the real engine."""
from __future__ import annotations

import pytest

from tests.integration.test_doctor import REPO, cli, doctor_json, needs_engine, spool

pytestmark = [pytest.mark.integration, needs_engine]

TRL = REPO / "tests" / "data" / "trl"
RUNS = REPO / "tests" / "data" / "runs"


def recording(name: str) -> list[dict]:
    return doctor_json(str(TRL / f"{name}.spool"), "--clock", "fixed", "--step-seconds", "60")


def first(rows, alert):
    got = [r for r in rows if r["alert"] == alert]
    assert got, (alert, sorted({r["alert"] for r in rows}))
    return min(got, key=lambda r: r["step"])


def answers(row) -> str:
    return " | ".join(f"{e['check']}: {e['answer']}" for e in row["evidence"])


def test_every_warning_carries_evidence_and_a_reward_at_zero_is_said_in_words():
    rows = recording("reward_zero")
    for r in rows:
        assert isinstance(r["evidence"], list)
        if r["severity"] in ("warning", "critical"):
            assert r["evidence"] and all(e["check"] and e["answer"] for e in r["evidence"]), r
    zero = first(rows, "RLRewardAllZero")
    assert zero["value"] == 0 and "too hard for the model, or the reward is broken" in zero["summary"]
    groups = first(rows, "RLNoInformativeGroups")
    text = answers(groups)
    assert "every sample scored 0 on every step" in text and "too hard" in text, text


def test_a_reward_not_wired_to_the_answer_and_one_at_its_maximum():
    unwired = first(recording("reward_unwired"), "RLRewardConstant")
    assert unwired["value"] == 0.5 and "does not depend on the answer" in unwired["summary"]
    top = first(recording("constant_reward"), "RLRewardAllAtMax")
    assert top["value"] == 1 and "too easy" in top["summary"]


def test_broken_from_the_first_logged_step_needs_no_baseline():
    # lr 1.0: KL ~4 nats from step 2, entropy at 0 by step 5; the baseline rules need 25 steps
    rows = recording("lr_x10000")
    assert first(rows, "RLReferenceKLRunaway")["step"] <= 10
    assert first(rows, "RLEntropyAtZero")["step"] <= 25
    # beta 1000: a loss in the thousands and a gradient thousands of times the clip from step 2
    rows = recording("beta_x10000")
    loss = first(rows, "RLLossMagnitudeAbsurd")
    grad = first(rows, "RLGradNormFarAboveClip")
    assert loss["step"] <= 10 and loss["labels"]["metric"] == "rl_loss" and loss["value"] > 1000
    assert grad["step"] <= 10 and grad["value"] > 1000
    # TRL logs no policy loss apart: the evidence reads the loss that stands for it
    assert "`rl_loss` (no `rl_policy_loss` in this log)" in answers(grad), answers(grad)


def test_a_pasted_log_with_a_3e9_gradient_is_too_short_and_not_healthy():
    path = REPO / "tests/data/real/slime/prorl_issue40_step_dicts_huge_grad_norm.log"
    rows = doctor_json(str(path))
    assert {r["alert"] for r in rows} == {"RLPointGradNormFarAboveClip"}
    r = rows[0]
    assert r["severity"] == "warning" and r["confirmed"] is False and r["step"] == 1
    assert "numerical failure" in r["summary"]
    assert "`rl_policy_loss`: 0.102 (step 1), 0.145 (step 28)" in answers(r), answers(r)
    text = cli("doctor", str(path)).stdout
    verdict = next(x for x in text.splitlines() if x.startswith("verdict: "))
    assert verdict.startswith("verdict: too short to judge: 2 steps") and "healthy" not in text
    assert "  seen: " in text and "gradient norm 2.217e+09 to 2.955e+09" in text


def test_a_run_that_has_run_its_course_reports_the_hours_and_the_kl():
    # Ning-Guo's GRPO run (kl_coef 0.01): the reward flat from its first records while the KL
    # to the reference climbs from 0.002 past 2
    rows = doctor_json(str(RUNS / "trl/Ning-Guo_hotpotqa-agent_grpo-kl-coef0.01.log"))
    adv = first(rows, "RLNoImprovement")
    assert adv["severity"] == "info"
    text = answers(adv)
    assert "GPU-hours since the reward last improved" in text and " h of training" in text
    assert "kept rising" in text and "stop here" in text, text


def test_the_guard_and_the_first_metric_to_move_are_answered(tmp_path):
    # no finite-gradient guard: the NaN reaches the optimizer, and the evidence says so
    rows = doctor_json(str(spool(tmp_path, "nan-loss")))
    nan = first(rows, "RLNonFiniteLoss")
    text = answers(nan)
    assert "no: the optimizer's non-finite skip counter did not move" in text, text
    assert "gradient norm (`rl_grad_norm`) at step 60, to NaN" in text, text
    # a guard that rejects every one of those updates: the weights are intact
    rows = doctor_json(str(spool(tmp_path, "nan-loss-skipped")))
    assert not [r for r in rows if r["alert"] == "RLNonFiniteLoss"]
    text = answers(first(rows, "RLNonFiniteGradSkipped"))
    assert "yes: the optimizer rejected" in text and "the weights are intact" in text, text

