"""The runbook states every rule as it is: it is generated whole from the alerts' records
(exporter/alerts/runbook.py), each Meaning with the rules' own thresholds, naming every threshold
its expression uses."""
from __future__ import annotations

import re

import pytest

from exporter.alerts import check, runbook
from exporter.alerts.runbook import meaning, missing, stated
from exporter.alerts.rules import ALERTS, CONFIG, alert

NOT_THRESHOLDS = {"exporter_job_selector", "engine_job_selector", "time_scale"}


def test_every_alert_has_a_meaning():
    assert not missing()


@pytest.mark.parametrize("a", ALERTS, ids=lambda a: a.name)
def test_meaning_states_every_threshold_the_rule_uses(a):
    used = {p for p in re.findall(r"(?<!\{)\{(\w+)\}(?!\})", a.expr) if p in CONFIG} - NOT_THRESHOLDS
    assert used <= stated(a), f"{a.name}: the Meaning does not state {sorted(used - stated(a))}"


def test_meaning_renders_the_configured_numbers():
    collapse = meaning(alert("RLRewardCollapse"))
    assert "0.3 x that level" in collapse and "more than 0.05" in collapse
    # the reward's own windows (twice the rung's), not the rung's: no contradiction in one line
    assert "the last 10-40 steps" in collapse and "the 40-160 steps before them" in collapse
    assert "5-20" not in collapse
    entropy = meaning(alert("RLEntropyCollapse"))
    assert "[the last 5-20 steps](../../docs/alerts.md#step-aware-windows)" in entropy
    assert "the 20-80 steps before them (once the run is past step 20)" in entropy
    assert "the last 3-12 steps" in meaning(alert("RLNonFiniteLoss"))
    assert "the last 16-64 steps" in meaning(alert("RLGradNormPinnedAtClip"))


def test_meanings_speak_in_steps_not_window_internals():
    """The runbook at 3 a.m.: steps, linked to docs/alerts.md for the mechanics."""
    for a in ALERTS:
        m = meaning(a)
        for internal in ("per run, the shortest", "holding at least", "4x longer window just before",
                         "trend window (", "recent windows"):
            assert internal not in m, (a.name, internal)
    assert "{" not in "".join(re.sub(r"`[^`]*`", "", meaning(a)) for a in ALERTS)


def test_runbook_is_generated_whole():
    text = check.RUNBOOK.read_text()
    assert text == runbook.render(), "run `rl-exporter alerts generate`"
    for a in ALERTS:
        assert f"## {a.name}\n- **Meaning**: {meaning(a)}\n" in text, a.name


SEED_REF = re.compile(r"\bseed 00\d|\bS[0-4] §", re.I)


def test_no_text_for_the_person_on_call_cites_a_seed():
    """Sources are cited by name (the runbook's References section), never as "seed 00N"."""
    from exporter.alerts.render import render
    from exporter.dashboards import DASHBOARDS
    texts = {"exporter/rules/runbook.md": check.RUNBOOK.read_text()}
    for r in render()["groups"][0]["rules"]:
        if "alert" in r:
            texts[r["alert"]] = " ".join(r["annotations"].values())
    for d in DASHBOARDS:
        texts[d.uid] = d.description
        for p in d.panels:
            texts[f"{d.uid} / {p.title}"] = p.title + " " + p.description + " " + p.content
    bad = {k: SEED_REF.findall(v) for k, v in texts.items() if SEED_REF.search(v)}
    assert not bad, bad
    assert "## References" in texts["exporter/rules/runbook.md"]
