"""OTLP push (http/protobuf) of the store, for fleets that run an OpenTelemetry Collector.

OpenTelemetry has one role here: the OTLP mirror. Every push reads what /metrics would show
(gauges, counters, state sets, histograms of every mirrored store, and the exporter's own
counters) and sends it as OTLP data points built with the SDK's public data model
(`opentelemetry.sdk.metrics.export`) through the OTLP exporter: cumulative sums and histograms,
gauges as they are. NaN and +/-Inf are left out (an OTLP gauge has no NaN; the non-finite
counters say how many were seen). With no endpoint nothing here is imported or started.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time

from .._version import __version__
from ..catalog import CATALOG, COUNTER, HISTOGRAM, Catalog

log = logging.getLogger(__name__)

SCOPE = "rl-exporter"

# The OTLP exporter logs a warning for every failed push (2-3 lines each, every interval,
# for as long as the collector is away), into the trainer's own log. Our pushes count each
# failure (errors{kind="otlp_export"}) and say so once; the SDK's lines about them are
# dropped. Only records logged while one of *our* pushes runs on that thread are dropped:
# another OTLP user in the same process keeps its warnings.
_SDK_LOGGER = "opentelemetry.exporter.otlp.proto.http.metric_exporter"
_pushing = threading.local()


class _QuietDuringOurPush(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_pushing, "on", False):
            if _pushing.first is None:
                _pushing.first = record.getMessage()
            return False
        return True


def _quiet_sdk_logger() -> None:
    sdk = logging.getLogger(_SDK_LOGGER)
    if not any(isinstance(f, _QuietDuringOurPush) for f in sdk.filters):
        sdk.addFilter(_QuietDuringOurPush())


def _otlp_exporter(endpoint: str, timeout_s: float, headers: dict | None = None):
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    except ImportError as e:  # optional extra
        raise RuntimeError("OTLP push needs the 'otlp' extra: pip install 'rl-exporter[otlp]'") from e
    if not endpoint.rstrip("/").endswith("/v1/metrics"):
        endpoint = endpoint.rstrip("/") + "/v1/metrics"
    _quiet_sdk_logger()
    return OTLPMetricExporter(endpoint=endpoint, headers=headers, timeout=timeout_s), endpoint


class Telemetry:
    """Pushes the mirrored stores every `otlp_interval_s` seconds when an endpoint is set
    (argument or OTEL_EXPORTER_OTLP_ENDPOINT); otherwise inert."""

    def __init__(self, resource_attrs: dict, *, catalog: Catalog = CATALOG,
                 otlp_endpoint: str | None = None, otlp_interval_s: float = 15.0, on_error=None):
        self.catalog = catalog
        self._on_error = on_error  # (kind, exc, message): the exporter's counted errors
        self.interval = max(0.05, float(otlp_interval_s))
        self._stores: list = []
        self._stop = threading.Event()
        self._thread = None
        self._push_lock = threading.Lock()   # one push at a time (the loop, flush, close)
        self._start_ns = time.time_ns()
        self._exporter = None
        self.otlp_endpoint = otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None
        if not self.otlp_endpoint:
            return
        # OTLP is set from the environment by operators (OTEL_EXPORTER_OTLP_ENDPOINT): a
        # missing extra or a bad endpoint costs OTLP push, never the trainer's start.
        # A push never waits longer than the interval for a slow collector.
        try:
            from opentelemetry.sdk.resources import Resource
            self._exporter, self.url = _otlp_exporter(self.otlp_endpoint, max(1.0, self.interval))
            self._resource = Resource.create({k: v for k, v in resource_attrs.items() if v})
        except Exception as e:
            self._error("otlp", e, f"OTLP push to {self.otlp_endpoint} is off: {e}")
            self._exporter, self.otlp_endpoint = None, None

    def _error(self, kind, exc, message):
        if self._on_error is not None:
            self._on_error(kind, exc, message)
        else:
            log.error("rl-exporter: %s", message)

    # ------------------------------------------------------------ what is pushed
    def mirror(self, store, extra=None) -> None:
        """Push a store's series, and the computed ones `extra()` yields (self-metrics)."""
        if self._exporter is None:
            return
        self._stores.append((store, extra))
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="rl-exporter-otlp", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.push()

    def collect(self):
        """The OTLP MetricsData for everything mirrored, as of now."""
        from opentelemetry.sdk.metrics.export import (AggregationTemporality, Gauge, Histogram,
                                                      HistogramDataPoint, Metric, MetricsData,
                                                      NumberDataPoint, ResourceMetrics,
                                                      ScopeMetrics, Sum)
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        now, start = time.time_ns(), self._start_ns
        cumulative = AggregationTemporality.CUMULATIVE
        points: dict[str, list] = {}
        for store, extra in self._stores:
            values = store.values
            for metric, ids in store.snapshot():
                out = points.setdefault(metric.name, [])
                for i in ids:
                    v = values[i]
                    if math.isfinite(v):
                        out.append(NumberDataPoint(dict(store.labels[i]), start, now, v))
            for metric, rows in store.histograms.snapshot():
                out = points.setdefault(metric.name, [])
                for labels, cum, total, count, vmin, vmax in rows:
                    per = [cum[0]] + [b - a for a, b in zip(cum, cum[1:])]
                    out.append(HistogramDataPoint(dict(labels), start, now, count, total, per,
                                                  list(metric.buckets), vmin, vmax))
            if extra is not None:
                for st, name, labels, v in extra():
                    if math.isfinite(v):
                        points.setdefault(name, []).append(
                            NumberDataPoint({"run": st.run, **labels}, start, now, float(v)))
        metrics = []
        for name, pts in points.items():
            if not pts:
                continue
            m = self.catalog.metrics[name]
            if m.kind == HISTOGRAM:
                data = Histogram(pts, cumulative)
            elif m.kind == COUNTER:
                data = Sum(pts, cumulative, True)
            else:
                data = Gauge(pts)
            metrics.append(Metric(name, m.help, m.unit, data))
        scope = InstrumentationScope(SCOPE, __version__)
        return MetricsData([ResourceMetrics(self._resource, [ScopeMetrics(scope, metrics, "")], "")])

    # ------------------------------------------------------------ pushing
    def push(self, timeout_ms: float | None = None) -> bool:
        """One push of everything mirrored; a failure is counted, never raised."""
        if self._exporter is None:
            return False
        from opentelemetry.sdk.metrics.export import MetricExportResult
        timeout_ms = max(1.0, self.interval) * 1000 if timeout_ms is None else timeout_ms
        with self._push_lock:
            _pushing.on, _pushing.first = True, None
            try:
                result = self._exporter.export(self.collect(), timeout_millis=timeout_ms)
            except Exception as e:
                result = e
            finally:
                _pushing.on = False
        if result is MetricExportResult.SUCCESS:
            return True
        why = f": {_pushing.first}" if _pushing.first else ""
        self._error("otlp_export", None, f"OTLP push to {self.url} failed ({result}{why}); "
                    "each failed push is counted, and the OTLP exporter's own warnings about "
                    "them are not logged")
        return False

    def force_flush(self, timeout_ms: int = 5000) -> bool:
        """Push now, waiting at most timeout_ms."""
        return self._bounded(lambda: self.push(timeout_ms), time.monotonic() + timeout_ms / 1000)

    def close(self, deadline: float) -> None:
        """The last push, within `deadline` (time.monotonic(); a floor of 0.5 s), then stop.
        A push to a collector that does not answer can outlast its own timeout (retries), so
        it runs on a thread of its own that close() stops waiting for at the deadline."""
        if self._exporter is None:
            return
        self._stop.set()
        left_ms = max(0.5, deadline - time.monotonic()) * 1000

        def last():
            self.push(left_ms)
            try:
                self._exporter.shutdown(timeout_millis=100)
            except Exception as e:  # shutting down must not raise into the caller
                log.debug("OTLP exporter shutdown: %s", e)
        self._bounded(last, time.monotonic() + left_ms / 1000)

    def _bounded(self, fn, deadline: float) -> bool:
        t = threading.Thread(target=fn, name="rl-exporter-otlp-push", daemon=True)
        t.start()
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            self._error("otlp", None, "an OTLP push did not finish in time (a collector that "
                        "does not answer); it ends in the background")
            return False
        return True
