"""Every key each framework's tagged releases emitted resolves, or is ignored or left on the
fallback on purpose with a stated reason. Key lists: tests/data/releases/<framework>.json,
mined from the frameworks' git histories by tests/data/releases/mine.py."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.catalog import CATALOG
from exporter.catalog.releases import instance

DATA = Path(__file__).resolve().parents[2] / "data" / "releases"
FRAMEWORKS = sorted(p.stem for p in DATA.glob("*.json"))
# `prefix/{x}` (or `{x}` alone): the code re-prefixes another dict whose own keys are mined
# separately (veRL actor/{name} over the worker's metrics, slime rollout/{key} ...)
PASS_THROUGH = re.compile(r"^(?:[\w\-]+/)?\{\w*\}(?:/\{\w*\})?(?:_sum)?$")


def _load(fw):
    return json.loads((DATA / f"{fw}.json").read_text())


def test_every_mined_framework_is_a_vocabulary():
    assert {"verl", "trl", "openrlhf", "slime", "miles", "swift"} <= set(FRAMEWORKS)
    assert set(FRAMEWORKS) <= set(CATALOG.vocabularies)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_each_release_names_its_tag_and_commit(fw):
    data = _load(fw)
    assert data["tags"], fw
    for t in data["tags"]:
        assert re.fullmatch(r"[0-9a-f]{40}", t["commit"]), t["tag"]
        assert t["files"] and t["keys"], t["tag"]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_every_released_key_resolves_or_says_why(fw):
    bad, passthrough = [], []
    for t in _load(fw)["tags"]:
        for key in t["keys"]:
            r = CATALOG.resolve(instance(key), fw)
            if r.ignored:
                assert r.reason.split(": ", 1)[1].strip(), key
            elif r.fallback:
                if r.deliberate:
                    assert r.reason.split(": ", 1)[1].strip(), key
                elif PASS_THROUGH.match(key):
                    passthrough.append(key)
                else:
                    bad.append(f"{t['tag']}: {key}")
            else:
                assert r.metric.name.startswith("rl_"), key
    assert not bad, f"{fw}: {len(bad)} released keys fall back with no reason: {sorted(set(bad))}"
    assert len(set(passthrough)) <= 8, sorted(set(passthrough))


def test_the_issue_examples_resolve_in_their_release():
    rel = CATALOG.releases
    for key in ("mfu/actor", "critic/kl", "critic/kl_coeff", "timing_s/gen",
                "val/test_score/gsm8k"):
        assert rel.emitted_in("verl", key, "0.2"), key
        r = CATALOG.resolve(key, "verl")
        assert not r.fallback and not r.ignored, key
    assert rel.emitted_in("verl", "perf/mfu/actor", "0.2") is False
    assert rel.emitted_in("verl", "timing/gen", "0.1")
    for key in ("completion_length", "rewards/accuracy_reward"):
        assert CATALOG.resolve(key, "trl").metric.name in ("rl_response_length_tokens",
                                                           "rl_reward_function")
    assert rel.emitted_in("trl", "completion_length", "0.14")
    assert dict(CATALOG.resolve("rewards/accuracy_reward", "trl").labels) == {
        "function": "accuracy_reward"}


def test_aliases_carry_their_release_range():
    v = CATALOG.vocabularies["verl"]
    assert v.keys["mfu/actor"].since == "v0.2.0.post2" and v.keys["mfu/actor"].until
    assert v.keys["actor/pg_loss"].since == "v0.1" and v.keys["actor/pg_loss"].until == ""
    rows = {r["name"]: r for r in CATALOG.as_json() if r["name"]}
    assert rows["rl_mfu_ratio"]["releases"]["verl"]["mfu/actor"]["until"]


def test_explain_answers_for_a_release():
    def run(*args):
        out = subprocess.run([sys.executable, "-m", "exporter.cli", "explain", *args],
                             capture_output=True, text=True, check=False)
        return out.returncode, out.stdout
    rc, out = run("--framework", "verl", "--release", "0.2", "--json", "mfu/actor", "perf/mfu/actor")
    assert rc == 0
    a, b = (json.loads(line) for line in out.splitlines())
    assert a["metric"] == "rl_mfu_ratio" and a["emitted"] is True
    assert b["metric"] == "rl_mfu_ratio" and b["emitted"] is False and b["releases"]
    rc, out = run("--framework", "verl", "--release", "0.2", "perf/mfu/actor")
    assert rc == 0 and "NOT emitted by verl 0.2" in out
    rc, out = run("--framework", "verl", "--release", "9.9", "x")
    assert rc == 2 and "no mined release" in out
