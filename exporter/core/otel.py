"""OpenTelemetry wiring: one MeterProvider with the Prometheus reader for the
OTel-native instruments (histograms from timer()/observe()), and optional OTLP
push (http/protobuf) of everything, for fleets that run a Collector.

Store-backed gauges are served to Prometheus by StoreCollector (NaN-faithful);
for OTLP they are mirrored by observable gauges on a second, OTLP-only provider
so the Prometheus reader does not render them twice.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource

from .. import __version__
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


def _histogram_views(catalog: Catalog) -> list[View]:
    return [View(instrument_type=Histogram, instrument_name=m.name,
                 aggregation=ExplicitBucketHistogramAggregation(boundaries=m.buckets))
            for m in catalog.metrics.values() if m.kind == HISTOGRAM]


def _otlp_reader(endpoint: str, interval_s: float, headers: dict | None = None, on_error=None):
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import MetricExportResult
    except ImportError as e:  # optional extra
        raise RuntimeError("OTLP push needs the 'otlp' extra: pip install 'rl-exporter[otlp]'") from e
    if not endpoint.rstrip("/").endswith("/v1/metrics"):
        endpoint = endpoint.rstrip("/") + "/v1/metrics"

    class CountingExporter(OTLPMetricExporter):
        """Counts each failed push (collector down, slow, refusing) as
        rl_exporter_errors_total{kind="otlp_export"}: the SDK only logs it."""

        def export(self, metrics_data, timeout_millis=10_000, **kwargs):
            _pushing.on, _pushing.first = True, None
            try:
                result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
            except Exception as e:
                result = e
            finally:
                _pushing.on = False
            if result is not MetricExportResult.SUCCESS and on_error is not None:
                why = f": {_pushing.first}" if _pushing.first else ""
                on_error("otlp_export", None, f"OTLP push to {endpoint} failed ({result}{why}); "
                         "each failed push is counted, and the OTLP exporter's own warnings "
                         "about them are not logged")
            return result if isinstance(result, MetricExportResult) else MetricExportResult.FAILURE

    _quiet_sdk_logger()
    # a push never waits longer than the interval for a slow collector
    exporter = CountingExporter(endpoint=endpoint, headers=headers, timeout=max(1.0, interval_s))
    return PeriodicExportingMetricReader(exporter, export_interval_millis=interval_s * 1000,
                                         export_timeout_millis=max(1.0, interval_s) * 1000)


class Telemetry:
    def __init__(self, registry, resource_attrs: dict, *, catalog: Catalog = CATALOG,
                 otlp_endpoint: str | None = None, otlp_interval_s: float = 15.0,
                 scope_labels: bool = False, on_error=None):
        self.catalog = catalog
        self._on_error = on_error  # (kind, exc, message): the exporter's counted errors
        self.resource = Resource.create({k: v for k, v in resource_attrs.items() if v})
        readers = [PrometheusMetricReader(disable_target_info=True,
                                          scope_info_enabled=scope_labels, registry=registry)]
        self.otlp_endpoint = otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None
        self._gauge_provider = None
        if self.otlp_endpoint:
            # OTLP is set from the environment by operators (OTEL_EXPORTER_OTLP_ENDPOINT):
            # a missing extra or a bad endpoint costs OTLP push, never the trainer's start
            try:
                readers.append(_otlp_reader(self.otlp_endpoint, otlp_interval_s,
                                            on_error=self._error))
            except Exception as e:
                self._error("otlp", e, f"OTLP push to {self.otlp_endpoint} is off: {e}")
                self.otlp_endpoint = None
        # shutdown_on_exit=False: Exporter.close() (also run at exit) shuts down in order
        self.provider = MeterProvider(resource=self.resource, metric_readers=readers,
                                      views=_histogram_views(catalog), shutdown_on_exit=False)
        self.meter = self.provider.get_meter(SCOPE, __version__)
        self._instruments: dict[str, object] = {}
        self._stores = []
        if self.otlp_endpoint:
            try:
                self._gauge_provider = MeterProvider(
                    resource=self.resource,
                    metric_readers=[_otlp_reader(self.otlp_endpoint, otlp_interval_s,
                                                on_error=self._error)],
                    shutdown_on_exit=False)
            except Exception as e:
                self._error("otlp", e, f"OTLP push of gauges to {self.otlp_endpoint} is off: {e}")
                return
            self._gauge_meter = self._gauge_provider.get_meter(SCOPE, __version__)
            self._mirrored: set[str] = set()

    def _error(self, kind, exc, message):
        if self._on_error is not None:
            self._on_error(kind, exc, message)
        else:
            log.error("rl-exporter: %s", message)

    def histogram(self, name: str):
        """The OTel histogram for a catalog HISTOGRAM metric (buckets from the catalog)."""
        inst = self._instruments.get(name)
        if inst is None:
            m = self.catalog.metrics[name]
            if m.kind != HISTOGRAM:
                raise ValueError(f"{name} is a {m.kind}, not a histogram")
            inst = self.meter.create_histogram(name, unit=m.unit, description=m.help)
            self._instruments[name] = inst
        return inst

    # ------------------------------------------------------------ OTLP mirror of the store
    def mirror(self, store, extra=None) -> None:
        """Export a store's series, and the computed ones `extra()` yields (self-metrics),
        over OTLP. Finite values only: an OTLP gauge has no NaN."""
        if self._gauge_provider is None:
            return
        self._stores.append((store, extra))
        for m in self.catalog.metrics.values():
            if m.kind == HISTOGRAM or m.name in self._mirrored:
                continue
            self._mirrored.add(m.name)
            cb = self._callback(m.name)
            if m.kind == COUNTER:
                self._gauge_meter.create_observable_counter(m.name, [cb], unit=m.unit,
                                                            description=m.help)
            else:
                self._gauge_meter.create_observable_gauge(m.name, [cb], unit=m.unit,
                                                          description=m.help)

    def _callback(self, name: str):
        def observe(options: CallbackOptions):
            out = []
            for store, extra in self._stores:
                for i in store.ids(name):
                    v = store.values[i]
                    if math.isfinite(v):
                        out.append(Observation(v, store.labels[i]))
                if extra is not None:
                    for st, metric, labels, v in extra():
                        if metric == name and math.isfinite(v):
                            out.append(Observation(float(v), {"run": st.run, **labels}))
            return out
        return observe

    def force_flush(self, timeout_ms: int = 5000) -> None:
        """Push now, within timeout_ms in all (a slow or absent collector costs the wait,
        bounded; a failed push is counted as errors{kind="otlp"})."""
        import time
        end = time.monotonic() + timeout_ms / 1000.0
        for p in (self.provider, self._gauge_provider):
            if p is None:
                continue
            left = int(max(0.0, end - time.monotonic()) * 1000)
            try:
                if not p.force_flush(left):
                    self._error("otlp", None, "OTLP flush did not complete in time")
            except Exception as e:
                self._error("otlp", e, f"OTLP flush failed: {e!r}")

    def close(self, deadline: float) -> None:
        """Last push (when OTLP is on) and shutdown, together bounded by `deadline`
        (time.monotonic()), with a floor of 0.5 s for the push. The SDK's shutdown waits for
        a push in flight (up to its own timeout, the push interval) whatever it is told, so it
        runs on a thread of its own that close() stops waiting for at the deadline."""
        def finish():
            if self.otlp_endpoint:
                self.force_flush(int(max(0.5, deadline - time.monotonic()) * 1000))
            self.shutdown(int(max(0.1, deadline - time.monotonic()) * 1000))
        t = threading.Thread(target=finish, name="rl-exporter-otel-close", daemon=True)
        t.start()
        t.join(max(0.5, deadline - time.monotonic()) if self.otlp_endpoint else None)
        if t.is_alive():
            self._error("otlp", None, "OTLP shutdown did not finish within close()'s timeout (a "
                        "push to a collector that does not answer); it ends in the background")

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Stop the providers; a final push to a slow collector waits at most timeout_ms."""
        for p in (self.provider, self._gauge_provider):
            if p is not None:
                try:
                    p.shutdown(timeout_millis=timeout_ms)
                except Exception as e:  # shutting down must not raise into the caller
                    log.debug("meter provider shutdown: %s", e)
