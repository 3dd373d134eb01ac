"""Beyond one Prometheus: vmagent scrapes a simulated fleet and remote-writes to
VictoriaMetrics, where vmalert evaluates our rule file unchanged; the same vmagent also
remote-writes to a real Prometheus (remote-write receiver) that evaluates the same rules.
Both hold the very same samples (one remote-write connection, out-of-order samples
accepted, each compared instant settled in both before it is read), so a different answer
is MetricsQL reading a query differently, not scrape or delivery timing. The fleet dashboard's queries (and a sample of the others)
must answer the same from both, and the fleet recording rules must put every run in the
state the simulator gave it.

The fleet is frozen (no more steps) before the comparison. Each engine evaluates its
recording rules at its own instants, so a recorded series is not the same samples in both
(a 10-minute average recorded a second apart differs by a few per cent): the dashboard
queries are compared with every recorded series they read replaced by its rule's
expression, so both engines answer from the same scraped samples at the same instant,
and only what MetricsQL reads differently may differ. A query that needs an evaluator's
own state (ALERTS) is not compared by value: the run-state test compares what both
evaluators conclude.
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
# MetricsQL reads increase() differently: Prometheus extrapolates it to the window's edges
# and starts a counter at its first sample, MetricsQL does not extrapolate and counts a
# counter born in the window from 0 (a restarted rank's counter: its first value apart).
# Such queries are compared by the series they answer for, not by value.
READ_DIFFERENTLY = ("increase(",)
# Both store float64; what differs is the order of float operations on time() arithmetic
# (an age of 10 s read 5e-7 s apart): compared to 1e-6 relative.
REL = 1e-6


def settled(b, at: float, timeout: float = 60.0) -> float:
    """Wait until both databases hold every scrape up to `at`: each target's latest sample
    in each is newer (vmagent writes each target's scrapes in order). Then the same query
    at `at` reads the very same samples in both, whenever it is asked."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        newest = [answer(b.query(base, 'min(timestamp(up{job="rl-exporter-fleet"}))',
                                 time.time())) for base in (b.prom, b.vm)]
        if all(r and r[()] > at + 1 for r in newest):
            return at
        time.sleep(0.5)
    raise TimeoutError(f"the databases did not receive the scrapes up to {at}")


def _recordings() -> dict:
    doc = yaml.safe_load(RULES.read_text())
    return {r["record"]: r["expr"] for g in doc["groups"] for r in g["rules"] if "record" in r}


RECORDINGS = _recordings()
_ANY_RUN = re.compile(r'^\{\s*run=~"\.\*"\s*\}$')


def inline(expr: str, depth: int = 0):
    """`expr` with every recorded series it reads replaced by its rule's expression (where
    the selector adds no matcher but run=~".*"), so it reads scraped samples only; None
    where it cannot (another matcher on a recorded series, or ALERTS: evaluator state)."""
    if depth > 10:
        return None
    names = sorted((n for n in RECORDINGS if n in expr), key=len, reverse=True)
    for name in names:
        pat = re.compile(r"(?<![\w:])" + re.escape(name) + r"(?![\w:])(\{[^}]*\})?")
        for m in list(pat.finditer(expr)):
            if m.group(1) and not _ANY_RUN.match(m.group(1)):
                return None
        inner = inline(RECORDINGS[name], depth + 1)
        if inner is None:
            return None
        expr = pat.sub(lambda m: f"({inner})", expr)
    return None if "ALERTS" in expr else expr

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
        # vmagent spreads its remote-write requests over several connections, so a series'
        # samples can reach Prometheus out of order, and Prometheus drops those by default
        # (VictoriaMetrics keeps them): one connection, and out-of-order samples accepted, so
        # both databases hold the same samples
        prom = {"global": {"evaluation_interval": "1s"}, "rule_files": [str(RULES)],
                "storage": {"tsdb": {"out_of_order_time_window": "1h"}}}
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
                                     "-remoteWrite.flushInterval=200ms", "-remoteWrite.queues=1",
                                     "-loggerLevel=WARN",
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
    at = settled(b, time.time() - 2)
    compared = nonempty = 0
    diffs = []
    skipped = []
    for uid, title, expr in _queries():
        e = inline(substitute(expr))
        if e is None:
            skipped.append(f"{uid} / {title}")
            continue
        p, v = answer(b.query(b.prom, e, at)), answer(b.query(b.vm, e, at))
        compared += 1
        nonempty += bool(p)
        if set(p) != set(v):
            diffs.append(f"{uid} / {title}: series differ\n  only prometheus: {sorted(set(p) - set(v))[:3]}"
                         f"\n  only victoriametrics: {sorted(set(v) - set(p))[:3]}\n  {e}")
        elif not any(t in e for t in READ_DIFFERENTLY):
            bad = [(k, p[k], v[k]) for k in p if not same(p[k], v[k], 1e-12, REL)]
            if bad:
                diffs.append(f"{uid} / {title}: values differ {bad[:3]}\n  {e}")
    with capsys.disabled():
        print(f"\nvictoriametrics vs prometheus: {compared} queries compared, {nonempty} with data, "
              f"{len(diffs)} different; {len(skipped)} read evaluator state, not compared")
    assert nonempty >= 20, nonempty
    assert not diffs, "\n".join(diffs)
