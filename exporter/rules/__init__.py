"""The shipped alert rules and runbook, as package data, so that doctor, backfill and the image
find them without a checkout. `rl-exporter alerts generate` writes the rule file and the runbook here (generated);
the runbook is written by hand, with lines generated from the rule source."""
from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parent
RULES_FILE = DIR / "rl-exporter.rules.yaml"
RUNBOOK = DIR / "runbook.md"


def rule_files() -> list[Path]:
    return sorted(DIR.glob("*.yaml"))
