"""Baselines on real runs: bands learned from healthy TRL GRPO seeds hold a held-out seed and
are left by the pathological recordings at the steps measured; veRL runs whose healthy copies
disagree get no band, with the reason; the file round-trips."""
from pathlib import Path

import pytest

from exporter.postmortem import baseline as bl
from exporter.postmortem import deviation as dv

DATA = Path(__file__).resolve().parents[2] / "data"
SEEDS = [DATA / "trl" / "healthy.spool", DATA / "baselines" / "healthy_seed1.spool",
         DATA / "baselines" / "healthy_seed2.spool"]
QWEN = "eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-"


@pytest.fixture(scope="module")
def seeds():
    return [bl.read_run(str(p)) for p in SEEDS]


@pytest.fixture(scope="module")
def trl_baseline(seeds):
    return bl.learn(seeds, recipe="tiny-grpo")


def first_step(findings, metric, labels=None):
    hits = [f["step"] for f in findings if f["metric"] == metric and f["labels"] == (labels or {})]
    return hits[0] if hits else None


def test_run_is_read_as_canonical_series_per_step(seeds):
    r = seeds[0]
    assert r.framework == "trl" and r.steps[0] == 1 and r.steps[-1] == 300
    assert len(r.values["rl_entropy"]) == 300
    assert r.values["rl_entropy"][1] == pytest.approx(2.673919439315796)  # the spool's step 1


@pytest.mark.parametrize("held_out", [1, 2])
def test_held_out_healthy_seed_stays_inside_its_bands(seeds, held_out):
    others = [s for i, s in enumerate(seeds) if i != held_out]
    doc = bl.learn(others)
    assert {"rl_entropy", "rl_reward", "rl_grad_norm", "rl_reference_kl"} <= set(doc["bands"])
    assert dv.deviations(doc, seeds[held_out]) == []


def test_windows_give_warm_up_its_own_band(trl_baseline):
    rew = trl_baseline["bands"]["rl_reward"]
    assert len(rew) == 10 and rew[0][0] == 1 and rew[-1][1] == 301
    # reward rises 0.17 -> 0.79 over training: the late band sits well above the warm-up one
    mid = [(w[2] + w[3]) / 2 for w in rew]
    assert mid[-1] - mid[0] > 0.3


@pytest.mark.parametrize("run, metric, labels, lo, hi", [
    ("entropy_collapse", "rl_entropy", None, 2, 6),          # measured: step 3
    ("lr_x1000", "rl_reference_kl", None, 1, 4),             # measured: step 2
    ("constant_reward", "rl_reward", None, 1, 1),            # every reward is 1 from step 1
    ("constant_reward", "rl_grad_norm", None, 20, 45),       # measured: step 31
    ("truncation", "rl_response_truncated_ratio", None, 1, 2),
])
def test_pathological_run_leaves_its_band(trl_baseline, run, metric, labels, lo, hi):
    r = bl.read_run(str(DATA / "trl" / f"{run}.spool"))
    found = dv.deviations(trl_baseline, r)
    step = first_step(found, metric, labels)
    assert step is not None and lo <= step <= hi, dv.timeline(found)
    f = next(x for x in found if x["metric"] == metric and x["labels"] == (labels or {}))
    assert f["alert"] == "RLOutsideBaseline" and f["severity"] == "warning"
    assert not f["band"][0] <= f["value"] <= f["band"][1]
    assert [x["step"] for x in found] == sorted(x["step"] for x in found)


def test_timeline_orders_by_first_step():
    fs = [{"metric": "rl_policy_clip_ratio", "labels": {}, "step": 350},
          {"metric": "rl_entropy", "labels": {}, "step": 370},
          {"metric": "rl_score", "labels": {"stat": "max"}, "step": 410}]
    assert dv.timeline(fs) == ("rl_policy_clip_ratio left its band at step 350, rl_entropy at "
                               "370, rl_score{stat=max} at 410")


def test_yaml_round_trips(trl_baseline, tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(bl.dump(trl_baseline))
    assert bl.load(str(path)) == trl_baseline
    assert trl_baseline["rl_exporter_baseline"] == bl.VERSION
    assert [r["name"] for r in trl_baseline["runs"]] == ["trl-healthy", "trl-healthy_seed1",
                                                         "trl-healthy_seed2"]
    assert trl_baseline["identity"]["framework"] == "trl"


def test_not_a_baseline_or_another_version_is_a_clear_error(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("groups: []\n")
    with pytest.raises(bl.BaselineError, match="not an rl-exporter baseline"):
        bl.load(str(p))
    p.write_text("rl_exporter_baseline: 99\n")
    with pytest.raises(bl.BaselineError, match="version 99"):
        bl.load(str(p))


@pytest.fixture(scope="module")
def qwen():
    return [bl.read_run(str(DATA / "runs" / "verl" / f"{QWEN}{n}.log")) for n in ("resp256", "resp512")]


def test_healthy_runs_that_disagree_get_no_band_and_the_file_says_why(qwen):
    doc = bl.learn(qwen)
    why = doc["unbanded"]["rl_response_length_tokens"]  # max response 256 vs 512
    assert "do not overlap in 10 of 10 windows" in why
    assert {"rl_score", "rl_shaped_reward", "rl_policy_kl", "rl_policy_loss"} <= set(doc["bands"])


@pytest.mark.parametrize("learn_from", [0, 1])
def test_held_out_verl_run_stays_inside_on_score_reward_kl_and_loss(qwen, learn_from):
    doc = bl.learn([qwen[learn_from]])
    found = dv.deviations(doc, qwen[1 - learn_from])
    left = {f["metric"] for f in found if not f["labels"]}
    assert not left & {"rl_score", "rl_shaped_reward", "rl_policy_kl", "rl_policy_loss"}, dv.timeline(found)
    # the other max response length shows at once
    assert first_step(found, "rl_response_length_tokens") == 0


def test_fraction_windows_cover_each_run_from_start_to_end(seeds):
    doc = bl.learn(seeds[1:], by="fraction", windows=5)
    ent = doc["bands"]["rl_entropy"]
    assert [w[0] for w in ent] == [0.0, 0.2, 0.4, 0.6, 0.8] and ent[-1][1] == 1.0
    assert dv.deviations(doc, seeds[1]) == []
