"""OpenTelemetry's standard environment variables, honoured beside our own switches, against a
real OTLP/HTTP receiver and the real SDK: the service name and resource attributes, the
signal-specific endpoint, the SDK's headers, OTEL_SDK_DISABLED, OTEL_{METRICS,TRACES}_EXPORTER;
and one line with the install command when the otlp extra is missing."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http.metric_exporter")

from exporter import Exporter  # noqa: E402
from tests.helpers import OTLPReceiver  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
OTEL_VARS = ("OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME",
             "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
             "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
             "RL_EXPORTER_TRACES")


@pytest.fixture
def rx(monkeypatch):
    for name in OTEL_VARS:
        monkeypatch.delenv(name, raising=False)
    r = OTLPReceiver()
    yield r
    r.close()


def one_step(**kw) -> Exporter:
    ex = Exporter(run="env", serve=False, gpu=False, otlp_interval=60, **kw)
    with ex.timer("gen"):
        pass
    ex.log({"actor/pg_loss": 0.5}, step=1)
    ex.close(timeout=5)  # the last push
    return ex


def resource(rx) -> dict:
    (_, _, req), *_ = rx.metric_requests()
    return {a.key: a.value.string_value for a in req.resource_metrics[0].resource.attributes}


def test_service_name_resource_attributes_and_headers_from_the_environment(rx, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "grpo-trainer")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=rl")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret")
    one_step()
    attrs = resource(rx)
    assert attrs["service.name"] == "grpo-trainer"          # was always "rl-exporter"
    assert attrs["deployment.environment"] == "prod" and attrs["team"] == "rl"
    assert attrs["rl.run"] == "env"
    assert rx.headers[0]["authorization"] == "Bearer s3cret"


def test_without_the_environment_the_service_is_rl_exporter(rx):
    one_step(otlp_endpoint=rx.url)
    assert resource(rx)["service.name"] == "rl-exporter"


def test_the_signal_endpoint_is_used_as_given(rx, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", rx.url + "/collector/metrics")
    one_step()
    assert set(rx.paths) == {"/collector/metrics"}


@pytest.mark.parametrize("var,value", [("OTEL_SDK_DISABLED", "true"), ("OTEL_METRICS_EXPORTER", "none")])
def test_sdk_disabled_and_exporter_none_push_nothing(rx, monkeypatch, var, value):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url)
    monkeypatch.setenv(var, value)
    ex = one_step()
    assert ex.telemetry.otlp_endpoint is None and rx.posts == []


def test_traces_exporter_turns_traces_on_and_off(rx, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")       # on without RL_EXPORTER_TRACES=1
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    ex = one_step()
    assert ex.spans is not None and "/v1/traces" in rx.paths and "/v1/metrics" not in rx.paths
    rx.posts.clear()
    monkeypatch.setenv("RL_EXPORTER_TRACES", "1")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")       # the standard switch wins
    ex = one_step()
    assert ex.spans is None and rx.posts == []


def test_a_missing_otlp_extra_says_how_to_install_it():
    code = ("import sys\n"
            "for m in ('opentelemetry', 'opentelemetry.sdk', 'opentelemetry.sdk.resources',\n"
            "          'opentelemetry.exporter.otlp.proto.http.metric_exporter'):\n"
            "    sys.modules[m] = None\n"
            "from exporter import Exporter\n"
            "ex = Exporter(run='x', serve=False, gpu=False, otlp_endpoint='http://127.0.0.1:1')\n"
            "ex.close()\n")
    env = {k: v for k, v in os.environ.items() if k not in OTEL_VARS}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(env, PYTHONPATH=str(ROOT)), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "OTLP push to http://127.0.0.1:1 is off: it needs the otlp extra: " \
           "pip install 'rl-exporter[otlp]'" in r.stderr, r.stderr
