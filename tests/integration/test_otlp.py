"""OTLP http/protobuf push to a local receiver that decodes ExportMetricsServiceRequest."""
import time

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http.metric_exporter")

from exporter import Exporter  # noqa: E402
from tests.helpers import OTLPReceiver as Receiver  # noqa: E402

pytestmark = pytest.mark.integration


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
    path, ctype, _ = rx.posts[0]  # every push, as it arrived
    assert path == "/v1/metrics" and ctype == "application/x-protobuf"
    assert pts[("rl_policy_clip_ratio", (("run", "otlp"),))] == 0.25
    assert pts[("rl_phase_duration_seconds", (("phase", "gen"), ("run", "otlp")))] == 12.0
    assert pts[("rl_training_step", (("run", "otlp"),))] == 3
    assert pts[("rl_exporter_frame_processing_seconds", (("run", "otlp"),))] >= 1
    # OTLP has no NaN gauge: the NaN loss is not pushed, but its count is
    assert ("rl_policy_loss", (("run", "otlp"),)) not in pts
    assert pts[("rl_exporter_nonfinite_values_total", (("metric", "rl_policy_loss"), ("run", "otlp")))] == 1
