"""OTLP http/protobuf push to a local receiver that decodes ExportMetricsServiceRequest."""
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http.metric_exporter")
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (  # noqa: E402
    ExportMetricsServiceRequest)

from exporter import Exporter  # noqa: E402

pytestmark = pytest.mark.integration


class Receiver:
    def __init__(self):
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                req = ExportMetricsServiceRequest()
                req.ParseFromString(body)
                outer.requests.append((self.path, self.headers["Content-Type"], req))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def points(self):
        out = {}
        for _, _, req in self.requests:
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        for p in getattr(m, kind).data_points:
                            attrs = {a.key: a.value.string_value for a in p.attributes}
                            val = p.as_double if kind in ("gauge", "sum") else p.count
                            out[(m.name, tuple(sorted(attrs.items())))] = val
        return out


def test_otlp_push_carries_store_series_and_histograms():
    rx = Receiver()
    ex = Exporter(run="otlp", framework="verl", serve=False, otlp_endpoint=rx.url, otlp_interval=0.3)
    try:
        ex.log({"actor/pg_clipfrac": 0.25, "timing_s/gen": 12.0, "actor/pg_loss": float("nan")}, step=3)
        ex.flush()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and ("rl_policy_clip_ratio", (("run", "otlp"),)) not in rx.points():
            time.sleep(0.1)
    finally:
        ex.close()
        rx.server.shutdown()
    pts = rx.points()
    path, ctype, _ = rx.requests[0]
    assert path == "/v1/metrics" and ctype == "application/x-protobuf"
    assert pts[("rl_policy_clip_ratio", (("run", "otlp"),))] == 0.25
    assert pts[("rl_phase_duration_seconds", (("phase", "gen"), ("run", "otlp")))] == 12.0
    assert pts[("rl_training_step", (("run", "otlp"),))] == 3
    assert pts[("rl_exporter_frame_processing_seconds", (("run", "otlp"),))] >= 1
    # OTLP has no NaN gauge: the NaN loss is not pushed, but its count is
    assert ("rl_policy_loss", (("run", "otlp"),)) not in pts
    assert pts[("rl_exporter_nonfinite_values_total", (("metric", "rl_policy_loss"), ("run", "otlp")))] == 1
