"""A baseline is one recipe's: `doctor --baseline` compares the run's identity (framework,
algorithm, model, config values the file records) with the recipe's, says where they differ,
and does not judge a run of another framework or algorithm unless --force-baseline. Real runs
(TRL GRPO spools, a veRL PPO log) read through doctor's own argument parser and reading path."""
import argparse
import io
import json
from pathlib import Path

import pytest

from exporter.commands import doctor
from exporter.postmortem import baseline as bl
from exporter.postmortem import deviation as dv

DATA = Path(__file__).resolve().parents[2] / "data"
HEALTHY = DATA / "trl" / "healthy.spool"
COLLAPSE = DATA / "trl" / "entropy_collapse.spool"
VERL = DATA / "runs" / "verl" / "eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-resp256.log"


@pytest.fixture(scope="module")
def trl_doc():
    return bl.learn([bl.read_run(str(HEALTHY))], recipe="tiny-grpo")


def baseline_lines(doc, log, *flags):
    p = argparse.ArgumentParser()
    doctor.add_arguments(p)
    args = p.parse_args([str(log), "--baseline", "unused.yaml", *flags])
    out = io.StringIO()
    dv.print_findings(doc, args, out)
    text = out.getvalue()
    return [json.loads(x) for x in text.splitlines()] if args.json else text


def test_a_run_of_another_framework_is_not_compared_unless_forced(trl_doc):
    assert trl_doc["identity"]["framework"] == "trl"
    mismatch = [{"field": "framework", "recipe": "trl", "run": "verl", "blocking": True}]
    (line,) = baseline_lines(trl_doc, VERL, "--json")
    assert line["alert"] is None and line["compared"] is False and line["outside_baseline"] is None
    assert line["baseline_mismatch"] == mismatch and line["baseline"] == "tiny-grpo"
    text = baseline_lines(trl_doc, VERL)
    assert "not compared, the run is another recipe (framework: the run's verl, the recipe's trl)" in text
    assert "--force-baseline" in text and "RLOutsideBaseline" not in text
    forced = baseline_lines(trl_doc, VERL, "--json", "--force-baseline")
    assert any(r["alert"] == "RLOutsideBaseline" for r in forced)  # judged: the veRL run is far off
    assert all(r["baseline_mismatch"] == mismatch for r in forced)
    assert "not the recipe's identity (compared: --force-baseline): framework" in \
        baseline_lines(trl_doc, VERL, "--force-baseline")


def test_the_algorithm_doctor_gives_the_run_is_checked(trl_doc):
    grpo = dict(trl_doc, identity={**trl_doc["identity"], "algorithm": "grpo"})
    (line,) = baseline_lines(grpo, COLLAPSE, "--json", "--algorithm", "ppo")
    assert line["compared"] is False
    assert line["baseline_mismatch"] == [{"field": "algorithm", "recipe": "grpo", "run": "ppo", "blocking": True}]
    # the recipe's algorithm, or none known for the run: compared, no mismatch
    for flags in (["--algorithm", "grpo"], []):
        rows = baseline_lines(grpo, COLLAPSE, "--json", *flags)
        assert rows and all(r["baseline_mismatch"] == [] for r in rows)
        assert any(r["alert"] == "RLOutsideBaseline" and r["metric"] == "rl_entropy" for r in rows)


def test_the_same_recipe_is_compared_as_before(trl_doc):
    rows = baseline_lines(trl_doc, COLLAPSE, "--json")
    assert [r["baseline_mismatch"] for r in rows] == [[]] * len(rows)
    assert [r["step"] for r in rows] == sorted(r["step"] for r in rows)
    (inside,) = baseline_lines(trl_doc, HEALTHY, "--json")  # its own bands
    assert inside["compared"] is True and inside["outside_baseline"] is False
    assert "not the recipe's identity" not in baseline_lines(trl_doc, COLLAPSE)


def test_model_and_config_differences_are_reported_and_do_not_block():
    doc = {"identity": {"framework": "verl", "algorithm": ["grpo", "dr_grpo"], "model": "Qwen2.5-0.5B",
                        "config": {"max_response_length": 512, "n_mini": [2, 4],
                                   "total_training_steps": 435}}}
    run = bl.RunSeries(name="r", source="r.log", framework="verl",
                       identity={"framework": "verl", "algorithm": "dr_grpo", "model": "Qwen2.5-7B"},
                       config={"max_response_length": 256.0, "n_mini": 4.0,
                               "total_training_steps": 435.0000001})
    assert dv.identity_mismatch(doc, run) == [
        {"field": "model", "recipe": "Qwen2.5-0.5B", "run": "Qwen2.5-7B", "blocking": False},
        {"field": "config.max_response_length", "recipe": 512, "run": 256.0, "blocking": False}]
    # what the run does not carry is not a difference
    bare = bl.RunSeries(name="r", source="r.log", framework="verl")
    assert dv.identity_mismatch(doc, bare) == []
    assert dv.identity_mismatch(doc, bl.RunSeries(name="r", source="r.log", framework="trl")) == [
        {"field": "framework", "recipe": "verl", "run": "trl", "blocking": True}]
