import json
import urllib.error
import urllib.request

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse

from exporter import Exporter


@pytest.fixture
def ex(port):
    e = Exporter(run="ep", framework="verl", port=port, final_scrape_grace=0)  # no end hold here
    e.log({"actor/pg_clipfrac": 0.2, "actor/pg_loss": float("nan"), "num_input_tokens_seen": 5.0})
    e.flush()
    yield e
    e.close()


def get(url, accept=None, method="GET"):
    req = urllib.request.Request(url, method=method, headers={"Accept": accept} if accept else {})
    return urllib.request.urlopen(req, timeout=5)


def test_default_bind_is_loopback(ex):
    assert ex.url.startswith("http://127.0.0.1:")


def test_prometheus_text_format(ex):
    r = get(ex.url)
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    body = r.read().decode()
    assert 'rl_policy_clip_ratio{run="ep"} 0.2' in body
    assert 'rl_policy_loss{run="ep"} NaN' in body
    assert "otel_scope_name" not in body and "target_info" not in body


def test_openmetrics_format(ex):
    r = get(ex.url, accept="application/openmetrics-text; version=1.0.0")
    assert r.headers["Content-Type"].startswith("application/openmetrics-text")
    body = r.read().decode()
    assert body.endswith("# EOF\n")
    names = {f.name for f in om_parse(body)}
    assert {"rl_policy_clip_ratio", "rl_exporter_frames_received", "rl_exporter_frame_processing_seconds"} <= names


def test_healthz(ex):
    body = json.loads(get(ex.url.replace("/metrics", "/healthz")).read())
    assert body["status"] == "ok" and body["run"] == "ep" and body["frames_processed"] == 1


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_metrics_is_read_only(ex, method):
    with pytest.raises(urllib.error.HTTPError) as e:
        get(ex.url, method=method)
    assert e.value.code == 405


def test_unknown_path_is_404(ex):
    with pytest.raises(urllib.error.HTTPError) as e:
        get(ex.url.replace("/metrics", "/admin"))
    assert e.value.code == 404
