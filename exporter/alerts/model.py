"""What a rule is: a recording rule or an alert, as data (rendered by exporter/alerts/render.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .config import Dur


@dataclass
class Recording:
    record: str
    expr: str


@dataclass
class Alert:
    name: str
    severity: str
    expr: str
    for_: Dur
    summary: str
    description: str
    labels: dict = field(default_factory=dict)
    why_critical: str = ""                 # docs/alerts.md: why this one may wake someone

