"""Which metric names a dashboard may query.

A name is allowed when the catalog exposes it (`CATALOG.names`, histogram suffixes
included), when it is a series Prometheus itself creates (`ALERTS`, `up`), or when it is
a recording rule (`level:metric:op`) that exporter/rules/*.yaml records, or one of the band
series a baseline's rule file records (exporter/alerts/baseline.py; loaded only with a baseline).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from exporter.alerts.baseline import BAND_LOWER, BAND_UPPER, OUTSIDE
from exporter.catalog import CATALOG
from exporter import rules as shipped
from exporter.catalog.engines import NAMES as ENGINE_SERIES

# GPU panels query only these names (exporter/dashboards/gpu.py imports them from here).
GPU_UTILIZATION = "hw_gpu_utilization_ratio"
GPU_MEMORY_USAGE = "hw_gpu_memory_usage_bytes"
GPU_MEMORY_LIMIT = "hw_gpu_memory_limit_bytes"
GPU_POWER = "hw_gpu_power_watts"
GPU_ENERGY = "hw_gpu_energy_joules_total"
GPU_TEMPERATURE = "hw_gpu_temperature_celsius"
GPU_CLOCK = "hw_gpu_clock_hertz"                 # label clock
GPU_CLOCK_EVENT = "hw_gpu_clock_event_active"    # label reason
GPU_PHASE_BUSY = "hw_gpu_phase_busy_seconds_total"       # label phase
GPU_PHASE_IDLE = "hw_gpu_phase_idle_seconds_total"       # label phase
GPU_PHASE_MEMORY_PEAK = "hw_gpu_phase_memory_peak_bytes"  # label phase
GPU_METRICS = (GPU_UTILIZATION, GPU_MEMORY_USAGE, GPU_MEMORY_LIMIT, GPU_POWER,
                       GPU_ENERGY, GPU_TEMPERATURE, GPU_CLOCK, GPU_CLOCK_EVENT,
                       GPU_PHASE_BUSY, GPU_PHASE_IDLE, GPU_PHASE_MEMORY_PEAK)

# Series Prometheus creates itself.
PROMETHEUS_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE", "up"})

BASELINE_RECORDS = frozenset({BAND_LOWER, BAND_UPPER, OUTSIDE})

RECORDING_RULE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]*$")
REPO = Path(__file__).resolve().parents[2]


def recording_rules(rules_dir: Path | None = None) -> frozenset[str]:
    """Names recorded by exporter/rules/*.yaml (empty when that directory does not exist)."""
    import yaml
    rules_dir = rules_dir or shipped.DIR
    out = set()
    if not rules_dir.is_dir():
        return frozenset()
    for path in sorted(rules_dir.glob("*.y*ml")):
        doc = yaml.safe_load(path.read_text()) or {}
        if isinstance(doc, dict) and doc.get("kind") == "PrometheusRule":
            doc = doc.get("spec") or {}
        for group in (doc.get("groups") or []) if isinstance(doc, dict) else []:
            for rule in group.get("rules") or []:
                if isinstance(rule, dict) and rule.get("record"):
                    out.add(rule["record"])
    return frozenset(out)


@dataclass
class NameCheck:
    unknown: list[tuple[str, str, str]] = field(default_factory=list)   # (dashboard, panel, name)

    @property
    def ok(self) -> bool:
        return not self.unknown


def classify(name: str, records: frozenset[str], catalog_names=None) -> str:
    """'catalog' | 'prometheus' | 'recording' | 'unknown'."""
    catalog_names = CATALOG.names if catalog_names is None else catalog_names
    if name in catalog_names:
        return "catalog"
    if name in PROMETHEUS_SERIES:
        return "prometheus"
    if name in ENGINE_SERIES:  # vLLM/SGLang's own series, named from their source
        return "engine"
    if ":" in name:
        return "recording" if RECORDING_RULE.match(name) and name in records else "unknown"
    return "unknown"


def check_names(dashboards, records: frozenset[str] | None = None, catalog_names=None) -> NameCheck:
    records = recording_rules() | BASELINE_RECORDS if records is None else records
    result = NameCheck()
    for d in dashboards:
        for p in d.panels:
            for name in p.metrics:
                kind = classify(name, records, catalog_names)
                if kind == "unknown":
                    result.unknown.append((d.uid, p.title, name))
    return result
