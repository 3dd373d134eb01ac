"""Where the alert rules' generated files go: each is written where it is consumed."""
from __future__ import annotations

from pathlib import Path

from exporter import rules as shipped

HERE = Path(__file__).resolve().parent
RULES_FILE = shipped.RULES_FILE   # package data: doctor, backfill and helm/sync.py read it
RUNBOOK = shipped.RUNBOOK
TEST_FILE = HERE / "tests" / "rl-exporter.test.yaml"   # promtool unit tests (generated, not committed)
# how the generated promtool files (in exporter/alerts/tests/) name the shipped rule file
RULES_FROM_TESTS = "../../rules/" + RULES_FILE.name
# the Alertmanager example: the chart carries it (and docs point operators there)
AM_FILE = HERE.parents[1] / "helm" / "rl-exporter" / "files" / "alertmanager" / "alertmanager.yml"
