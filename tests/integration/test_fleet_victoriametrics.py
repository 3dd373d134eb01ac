"""Beyond one Prometheus: vmagent scrapes a simulated fleet and remote-writes to
VictoriaMetrics, where vmalert evaluates our rule file unchanged; the same vmagent also
remote-writes to a real Prometheus (remote-write receiver) that evaluates the same rules.
Both hold the very same samples, so a different answer is MetricsQL reading a query
differently, not scrape timing. The fleet dashboard's queries (and a sample of the others)
must answer the same from both, and the fleet recording rules must put every run in the
state the simulator gave it.

The fleet is frozen (no more steps) before the comparison. Each engine evaluates its
recording rules at its own instants, so answers that move with the evaluation time (step
age, derivatives over a window still filling with the frozen value) are compared within a
tolerance.
"""
from __future__ import annotations

import http.server
import json
import math
import re
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from exporter.alerts.recordings import FLEET_STATES
from exporter.dashboards import DASHBOARDS
from exporter.demo.fleet import Fleet
from tests.conftest import free_port, require_binary, stop

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "exporter" / "rules" / "rl-exporter.rules.yaml"
VARS = {"job": ".*", "namespace": ".*", "run": ".*", "__rate_interval": "1m", "__interval": "15s",
        "__range": "5m", "datasource": "x"}
SAMPLE = {"rl-overview": 12, "rl-diagnosis": 8, "rl-exporter-health": 4, "rl-gpu": 4}
TIME_QUERIES = ("age", "time()", "deriv")   # answers that move with the evaluation time
# ALERTS and the recordings built on it are each evaluator's own state: vmalert and Prometheus
# evaluate at their own instants, so a run's state can flip an evaluation apart and a sum over
# time of it differ by a sample or two (GPU-hours of failing runs: 0.033 vs 0 seen). Whether
# both put every run in its planned state is checked exactly by the run-state test.
EVALUATOR_STATE = ("ALERTS", "alerts_firing", "rl_run_state", "hw_gpus_failing")
# The goodput recordings are increase() over a window ending at each evaluator's own instant:
# Prometheus extrapolates increase() to the window's edges and starts a counter at its first
# sample, MetricsQL does not extrapolate and counts a counter born in the window from 0. So a
# few per cent apart (ratio 0.944 vs 0.946 seen), or a first scrape's worth of seconds
# (0 vs 0.0005 GPU-hours for a run whose counter stopped), never a different answer.
EVALUATOR_WINDOW = ("rl_goodput",)


def substitute(expr: str) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: VARS[m.group(1) or m.group(2)], expr)


def get(url: str) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url}: {log.read_text()[-2000:]}")


class _Sink(http.server.BaseHTTPRequestHandler):
    """vmalert's notifier: accepts alerts, keeps nothing (the comparison reads ALERTS)."""
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


class Backends:
    """Prometheus, and victoria-metrics + vmagent + vmalert, over the same targets."""

    def __init__(self, tmp: Path, targets: list[str]):
        for b in ("prometheus", "victoria-metrics", "vmagent", "vmalert"):
            require_binary(b)
        self.procs: list[subprocess.Popen] = []
        self.sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
        threading.Thread(target=self.sink.serve_forever, daemon=True).start()
        scrape = {"global": {"scrape_interval": "1s"},
                  "scrape_configs": [{"job_name": "rl-exporter-fleet",
                                      "static_configs": [{"targets": targets}]}]}
        (tmp / "scrape.yml").write_text(yaml.safe_dump(scrape))
        prom = {"global": {"evaluation_interval": "1s"}, "rule_files": [str(RULES)]}
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(prom))
        pp, vp, ap, rp = (free_port() for _ in range(4))
        self.prom, self.vm = f"http://127.0.0.1:{pp}", f"http://127.0.0.1:{vp}"
        self.vmalert = f"http://127.0.0.1:{rp}"
        self._start(tmp, "prometheus", ["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
                                        f"--storage.tsdb.path={tmp / 'prom'}", "--log.level=warn",
                                        "--web.enable-remote-write-receiver",
                                        f"--web.listen-address=127.0.0.1:{pp}"], self.prom + "/-/ready")
        self._start(tmp, "vm", ["victoria-metrics", f"-storageDataPath={tmp / 'vm'}",
                                f"-httpListenAddr=127.0.0.1:{vp}", "-search.latencyOffset=0s",
                                "-search.disableCache", "-loggerLevel=WARN"], self.vm + "/health")
        self._start(tmp, "vmagent", ["vmagent", f"-promscrape.config={tmp / 'scrape.yml'}",
                                     f"-remoteWrite.url={self.vm}/api/v1/write",
                                     f"-remoteWrite.url={self.prom}/api/v1/write",
                                     f"-remoteWrite.tmpDataPath={tmp / 'vmagent'}",
                                     "-remoteWrite.flushInterval=200ms", "-loggerLevel=WARN",
                                     f"-httpListenAddr=127.0.0.1:{ap}"], f"http://127.0.0.1:{ap}/health")
        self._start(tmp, "vmalert", ["vmalert", f"-rule={RULES}", f"-datasource.url={self.vm}",
                                     f"-remoteWrite.url={self.vm}", "-evaluationInterval=1s",
                                     f"-notifier.url=http://127.0.0.1:{self.sink.server_port}",
                                     "-remoteWrite.flushInterval=200ms", "-loggerLevel=WARN",
                                     f"-httpListenAddr=127.0.0.1:{rp}"], f"http://127.0.0.1:{rp}/health")

    def _start(self, tmp, name, argv, ready):
        log = tmp / f"{name}.log"
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log.open("w"))
        self.procs.append(p)
        wait_http(ready, p, log)

    def query(self, base: str, expr: str, at: float) -> dict:
        return get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"}))

    def close(self):
        for p in reversed(self.procs):
            stop(p)
        self.sink.shutdown()


def answer(body: dict) -> dict:
    """{sorted labels (without __name__): value} of an instant vector or scalar."""
    assert body.get("status") == "success", body
    data = body["data"]
    if data["resultType"] == "scalar":
        return {(): float(data["result"][1])}
    return {tuple(sorted((k, v) for k, v in s["metric"].items() if k != "__name__")): float(s["value"][1])
            for s in data["result"]}


def same(a: float, b: float, tol: float, rel: float = 1e-6) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= max(tol, rel * max(abs(a), abs(b)))


@pytest.fixture(scope="module")
def fleet_backends(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fleet-vm")
    fleet = Fleet(runs=10, ranks=2, gpus=1, gpu_interval=1.0, restart_every=6, seed=1).start()
    backends = None
    try:
        backends = Backends(tmp, [t.address for t in fleet.targets])
        # Steps every 0.5 s for 12 s: every run has a history, the restarting one restarted.
        for _ in range(24):
            fleet.tick()
            time.sleep(0.5)
        while any(t.exporter is None for t in fleet.targets):  # freeze with every rank up
            fleet.tick()
        killed = next(r for r in fleet.runs if r.kind == "healthy")
        for t in killed.targets:   # a crashed job: every rank gone
            fleet._down(t)
        # scrapes see the frozen values and the crash; both rule engines evaluate, and series
        # vmalert created are searchable in VictoriaMetrics (a new series takes seconds)
        time.sleep(8)
        yield fleet, backends, killed.name
    finally:
        if backends is not None:
            backends.close()
        fleet.close()


def test_fleet_states_from_both_backends(fleet_backends):
    fleet, b, killed = fleet_backends
    expected = {r.name: {"healthy": "running", "failing": "running"}.get(r.kind, r.kind) for r in fleet.runs}
    expected[killed] = "failed"  # failing runs alert after `for:` windows longer than this test
    at = time.time() - 1
    for base in (b.prom, b.vm):
        got = {dict(k)["run"]: FLEET_STATES[int(v)]
               for k, v in answer(b.query(base, "run:rl_run_state:code", at)).items()}
        assert got == expected, (base, got)


def _queries():
    out = []
    for d in DASHBOARDS:
        picked = [(p, q) for p, q in d.queries]
        if d.uid != "rl-fleet":
            picked = picked[: SAMPLE.get(d.uid, 0)]
        out += [(d.uid, p.title, q.expr) for p, q in picked]
    return out


def test_dashboard_queries_answer_the_same_from_victoriametrics(fleet_backends, capsys):
    _, b, _ = fleet_backends
    at = time.time() - 1
    compared = nonempty = 0
    diffs = []
    for uid, title, expr in _queries():
        e = substitute(expr)
        p, v = answer(b.query(b.prom, e, at)), answer(b.query(b.vm, e, at))
        compared += 1
        nonempty += bool(p)
        moves = any(t in e for t in TIME_QUERIES)
        tol, rel = (5.0, 0.1) if moves else (0.1, 0.5) if any(t in e for t in EVALUATOR_STATE) \
            else (1e-3, 0.05) if any(t in e for t in EVALUATOR_WINDOW) else (1e-6, 1e-6)
        if set(p) != set(v):
            diffs.append(f"{uid} / {title}: series differ\n  only prometheus: {sorted(set(p) - set(v))[:3]}"
                         f"\n  only victoriametrics: {sorted(set(v) - set(p))[:3]}\n  {e}")
        else:
            bad = [(k, p[k], v[k]) for k in p if not same(p[k], v[k], tol, rel)]
            if bad:
                diffs.append(f"{uid} / {title}: values differ {bad[:3]}\n  {e}")
    with capsys.disabled():
        print(f"\nvictoriametrics vs prometheus: {compared} queries compared, {nonempty} with data, "
              f"{len(diffs)} different")
    assert nonempty >= 20, nonempty
    assert not diffs, "\n".join(diffs)
