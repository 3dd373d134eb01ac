"""What a rule is, as data: a recording rule, or an alert with everything said about it.

An Alert is one record: its expression, severity and `for:`; the thresholds only it reads (each
with where its number comes from); its annotations; the runbook's prose (meaning, impact, what to
check first and next, what to do); its promtool cases and its row of the cadence matrix.
exporter/alerts/render.py writes the rule file from it, exporter/alerts/runbook.py the runbook,
exporter/alerts/testcases.py and cadence.py the promtool files.

Text placeholders: `{name}` is a setting (exporter/alerts/rules.py CONFIG) everywhere, in
expressions and in prose. Expressions are Python format strings (their PromQL braces are doubled,
as in exprs.py); annotation text is written as Prometheus reads it (`{{ $value }}`), and prose also
knows the step-window phrases of exporter/alerts/runbook.py (`{recent}`, `{baseline}`, `{for}`, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .config import Dur

if TYPE_CHECKING:
    from .sim.pathology import Pathology


@dataclass
class Recording:
    record: str
    expr: str


@dataclass(frozen=True)
class Threshold:
    """A setting only one alert reads: its default and the sentence saying where it comes from.
    Overrides, the Helm chart's prometheusRule.thresholds and the prose address it by name."""
    value: object          # a number, a Dur or a string (a regex of names)
    source: str


@dataclass(kw_only=True)
class Case:
    """A promtool unit case: `fire` series make the alert fire at `at` with exactly `desc` (and
    `labels` beyond run and severity); `silent` series, healthy or at the edge of the healthy
    range, keep it silent at `silent_at`. Series are built with exporter/alerts/series.py."""
    fire: list
    at: str
    desc: str
    silent: list
    silent_at: str
    labels: dict = field(default_factory=dict)
    title: str = ""        # what this case shows beyond the alert's first one
    evidence: str = ""     # the `evidence` annotation it expects (an alert that has one)


@dataclass(kw_only=True)
class Alert:
    name: str
    severity: str
    expr: str
    for_: Dur
    summary: str
    description: str
    # the first check of its runbook, answered at evaluation where PromQL can compute it: an
    # annotation template that queries the run's own series (Prometheus's `query`)
    evidence: str = ""
    labels: dict = field(default_factory=dict)
    thresholds: dict[str, Threshold] = field(default_factory=dict)
    why_critical: str = ""                 # docs/alerts.md: why this one may wake someone
    # the runbook section (exporter/rules/runbook.md, generated)
    meaning: str
    impact: str
    diagnosis: str                         # what to check first, and next
    mitigation: str
    diagnosis_source: str = ""             # the troubleshooting table the diagnosis follows
    time_to_fire: str = ""
    cases: list[Case] = field(default_factory=list)
    cadence: "Pathology | None" = None     # its row of the cadence matrix (exporter/alerts/cadence.py)
