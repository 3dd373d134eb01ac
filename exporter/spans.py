"""OpenTelemetry traces of a run's steps and phases (opt-in: RL_EXPORTER_TRACES=1 with an OTLP
endpoint), so Tempo or Jaeger show a step's timeline and where a hang sits in it.

- one span per step, `rl.step`, from the previous step's arrival to this one's (opened when
  the previous step arrived, so the phases inside it are its children);
- one span per phase occurrence (`timer(phase)` and the frameworks' timers the integrations
  track), opened and closed with the phase, child of the step span open at the time;
- a hang capture (exporter/stacks.py) is an `rl.hang` event on the open phase's span (the
  stacks cut to MAX_EVENT_STACKS characters; the whole dump is at /debug/stacks).

Spans go through the SDK's BatchSpanProcessor (its own thread, bounded queue) and
OTLP/HTTP to `<endpoint>/v1/traces`. Nothing here raises into the caller: a failure is
counted as rl_exporter_errors_total{kind="traces"}.
"""
from __future__ import annotations

import os
import threading
import time

ENV = "RL_EXPORTER_TRACES"
MAX_EVENT_STACKS = 16_000


def wanted(otlp_endpoint: str | None) -> str | None:
    """The OTLP URL to send traces to, or None when traces are off: on with RL_EXPORTER_TRACES=1
    or OTEL_TRACES_EXPORTER=otlp, off with OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true
    (exporter/core/otel.py reads OpenTelemetry's variables)."""
    from .core.otel import signal_endpoint, signal_url
    ours = os.environ.get(ENV, "").lower() in ("1", "true", "yes")
    where = signal_endpoint("traces", otlp_endpoint, on_by_default=ours)
    return signal_url(where[0], where[1], "traces") if where else None


class Spans:
    def __init__(self, run: str, url: str, counts, resource: dict | None = None):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace import set_span_in_context

        from .core.otel import resource_attributes
        self.run, self.counts = run, counts
        self._ctx = set_span_in_context
        attrs = {"service.name": "rl-exporter", "rl.run": run}
        attrs.update(resource or {})
        self.provider = TracerProvider(resource=Resource.create(resource_attributes(attrs)))
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url),
                                                            schedule_delay_millis=500))
        self.tracer = self.provider.get_tracer("rl-exporter")
        self._lock = threading.Lock()
        self._step = None                      # the open step span
        self._open: dict[str, list] = {}       # phase -> its open spans, oldest first

    @classmethod
    def start(cls, exporter, otlp_endpoint: str | None):
        endpoint = wanted(otlp_endpoint)
        if endpoint is None:
            return None
        try:
            return cls(exporter.run, endpoint, exporter.counts)
        except Exception as e:  # the otlp extra missing, a bad endpoint: counted, not raised
            from .core.otel import INSTALL_HINT
            why = INSTALL_HINT if isinstance(e, ImportError) else str(e)
            exporter.counts.error("traces", e, f"OpenTelemetry traces are off: {why}")
            return None

    def _ns(self, wall: float | None) -> int:
        return int((time.time() if wall is None else wall) * 1e9)

    # ------------------------------------------------------------ steps (worker thread)
    def step(self, step, ts: float) -> None:
        """Step `step` arrived at `ts`: end the open step span there, open the next one."""
        try:
            with self._lock:
                prev, self._step = self._step, None
                if prev is not None:
                    prev.set_attribute("rl.step", float(step))
                    prev.end(end_time=self._ns(ts))
                self._step = self.tracer.start_span("rl.step", start_time=self._ns(ts),
                                                    attributes={"rl.run": self.run,
                                                                "rl.previous_step": float(step)})
        except Exception as e:
            self.counts.error("traces", e)

    # ------------------------------------------------------------ phases (caller thread)
    def opened(self, phase: str, wall: float) -> None:
        try:
            with self._lock:
                parent = self._step
            ctx = self._ctx(parent) if parent is not None else None
            span = self.tracer.start_span(phase, context=ctx, start_time=self._ns(wall),
                                          attributes={"rl.run": self.run, "rl.phase": phase})
            with self._lock:
                self._open.setdefault(phase, []).append(span)
        except Exception as e:
            self.counts.error("traces", e)

    def closed(self, phase: str) -> None:
        try:
            with self._lock:
                spans = self._open.get(phase)
                span = spans.pop() if spans else None
                if spans == []:
                    del self._open[phase]
            if span is not None:
                span.end()
        except Exception as e:
            self.counts.error("traces", e)

    def hang(self, capture: dict) -> None:
        """A hang capture: an event on the hung phase's open span (or the open step's)."""
        try:
            with self._lock:
                spans = self._open.get(capture.get("phase") or "")
                span = spans[0] if spans else self._step
            if span is None:
                return
            span.add_event("rl.hang", attributes={
                "rl.hang.reason": capture.get("reason", ""),
                "rl.hang.threshold_seconds": float(capture.get("threshold_seconds") or 0.0),
                "rl.hang.stacks": capture.get("stacks", "")[:MAX_EVENT_STACKS]})
        except Exception as e:
            self.counts.error("traces", e)

    def close(self, timeout: float) -> None:
        """End the open spans where they are now and push what is queued, within timeout."""
        try:
            with self._lock:
                left = [s for spans in self._open.values() for s in spans]
                if self._step is not None:
                    left.append(self._step)
                self._open, self._step = {}, None
            for s in left:
                s.end()
            self.provider.force_flush(int(max(0.1, timeout) * 1000))
            self.provider.shutdown()
        except Exception as e:
            self.counts.error("traces", e)
