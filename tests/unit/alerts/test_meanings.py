"""The runbook states every rule as it is: each Meaning line is generated from exporter/alerts/meanings.py
with the thresholds of exporter/alerts/config.py, and names every threshold its expression uses."""
from __future__ import annotations

import re

import pytest

from exporter.alerts import docs
from exporter.alerts.meanings import MEANING, meaning, missing, render_runbook, stated
from exporter.alerts.rules import ALERTS
from exporter.alerts.config import CONFIG

NOT_THRESHOLDS = {"exporter_job_selector", "engine_job_selector", "time_scale"}


def test_every_alert_has_a_meaning():
    assert not missing()


@pytest.mark.parametrize("a", ALERTS, ids=lambda a: a.name)
def test_meaning_states_every_threshold_the_rule_uses(a):
    used = {p for p in re.findall(r"(?<!\{)\{(\w+)\}(?!\})", a.expr) if p in CONFIG} - NOT_THRESHOLDS
    assert used <= stated(a.name), f"{a.name}: the Meaning does not state {sorted(used - stated(a.name))}"


def test_meaning_renders_the_configured_numbers():
    assert "0.3 x |baseline|" in meaning("RLRewardCollapse")
    assert "5 min, 20 min, 1 h 20 min, 5 h 20 min" in meaning("RLEntropyCollapse")
    assert "hour" not in meaning("RLEntropyCollapse") and "[[" not in "".join(map(meaning, MEANING))


def test_runbook_meaning_lines_are_generated():
    text = docs.RUNBOOK.read_text()
    assert render_runbook(text) == text, "run `python -m exporter.alerts docs`"
    for name in MEANING:
        assert f"- **Meaning**: {meaning(name)}" in text, name


SEED_REF = re.compile(r"\bseed 00\d|\bS[0-4] §", re.I)


def test_no_text_for_the_person_on_call_cites_a_seed():
    """Sources are cited by name (the runbook's References section), never as "seed 00N"."""
    from exporter.alerts.render import render
    from exporter.dashboards import DASHBOARDS
    texts = {"exporter/rules/runbook.md": docs.RUNBOOK.read_text()}
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
