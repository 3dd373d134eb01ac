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


# ------------------------------------------------------------------ OpenTelemetry's environment
# The SDK's standard variables, beside our own switches (an argument, --otlp-endpoint,
# RL_EXPORTER_TRACES): OTEL_SDK_DISABLED turns both signals off; OTEL_METRICS_EXPORTER /
# OTEL_TRACES_EXPORTER pick "otlp" or "none"; OTEL_EXPORTER_OTLP_{METRICS,TRACES}_ENDPOINT are used
# as given, OTEL_EXPORTER_OTLP_ENDPOINT gets the signal's path; OTEL_SERVICE_NAME and
# OTEL_RESOURCE_ATTRIBUTES name the resource. Headers, timeout, compression and certificates
# (OTEL_EXPORTER_OTLP_HEADERS, ...) the SDK's OTLP exporters read themselves.
INSTALL_HINT = "it needs the otlp extra: pip install 'rl-exporter[otlp]'"
_said_env: set = set()


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def sdk_disabled() -> bool:
    return _env("OTEL_SDK_DISABLED").lower() == "true"


def _exporters(signal: str) -> set[str] | None:
    """OTEL_<SIGNAL>_EXPORTER as a set of names, None when unset."""
    v = _env(f"OTEL_{signal.upper()}_EXPORTER")
    return {x.strip().lower() for x in v.split(",") if x.strip()} if v else None


def _say_env(key: str, message: str, *args) -> None:
    if key not in _said_env:
        _said_env.add(key)
        log.info(message, *args)


def signal_endpoint(signal: str, explicit: str | None, on_by_default: bool = True) -> tuple[str, bool] | None:
    """(endpoint, exact) to push `signal` ("metrics", "traces") to, or None when it is off:
    exact endpoints (OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT) are used as given, the others get
    /v1/<signal>. on_by_default: whether our own switch asks for it (traces are opt-in)."""
    if sdk_disabled():
        if explicit or _env("OTEL_EXPORTER_OTLP_ENDPOINT"):
            _say_env("disabled", "rl-exporter: OTLP push off: OTEL_SDK_DISABLED=true")
        return None
    chosen = _exporters(signal)
    if chosen is not None and "otlp" not in chosen:
        return None                   # "none" (or an exporter we do not ship)
    if chosen is None and not on_by_default:
        return None
    proto = _env(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or _env("OTEL_EXPORTER_OTLP_PROTOCOL")
    if proto and proto != "http/protobuf":
        _say_env("protocol", "rl-exporter: OTLP protocol %s is not supported; pushing http/protobuf", proto)
    exact = _env(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if explicit:
        return explicit, False
    if exact:
        return exact, True
    base = _env("OTEL_EXPORTER_OTLP_ENDPOINT")
    return (base, False) if base else None


def signal_url(endpoint: str, exact: bool, signal: str) -> str:
    if exact or endpoint.rstrip("/").endswith(f"/v1/{signal}"):
        return endpoint
    return endpoint.rstrip("/") + f"/v1/{signal}"


def resource_attributes(ours: dict) -> dict:
    """Our resource attributes, less the service name when OTEL_SERVICE_NAME or
    OTEL_RESOURCE_ATTRIBUTES sets one (the SDK's Resource.create merges those in)."""
    attrs = {k: v for k, v in ours.items() if v}
    if _env("OTEL_SERVICE_NAME") or any(part.split("=", 1)[0].strip() == "service.name"
                                       for part in _env("OTEL_RESOURCE_ATTRIBUTES").split(",")):
        attrs.pop("service.name", None)
    return attrs


def _otlp_exporter(endpoint: str, timeout_s: float, headers: dict | None = None, exact: bool = False):
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    except ImportError as e:  # optional extra
        raise RuntimeError(INSTALL_HINT) from e
    endpoint = signal_url(endpoint, exact, "metrics")
    _quiet_sdk_logger()
    # a timeout the operator set (OTEL_EXPORTER_OTLP_[METRICS_]TIMEOUT) is the SDK's to read
    timeout = None if (_env("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT") or _env("OTEL_EXPORTER_OTLP_TIMEOUT")) \
        else timeout_s
    return OTLPMetricExporter(endpoint=endpoint, headers=headers, timeout=timeout), endpoint


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
        where = signal_endpoint("metrics", otlp_endpoint)
        self.otlp_endpoint = where[0] if where else None
        if not self.otlp_endpoint:
            return
        # OTLP is set from the environment by operators (OTEL_EXPORTER_OTLP_ENDPOINT): a
        # missing extra or a bad endpoint costs OTLP push, never the trainer's start.
        # A push never waits longer than the interval for a slow collector.
        try:
            self._exporter, self.url = _otlp_exporter(self.otlp_endpoint, max(1.0, self.interval),
                                                      exact=where[1])
            from opentelemetry.sdk.resources import Resource
            self._resource = Resource.create(resource_attributes(resource_attrs))
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
