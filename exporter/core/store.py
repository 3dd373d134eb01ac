"""Latest value per series.

Writers are the hook's worker and the samplers; the reader is the /metrics
collector (and the OTLP gauges). A series is (metric, sorted label pairs incl.
`run`); its value lives in a flat list so the worker's write is one index store.
Non-finite values are kept as they are: NaN and +/-Inf are data.
"""
from __future__ import annotations

import logging
import math
import threading
from collections import defaultdict

from ..catalog import CATALOG, COUNTER, INFO, Catalog, Metric
from .histograms import Histograms
from .self_metrics import Counts

log = logging.getLogger(__name__)

DEFAULT_SERIES_LIMIT = 2000  # per metric; OTel's default cardinality limit is the same order


class Store:
    def __init__(self, run: str, catalog: Catalog = CATALOG,
                 series_limit: int = DEFAULT_SERIES_LIMIT, counts: Counts | None = None):
        self.run = run
        self.catalog = catalog
        self.series_limit = series_limit
        self._lock = threading.Lock()
        self.values: list[float] = []
        self.metrics: list[Metric] = []
        self.labels: list[dict[str, str]] = []          # rendered label dicts, incl. run
        self._index: dict[tuple, int] = {}
        self._by_metric: dict[str, list[int]] = defaultdict(list)
        self._states: dict[tuple, dict[str, int]] = {}  # (metric, base labels) -> state -> id
        # the one loss registry (self_metrics.Counts), shared with the exporter that owns us
        self.counts = counts if counts is not None else Counts()
        self.nonfinite = self.counts.nonfinite
        self.rejected = self.counts.rejected
        self.version = 0  # bumped when series are added (collector caches per version)
        # HISTOGRAM metrics (timers, observe(), the worker's own timing): bucket arrays
        self.histograms = Histograms(run, series_limit, self.counts)

    # ------------------------------------------------------------ series
    def series_id(self, metric: Metric, labels: tuple[tuple[str, str], ...] = ()) -> int | None:
        """Id of a series, creating it on first use; None past the per-metric limit."""
        key = (metric.name, labels)
        sid = self._index.get(key)
        if sid is not None:
            return sid
        with self._lock:
            sid = self._index.get(key)
            if sid is not None:
                return sid
            if len(self._by_metric[metric.name]) >= self.series_limit:
                return None  # the caller counts the rejected value
            sid = len(self.values)
            rendered = {"run": self.run}
            rendered.update(labels)
            self.values.append(math.nan if metric.kind not in (COUNTER, INFO) else 0.0)
            self.metrics.append(metric)
            self.labels.append(rendered)
            self._by_metric[metric.name].append(sid)
            self._index[key] = sid
            self.version += 1
            return sid

    def state_ids(self, metric: Metric, labels: tuple = ()) -> dict[str, int]:
        """All series of a state-set metric for one label set: state -> id."""
        key = (metric.name, labels)
        ids = self._states.get(key)
        if ids is None:
            ids = {}
            for st in metric.states:
                sid = self.series_id(metric, tuple(sorted(labels + (("state", st),))))
                if sid is not None:
                    self.values[sid] = 0.0
                    ids[st] = sid
            self._states[key] = ids
        return ids

    # ------------------------------------------------------------ writes
    def set(self, metric: str | Metric, value: float,
            labels: dict[str, str] | tuple | None = None) -> bool:
        """Set a gauge/counter series by canonical name (samplers, timers, MFU)."""
        m = metric if isinstance(metric, Metric) else self.catalog.metrics[metric]
        lab = labels if isinstance(labels, tuple) else tuple(sorted((labels or {}).items()))
        sid = self.series_id(m, lab)
        if sid is None:
            self.rejected["series_limit"] += 1
            return False
        self.put(sid, float(value))
        return True

    def put(self, sid: int, value: float) -> None:
        """Write a float to a series: the one place non-finite values are counted."""
        if value - value != 0.0:  # NaN or +/-Inf: exported as they are, and counted
            self.nonfinite[self.metrics[sid].name] += 1
        self.values[sid] = value

    def inc(self, metric: str, labels: dict[str, str] | None = None, amount: float = 1.0) -> None:
        m = self.catalog.metrics[metric]
        sid = self.series_id(m, tuple(sorted((labels or {}).items())))
        if sid is not None:
            with self._lock:
                self.values[sid] += amount

    def record(self, metric: str | Metric, value: float,
               labels: dict[str, str] | tuple | None = None) -> None:
        """One observation of a HISTOGRAM metric (a phase duration, a frame's processing)."""
        m = metric if isinstance(metric, Metric) else self.catalog.metrics[metric]
        lab = labels if isinstance(labels, tuple) else tuple(sorted((labels or {}).items()))
        self.histograms.record(m, float(value), lab)

    def set_state(self, metric: str | Metric, state: str, labels: tuple = ()) -> bool:
        m = metric if isinstance(metric, Metric) else self.catalog.metrics[metric]
        ids = self.state_ids(m, labels)
        if state not in ids:
            if len(ids) >= 64:  # a state set is small by nature; refuse unbounded growth
                self.rejected["unknown_state"] += 1
                return False
            from ..catalog import sanitize_label_value
            sid = self.series_id(m, tuple(sorted(labels + (("state", sanitize_label_value(state)),))))
            if sid is None:
                self.rejected["series_limit"] += 1
                return False
            ids[state] = sid
        for st, sid in ids.items():
            self.values[sid] = 1.0 if st == state else 0.0
        return True

    # ------------------------------------------------------------ reads
    def snapshot(self):
        """(metric, [series ids]) per metric, in catalog order of first use."""
        with self._lock:
            return [(self.catalog.metrics[name], list(ids)) for name, ids in self._by_metric.items()]

    def ids(self, metric: str) -> list[int]:
        with self._lock:
            return list(self._by_metric.get(metric, ()))

    def get(self, metric: str, labels: dict[str, str] | None = None) -> float | None:
        sid = self._index.get((metric, tuple(sorted((labels or {}).items()))))
        return None if sid is None else self.values[sid]
