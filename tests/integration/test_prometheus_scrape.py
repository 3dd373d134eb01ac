"""A real Prometheus scrapes `rl-exporter demo`; PromQL sees the canonical series."""
import math
import subprocess

import pytest

from tests.conftest import free_port, require_binary, rl_exporter_cmd, stop
from tests.helpers import scrape_text
from tests.integration.prom import Prometheus

pytestmark = pytest.mark.integration


def start_demo(scenario: str, port: int, tmp_path):
    log = (tmp_path / f"demo-{scenario}.log").open("w")
    proc = subprocess.Popen(rl_exporter_cmd("demo", "--scenario", scenario, "--port", str(port),
                                            "--interval", "0.1", "--onset", "5", "--val-every", "5"),
                            stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    assert f"127.0.0.1:{port}/metrics" in line, line
    return proc


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scrape")
    ports = {"healthy": free_port(), "nan-loss": free_port()}
    demos = [start_demo(s, p, tmp) for s, p in ports.items()]
    prom = Prometheus(tmp, [f"127.0.0.1:{p}" for p in ports.values()])
    try:
        # both targets scraped with some history (a loaded CI machine starts them slowly)
        prom.wait_for('count(rl_training_step > 10) >= 2', timeout=60)
        yield prom, ports
    finally:
        prom.stop()
        for d in demos:
            stop(d)


def test_targets_are_up(stack):
    prom, ports = stack
    up = {r["metric"]["instance"]: r["value"][1] for r in prom.query("up")}
    assert up == {f"127.0.0.1:{p}": "1" for p in ports.values()}


def test_canonical_series_with_plausible_values(stack):
    prom, _ = stack
    gen = prom.query('rl_phase_duration_seconds{run="demo-healthy",phase="gen"}')
    assert 30 < float(gen[0]["value"][1]) < 50
    clip = float(prom.query('rl_policy_clip_ratio{run="demo-healthy",bound=""}')[0]["value"][1])
    assert 0.05 <= clip <= 0.3
    val = prom.query('rl_validation_score{run="demo-healthy",tier="core",var="acc"}')
    assert val[0]["metric"]["data_source"] == "openai/gsm8k"
    info = prom.query('rl_run_info{run="demo-healthy"}')[0]["metric"]
    assert info["algorithm"] == "grpo" and info["framework"] == "auto"


def test_run_stalled_is_one_expression(stack):
    prom, _ = stack
    age = prom.query('time() - rl_training_step_timestamp_seconds{run="demo-healthy"}')
    assert 0 <= float(age[0]["value"][1]) < 10


def test_nan_loss_reaches_prometheus_as_nan(stack):
    prom, _ = stack
    nan = prom.query('rl_policy_loss{run="demo-nan-loss"} != rl_policy_loss{run="demo-nan-loss"}')
    assert nan and math.isnan(float(nan[0]["value"][1]))
    counted = prom.query('rl_exporter_nonfinite_values_total{run="demo-nan-loss",metric="rl_policy_loss"}')
    assert float(counted[0]["value"][1]) > 0


def test_histogram_from_otel_is_queryable(stack):
    prom, _ = stack
    q = prom.wait_for('histogram_quantile(0.5, sum by (le) (rate(rl_exporter_frame_processing_seconds_bucket'
                   '{run="demo-healthy"}[30s])))')
    assert q and 0 < float(q[0]["value"][1]) < 0.1


def test_promtool_check_metrics_is_clean(stack):
    _, ports = stack
    promtool = require_binary("promtool")
    body = scrape_text(f"http://127.0.0.1:{ports['healthy']}/metrics").encode()
    r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    assert r.returncode == 0, r.stdout + r.stderr
