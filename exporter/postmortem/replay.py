"""Frames -> the exporter path `serve` uses -> the store rendered as sample lines.

`serve` feeds each parsed frame to an `Exporter` (one per run and framework, private
registry, no endpoint) and renders its store with `StoreCollector`; a scrape is that
collector's output. Here the same exporter processes one frame at a time on this thread,
stamped with the frame's time, and the same collector renders the store after each step,
so names, labels and values are what a scrape of `serve` would have returned then.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from .openmetrics import series_text, value_text


class Replay:
    def __init__(self, run: str, framework: str, *, algorithm: str | None = None,
                 model: str | None = None):
        from ..hook import Exporter
        # exactly what Sidecar.exporter_for builds
        self.exporter = Exporter(run=run, framework=framework, serve=False,
                                 registry=CollectorRegistry(auto_describe=False), gpu=False,
                                 algorithm=algorithm, model=model, queue_size=4096)
        self.exporter.hang_watch.stop()  # a replay is not a live run: no stack dumps
        self.framework = framework
        self._prefix: dict = {}

    def apply(self, data: dict, step, ts: float) -> None:
        """Process one frame now, on this thread, as the worker would have at `ts`: in order,
        without waiting for the worker thread per frame."""
        self.exporter.process_now(data, step, ts)

    def render(self) -> list[str]:
        """`name{labels} value` for every series, as the collector renders it now."""
        out = []
        prefix = self._prefix
        for fam in self.exporter.collector.collect():
            for s in fam.samples:
                key = (s.name, tuple(s.labels.items()))
                p = prefix.get(key)
                if p is None:
                    p = prefix[key] = series_text(s.name, s.labels) + " "
                out.append(p + value_text(s.value))
        return out

    @property
    def series(self) -> int:
        return len(self._prefix)

    def close(self) -> None:
        self.exporter.close(timeout=1.0)
