"""doctor judged on whole public runs (tests/data/runs/, MANIFEST.json) and on every short real
excerpt (tests/data/real/), with the real engine.

- a run labelled healthy raises no warning or critical finding, unless its MANIFEST entry
  carries an `argued` field (the argument from the sources' ranges);
- a run labelled failed:<kind>[+<kind>] raises, for each kind, a warning or critical finding
  among those scripts/runs_corpus.py KINDS maps it to, within ONSET_TOLERANCE steps of
  `onset_step` where the entry states one;
- docs/postmortem.md holds the table these verdicts make (scripts/runs_corpus.py table);
- every excerpt of tests/data/real whose printed numbers show a single-step failure from the
  sources' tables or a sanity bound (found below from the raw keys, not through the catalog)
  gets a point finding of that name, and none is called healthy.

One doctor (one Prometheus) per run: about 10 s for 435 steps on one core.
"""
from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

from tests.integration.test_doctor import REPO, needs_engine

pytestmark = [pytest.mark.integration, needs_engine]

_spec = importlib.util.spec_from_file_location("runs_corpus", REPO / "scripts" / "runs_corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)
MANIFEST = corpus.load()
RUNS = sorted(MANIFEST)


@pytest.fixture(scope="module")
def verdicts():
    return {rel: corpus.verdict(MANIFEST[rel], corpus.doctor_rows(rel)) for rel in RUNS}


def test_the_corpus_is_there():
    assert len(RUNS) >= 10
    for rel, e in MANIFEST.items():
        assert (corpus.RUNS / rel).is_file(), rel
        assert e["label"] == "healthy" or e["label"].startswith("failed:"), rel
        assert e.get("source") and e.get("label_basis"), rel
        for kind in corpus.kinds(e["label"]):
            assert kind in corpus.KINDS, f"{rel}: label kind {kind!r} has no alert mapping"


@pytest.mark.parametrize("rel", RUNS)
def test_doctor_agrees_with_the_label(rel, verdicts):
    v = verdicts[rel]
    if rel in corpus.MISSES:
        if v["problems"]:
            pytest.xfail(corpus.MISSES[rel])
        pytest.fail(f"{rel} is judged right now: remove it from MISSES in scripts/runs_corpus.py")
    assert not v["problems"], (rel, MANIFEST[rel]["label"], v["first"])


def test_docs_table_is_current(verdicts):
    assert corpus.current_block() == corpus.render(verdicts, MANIFEST), \
        "docs/postmortem.md is stale: run python3 scripts/runs_corpus.py table"


# ------------------------------------------------------------------ short excerpts
REAL = REPO / "tests" / "data" / "real"
EXCERPTS = sorted(json.loads((REAL / "MANIFEST.json").read_text()))
_NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"
# key:value (veRL), 'key': value (dicts, quoted or not), │ key │ value │ (AReaL)
_PAIRS = re.compile(r"(?:^|[\s{,│|])['\"]?([A-Za-z_][\w/@.()\-]*)['\"]?\s*(?::|│)\s*"
                    r"(?:np\.float\d+\()?['\"]?(" + _NUM + r")['\"]?")


def expected_points(text: str) -> set[str]:
    """The single-step failures visible in the raw printed numbers (the sources' tables)."""
    want = set()
    for line in text.splitlines():
        vals = {}
        for k, v in _PAIRS.findall(line):
            if k.startswith(("eval_", "val/", "val-", "test_")) or "/eval" in k:
                continue
            try:
                vals[k] = float(v)
            except ValueError:
                continue
        for k, v in vals.items():
            leaf = k.rsplit("/", 1)[-1] if not k.endswith(("/avg", "/mean")) else k.split("/")[-2]
            if leaf in ("loss", "pg_loss", "policy_loss", "actor_loss", "critic_loss", "vf_loss") \
                    and not math.isfinite(v):
                want.add("RLPointNonFiniteLoss")
            if leaf == "grad_norm":
                if not math.isfinite(v):
                    want.add("RLPointNonFiniteGradNorm")
                elif v == 0:
                    want.add("RLPointGradNormZero")
            if (leaf == "reward_std" and v == 0) or (leaf == "frac_reward_zero_std" and v >= 1):
                want.add("RLPointNoRewardVariance")
            if (k in ("rollout/truncated", "rollout/truncated_ratio", "response_length/clip_ratio",
                      "completions/clipped_ratio") or leaf == "no_eos_ratios") and v >= 0.9:
                want.add("RLPointTruncationHigh")
            if leaf == "entropy" and 0 <= v < 0.01:
                want.add("RLPointEntropyZero")
            # the sanity bounds (exporter/alerts/config.py): no healthy run has these at any step
            if leaf == "grad_norm" and not k.startswith("critic") and math.isfinite(v) and v > 1000:
                want.add("RLPointGradNormFarAboveClip")
            # (TRL PPO's objective/kl is summed over a sequence's tokens, not a per-token KL)
            if leaf in ("kl", "kl_loss", "reward_kl_penalty") and k != "objective/kl" \
                    and math.isfinite(v) and v > 1.0:
                want.add("RLPointReferenceKLHigh")
            if leaf in ("loss", "pg_loss", "policy_loss", "actor_loss") and math.isfinite(v) \
                    and abs(v) > 1000:
                want.add("RLPointLossMagnitude")
        for k in vals:
            if k.endswith("score/max") and vals.get(k[:-3] + "min") == vals[k]:
                want.add("RLPointNoRewardVariance")
    return want


FLAGGED = [rel for rel in EXCERPTS if expected_points((REAL / rel).read_text(errors="replace"))]


def test_some_excerpts_show_failures():
    assert len(FLAGGED) >= 5, FLAGGED


@pytest.mark.parametrize("rel", FLAGGED)
def test_excerpt_failure_gets_a_point_finding(rel):
    want = expected_points((REAL / rel).read_text(errors="replace"))
    rows = corpus.doctor_rows("../real/" + rel)
    got = {r["alert"] for r in rows if r.get("alert")}
    assert want <= got, (rel, want, got)
    assert not any(r.get("healthy") for r in rows)


def test_a_log_without_timestamps_reads_the_same_wherever_its_clock_starts():
    """A log with no timestamps runs on a derived clock that starts where its file's mtime puts
    it (a fresh clone: whenever it was cloned). Its steps were placed at fractions of a
    millisecond the blocks do not store: a step 0.4 ms after a whole evaluation second was in
    the TSDB at that second while the backfill's own step lookup put it in the step before, so
    the evidence lost a step (\"81 of 97 steps\" for this run at 20:04:00, \"82 of 98\" at any
    other minute). Both now use the stored millisecond."""
    from exporter.postmortem.doctor import doctor
    rel = "trl/aaravarora01_agent-memory-redteam_finance_grpo_sparse/trainer_state.json"
    answers = []
    for start in ("1796414640", "1796414700"):   # 2026-12-04 20:04:00 and 20:05:00 UTC
        out = doctor([str(corpus.RUNS / rel)], start=start, progress=False)
        assert out.backfill.times and all(t == round(t, 3) for t in out.backfill.times)
        answers.append(sorted((f.alert, f.step, tuple((e["check"], e["answer"]) for e in f.evidence))
                              for f in out.evaluation.findings))
    assert answers[0] == answers[1]
    said = [a for _, _, ev in answers[0] for _, a in ev if "steps (steps" in a]
    assert said and "82 of 98 steps" in said[0], said
