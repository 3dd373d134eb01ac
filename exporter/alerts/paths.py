"""Where the alert rules' generated files go: each is written where it is consumed.

The rule file and the runbook are package data (exporter/rules/): doctor and backfill read them
from an installed wheel too. docs/alerts.md, the Alertmanager example and the chart live only in
a source checkout: `checkout()` finds it, and the generators write nothing without one (an
installed package's files are not the place for them).
"""
from __future__ import annotations

from pathlib import Path

from exporter import rules as shipped

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]              # the repository root, when this package runs from a checkout
RULES_FILE = shipped.RULES_FILE   # package data: doctor, backfill and helm/sync.py read it
RUNBOOK = shipped.RUNBOOK
TEST_FILE = HERE / "tests" / "rl-exporter.test.yaml"   # promtool unit tests (generated, not committed)
# how the generated promtool files (in exporter/alerts/tests/) name the shipped rule file
RULES_FROM_TESTS = "../../rules/" + RULES_FILE.name
# the Alertmanager example: the chart carries it (and docs point operators there)
CHART = ROOT / "helm" / "rl-exporter"
AM_FILE = CHART / "files" / "alertmanager" / "alertmanager.yml"
DOC = ROOT / "docs" / "alerts.md"


class NotACheckout(RuntimeError):
    """A generator that writes into the source tree was run from an installed package."""


def checkout() -> Path | None:
    """The source checkout this package runs from (pyproject.toml, the chart, docs/), or None
    where it runs from an installed wheel."""
    if (ROOT / "pyproject.toml").is_file() and (CHART / "Chart.yaml").is_file() and DOC.is_file():
        return ROOT
    return None


def need_checkout(what: str) -> Path:
    root = checkout()
    if root is None:
        raise NotACheckout(
            f"{what} writes into the source tree (exporter/rules/, docs/, helm/), and this "
            f"rl-exporter runs from an installed package ({HERE.parents[1]}): run it in a clone of "
            "the repository, or write elsewhere with --out")
    return root
