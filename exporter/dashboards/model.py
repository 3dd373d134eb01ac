"""Panels as data: what a dashboard module declares, independent of Grafana's JSON.

A dashboard module builds a `Dashboard` from `Row`s of `Panel`s; each panel holds its
`Query`s. `render.py` turns these into grafana-foundation-sdk builders. Keeping the
declaration plain lets the checks (catalog names, descriptions, query proof) walk it
without parsing Grafana JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from exporter.promql import metric_names

# Modern panel types only (no `graph`, `singlestat`, `table-old`).
TIMESERIES = "timeseries"
STAT = "stat"
TABLE = "table"
HEATMAP = "heatmap"
STATE_TIMELINE = "state-timeline"
BARGAUGE = "bargauge"
TEXT = "text"
PANEL_TYPES = (TIMESERIES, STAT, TABLE, HEATMAP, STATE_TIMELINE, BARGAUGE, TEXT)


@dataclass(frozen=True)
class Query:
    """One PromQL target. `gate` names the feature a trainer must have for this query to
    return data (overrides the panel's); None means any run of the demo feeds it."""

    expr: str
    legend: str = "{{run}}"
    instant: bool = False
    format: str = "time_series"   # time_series | table | heatmap
    gate: str | None = None

    @property
    def metrics(self) -> list[str]:
        return metric_names(self.expr)


@dataclass
class Panel:
    kind: str
    title: str
    shows: str                      # what the panel shows
    healthy: str                    # what healthy looks like (source when heuristic)
    queries: list[Query] = field(default_factory=list)
    unit: str = "none"
    min: float | None = None
    max: float | None = None
    decimals: int | None = None
    thresholds: list[tuple[float | None, str]] | None = None  # [(None, base), (v, color), ...]
    threshold_style: str = "line"   # timeseries: off | line | area | dashed
    gate: str | None = None         # feature the whole panel needs (see Query.gate)
    width: int = 8
    height: int = 8
    stack: bool = False
    log_scale: bool = False
    mappings: list[dict] | None = None    # raw Grafana value mappings
    links: list[dict] | None = None       # data links on a named column: [{"field":..., "title":..., "url":...}]
    transformations: list[dict] | None = None
    content: str = ""               # TEXT panels: markdown
    overrides: list[dict] | None = None   # raw Grafana overrides
    sort_by: str | None = None      # TABLE: column to sort by
    sort_desc: bool = True

    def __post_init__(self):
        if self.kind not in PANEL_TYPES:
            raise ValueError(f"{self.title}: panel type {self.kind!r} is not allowed")
        if not self.shows.strip() or not self.healthy.strip():
            raise ValueError(f"{self.title}: a panel needs `shows` and `healthy` text")
        if self.kind != TEXT and not self.queries:
            raise ValueError(f"{self.title}: a {self.kind} panel needs queries")

    @property
    def metrics(self) -> list[str]:
        seen: list[str] = []
        for q in self.queries:
            for m in q.metrics:
                if m not in seen:
                    seen.append(m)
        return seen

    def gate_of(self, q: Query) -> str | None:
        return q.gate or self.gate

    @property
    def description(self) -> str:
        parts = [self.shows.strip(), "Healthy: " + self.healthy.strip()]
        gates = sorted({g for g in (self.gate_of(q) for q in self.queries) if g})
        if gates:
            parts.append("Empty unless " + "; ".join(gates) + ".")
        names = self.metrics if self.kind != TEXT else []
        if self.kind == TEXT:
            parts.append("Metrics: none (reading guide).")
        else:
            parts.append("Metrics: " + ", ".join(f"`{m}`" for m in names) + ".")
        return "\n\n".join(parts)


@dataclass
class Row:
    title: str
    panels: list[Panel]
    collapsed: bool = False


@dataclass
class Dashboard:
    uid: str
    title: str
    description: str
    rows: list[Row]
    tags: list[str] = field(default_factory=lambda: ["rl-exporter"])
    folder: str = "RL training"
    refresh: str = "30s"
    time_from: str = "now-6h"

    @property
    def panels(self) -> list[Panel]:
        return [p for r in self.rows for p in r.panels]

    @property
    def queries(self) -> list[tuple[Panel, Query]]:
        return [(p, q) for p in self.panels for q in p.queries]
