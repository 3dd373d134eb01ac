"""Frames -> the pipeline `serve` uses -> the store rendered as sample lines.

`serve` feeds each parsed frame to a Pipeline (one per run and framework) and renders its
store with `StoreCollector`; a scrape is that collector's output. Here the same pipeline
processes one frame at a time on this thread, stamped with the frame's time, and the same
collector renders the store after each step, so names, labels and values are what a scrape
of `serve` would have returned then.
"""
from __future__ import annotations

from ..core.collector import StoreCollector
from ..core.pipeline import Pipeline, run_info
from .openmetrics import series_text, value_text

_SPECIAL = {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}  # repr() -> OpenMetrics


class Replay:
    def __init__(self, run: str, framework: str, *, algorithm: str | None = None,
                 model: str | None = None):
        # the pipeline Sidecar.run_for builds; frames are processed on this thread. Backfill
        # cuts the log into segments itself (one run label each), so no replay sees a seam.
        self.pipeline = Pipeline(run, framework=framework, queue_size=4096,
                                 info=run_info(framework, algorithm, model), segments=False)
        self.collector = StoreCollector(self.pipeline.store, extra=self.pipeline.self_metrics)
        self.framework = framework
        self._prefix: dict = {}
        self._rows: list = []      # ("name{labels} ", series id) of the store's plain series
        self._version = -1         # the store version _rows were built for

    def apply(self, data: dict, step, ts: float) -> None:
        """Process one frame now, on this thread, as the worker would have at `ts`: in order,
        without waiting for the worker thread per frame."""
        self.pipeline.process_now(data, step, ts)

    def render(self) -> list[str]:
        """`name{labels} value` for every series, as the collector renders it now: the store's
        plain series from its values (their text built once per store version), the
        histograms and the exporter's own series through the collector's families."""
        store = self.pipeline.store
        if store.version != self._version:
            self._version = store.version
            self._rows = [(series_text(sample_name, lab) + " ", i)
                          for _, _, sample_name, labels, ids in self.collector.plain(store)
                          for lab, i in zip(labels, ids)]
        vals, special = store.values, _SPECIAL
        out = []
        for p, i in self._rows:
            v = vals[i]
            if v.__class__ is float:
                r = repr(v)
                out.append(p + special.get(r, r))
            else:
                out.append(p + value_text(v))
        prefix = self._prefix
        for fam in self.collector.derived().values():
            for s in fam.samples:
                key = (s.name, tuple(s.labels.items()))
                p = prefix.get(key)
                if p is None:
                    p = prefix[key] = series_text(s.name, s.labels) + " "
                out.append(p + value_text(s.value))
        return out

    @property
    def series(self) -> int:
        return len(self._rows) + len(self._prefix)

    def close(self) -> None:
        self.pipeline.close(timeout=1.0)
