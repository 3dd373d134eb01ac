"""Consistency checks for the generated rules (run by `rl-exporter alerts check`, which CI runs)."""
from __future__ import annotations

import re


from .rules import ALERTS
from .recordings import RECORDINGS, metric_names
from .render import render, yaml_text
from .paths import AM_FILE, HERE, RULES_FILE, RUNBOOK, TEST_FILE  # noqa: F401
PROMETHEUS_NAMES = {"up", "ALERTS"}  # series Prometheus itself writes


def github_anchor(heading: str) -> str:
    """GitHub's heading slug: lower-case, drop punctuation but - and _, spaces to -."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def runbook_anchors(text: str) -> set[str]:
    out = set()
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            out.add(github_anchor(m.group(1)))
    return out


def unknown_metrics(doc: dict) -> list[str]:
    from exporter.catalog import CATALOG
    from exporter.catalog.engines import NAMES as ENGINE_SERIES  # vllm:*, sglang:* as exposed
    recorded = {r.record for r in RECORDINGS}
    problems = []
    for g in doc["groups"]:
        for r in g["rules"]:
            name = r.get("alert") or r.get("record")
            for m in sorted(metric_names(r["expr"])):
                if m not in CATALOG.names and m not in PROMETHEUS_NAMES and m not in recorded \
                        and m not in ENGINE_SERIES:
                    problems.append(f"{name}: metric {m} is not in the catalog")
            for rec in re.findall(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", r["expr"]):
                if rec not in recorded:
                    problems.append(f"{name}: recording rule {rec} is not defined")
    return problems


def run_checks() -> list[str]:
    problems = []
    doc = render()
    want = yaml_text(doc)
    if not RULES_FILE.exists() or RULES_FILE.read_text() != want:
        problems.append(f"exporter/rules/{RULES_FILE.name} differs from the generated rules; "
                        "run `rl-exporter alerts generate`")
    problems += unknown_metrics(doc)
    anchors = runbook_anchors(RUNBOOK.read_text()) if RUNBOOK.exists() else set()
    for g in doc["groups"]:
        for r in g["rules"]:
            if "alert" not in r:
                continue
            url = r["annotations"]["runbook_url"]
            anchor = url.split("#", 1)[1] if "#" in url else ""
            if not url.split("#")[0].endswith("exporter/rules/runbook.md") or anchor not in anchors:
                problems.append(f"{r['alert']}: runbook_url {url} does not resolve to a heading "
                                "of exporter/rules/runbook.md")
            for key in ("summary", "description", "runbook_url"):
                if not r["annotations"].get(key):
                    problems.append(f"{r['alert']}: missing annotation {key}")
            if "{{" in r["annotations"]["summary"]:
                problems.append(f"{r['alert']}: summary must be static")
            if "$labels.run" not in r["annotations"]["description"] or "$value" not in \
                    r["annotations"]["description"]:
                problems.append(f"{r['alert']}: description must name the run and the value")
            if r["labels"].get("severity") not in ("critical", "warning", "info"):
                problems.append(f"{r['alert']}: bad severity")
            if not re.fullmatch(r"RL[A-Z][A-Za-z0-9]+", r["alert"]):
                problems.append(f"{r['alert']}: alert names are CamelCase with the RL prefix")
    try:
        # the promtool test files are generated where promtool runs (not committed): every
        # alert must have its cases, and the cadence budgets must hold
        from .testcases import missing_cases
        problems += missing_cases()
        from . import cadence
        problems += cadence.problems()
        from . import docs, runbook
        problems += docs.problems()
        if not RUNBOOK.exists() or RUNBOOK.read_text() != runbook.render():
            problems.append("exporter/rules/runbook.md differs from the alerts' records; "
                            "run `rl-exporter alerts generate`")
        problems += runbook.missing()
    except ImportError as e:
        problems.append(f"exporter/alerts/testcases.py: {e}")
    from .alertmanager import config, yaml_text as am_yaml
    am_file = AM_FILE
    if not am_file.exists() or am_file.read_text() != am_yaml(config()):
        problems.append("helm/rl-exporter/files/alertmanager/alertmanager.yml differs from exporter/alerts/alertmanager.py; "
                        "run `rl-exporter alerts generate`")
    names = [a.name for a in ALERTS]
    from .rules import CAUSES
    for cause, symptom in CAUSES:
        for n in (cause, symptom):
            if n not in names:
                problems.append(f"inhibition names unknown alert {n}")
    if len(names) != len(set(names)):
        problems.append("duplicate alert names")
    return problems
