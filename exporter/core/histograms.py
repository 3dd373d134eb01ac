"""Histograms in the store: explicit-bucket counts per series, rendered by our collector and
mirrored over OTLP like every other series.

observe() arrives with its counts already bucketed (on the tensor's device, in one transfer),
so a histogram here takes whole bucket arrays (`merge`) as well as single values (`record`:
phase timers, the worker's own timing). Buckets are the catalog metric's; a series is
(metric, sorted labels incl. `run`) under the same per-metric series limit as the gauges.
"""
from __future__ import annotations

import bisect
import math
import threading

from ..catalog import Metric


class Series:
    __slots__ = ("labels", "counts", "sum", "count", "min", "max")

    def __init__(self, labels: dict, n_buckets: int):
        self.labels = labels               # rendered label dict, incl. run
        self.counts = [0] * (n_buckets + 1)  # per bucket (not cumulative), the last is +Inf
        self.sum = 0.0
        self.count = 0
        self.min, self.max = math.inf, -math.inf


class Histograms:
    def __init__(self, run: str, series_limit: int, counts):
        self.run = run
        self.series_limit = series_limit
        self.counts = counts               # self_metrics.Counts: rejections and non-finite
        self._lock = threading.Lock()
        self._series: dict[str, dict[tuple, Series]] = {}
        self._metrics: dict[str, Metric] = {}

    def _get(self, metric: Metric, labels: tuple) -> Series | None:
        by_labels = self._series.get(metric.name)
        if by_labels is None:
            by_labels = self._series[metric.name] = {}
            self._metrics[metric.name] = metric
        s = by_labels.get(labels)
        if s is None:
            if len(by_labels) >= self.series_limit:
                self.counts.reject("series_limit")
                return None
            rendered = {"run": self.run}
            rendered.update(labels)
            s = by_labels[labels] = Series(rendered, len(metric.buckets))
        return s

    def record(self, metric: Metric, value: float, labels: tuple = ()) -> None:
        """One value. Non-finite values stay out of the buckets and are counted."""
        if value - value != 0.0:
            self.counts.add_nonfinite(metric.name)
            return
        with self._lock:
            s = self._get(metric, labels)
            if s is None:
                return
            # bounds[i-1] < v <= bounds[i]: Prometheus `le`
            s.counts[bisect.bisect_left(metric.buckets, value)] += 1
            s.sum += value
            s.count += 1
            if value < s.min:
                s.min = value
            if value > s.max:
                s.max = value

    def merge(self, metric: Metric, labels: tuple, counts, total: float, vmin: float,
              vmax: float) -> None:
        """Counts already bucketed by the metric's bounds (len(buckets) + 1 of them)."""
        if len(counts) != len(metric.buckets) + 1:
            raise ValueError(f"{metric.name}: {len(counts)} bucket counts for "
                             f"{len(metric.buckets)} bounds")
        n = int(sum(counts))
        if not n:
            return
        with self._lock:
            s = self._get(metric, labels)
            if s is None:
                return
            for i, c in enumerate(counts):
                if c:
                    s.counts[i] += int(c)
            s.sum += total
            s.count += n
            s.min = min(s.min, vmin)
            s.max = max(s.max, vmax)

    def snapshot(self):
        """[(metric, [(labels, cumulative counts, sum, count, min, max), ...]), ...]"""
        out = []
        with self._lock:
            for name, by_labels in self._series.items():
                rows = []
                for s in by_labels.values():
                    cum, run = [], 0
                    for c in s.counts:
                        run += c
                        cum.append(run)
                    rows.append((s.labels, cum, s.sum, s.count, s.min, s.max))
                out.append((self._metrics[name], rows))
        return out
