"""Alertmanager routing for a fleet, on a real Alertmanager (Debian prometheus-alertmanager):
a storm of 512 targets' alerts (64 runs x 8 ranks: every rank's exporter down and one GPU
throttling on every rank; a quarter of the runs also stalled, another quarter with two
non-finite alerts) posted to its API. The
webhook stand-ins for PagerDuty and tickets must get one page per run, never one per rank,
and no rank-level alert of a run whose run-level alert fires."""
from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
import urllib.request
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from exporter.alerts.alertmanager import RANK_LEVEL, config, loopback
from tests.conftest import free_port, require_binary, stop

pytestmark = pytest.mark.integration

RUNS, RANKS = 64, 8
STALLED = {f"run-{i:02d}" for i in range(0, RUNS, 4)}   # 16 runs with a run-level critical
NAN = {f"run-{i:02d}" for i in range(1, RUNS, 4)}       # 16 runs with two run-level criticals


class Sink:
    def __init__(self):
        self.posts: list[tuple[str, dict]] = []
        sink = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                sink.posts.append((self.path, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()


def storm() -> list[dict]:
    now = datetime.now(timezone.utc)
    window = {"startsAt": now.isoformat(), "endsAt": (now + timedelta(minutes=10)).isoformat()}
    out = []
    for i in range(RUNS):
        run = f"run-{i:02d}"
        for rank in range(RANKS):
            inst = f"10.0.{i}.{rank}:9464"
            out.append({"labels": {"alertname": "RLExporterDown", "severity": "critical", "run": run,
                                   "instance": inst, "job": "rl-exporter"},
                        "annotations": {"summary": "target down"}, **window})
            out.append({"labels": {"alertname": "RLGPUThrottling", "severity": "warning", "run": run,
                                   "instance": inst, "gpu": "3", "reason": "hardware_thermal_slowdown"},
                        "annotations": {"summary": "throttled"}, **window})
        if run in STALLED:
            out.append({"labels": {"alertname": "RLRunStalled", "severity": "critical", "run": run},
                        "annotations": {"summary": "stalled"}, **window})
        if run in NAN:
            for name in ("RLNonFiniteLoss", "RLOptimizerNonFiniteSkips"):
                out.append({"labels": {"alertname": name, "severity": "critical", "run": run},
                            "annotations": {"summary": "non-finite"}, **window})
    return out


def amtool(*args) -> subprocess.CompletedProcess:
    return subprocess.run([require_binary("amtool"), *args], capture_output=True, text=True, timeout=30)


def test_rank_level_alerts_are_the_per_instance_ones():
    assert {"RLExporterDown", "RLGPUThrottling", "RLGPUMemoryNearFull"} <= set(RANK_LEVEL)
    assert "RLRunStalled" not in RANK_LEVEL and "RLNonFiniteLoss" not in RANK_LEVEL


def test_amtool_routes_a_rank_alert_to_one_page_per_run(tmp_path):
    cfg = tmp_path / "am.yml"
    cfg.write_text(yaml.safe_dump(config()))
    p = amtool("check-config", str(cfg))
    assert p.returncode == 0, p.stdout + p.stderr
    p = amtool("config", "routes", "test", f"--config.file={cfg}", "--verify.receivers=pagerduty",
               "alertname=RLExporterDown", "severity=critical", "run=r", "instance=10.0.0.1:9464")
    assert p.returncode == 0, p.stdout + p.stderr
    route = next(r for r in config()["route"]["routes"] if r["receiver"] == "pagerduty")
    assert route["group_by"] == ["run"]


def test_storm_of_512_targets_pages_once_per_run(tmp_path):
    binary = require_binary("prometheus-alertmanager")
    sink = Sink()
    port = free_port()
    cfg = tmp_path / "am.yml"
    cfg.write_text(yaml.safe_dump(loopback(sink.url)))
    proc = subprocess.Popen([binary, f"--config.file={cfg}", f"--storage.path={tmp_path / 'am'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
                             "--log.level=warn"], stdout=subprocess.DEVNULL,
                            stderr=(tmp_path / "am.log").open("w"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/-/ready", timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, (tmp_path / "am.log").read_text()
                time.sleep(0.2)
        alerts = storm()
        assert len({a["labels"]["instance"] for a in alerts if "instance" in a["labels"]}) == RUNS * RANKS
        req = urllib.request.Request(base + "/api/v2/alerts", data=json.dumps(alerts).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        assert urllib.request.urlopen(req, timeout=30).status == 200
        # group_wait is 1 s in the loopback routing; wait for every run's page, then a little
        # more so a second page per run (or a per-rank one) would show
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if len({b["groupLabels"].get("run") for p, b in sink.posts if p == "/pagerduty"}) == RUNS:
                break
            time.sleep(0.5)
        time.sleep(1.5)  # under group_interval (2 s): nothing more is due

        pages = [b for p, b in sink.posts if p == "/pagerduty"]
        per_run = defaultdict(list)
        for b in pages:
            assert b["groupLabels"] == {"run": b["commonLabels"]["run"]}, b["groupLabels"]
            per_run[b["commonLabels"]["run"]].append(b)
        assert len(per_run) == RUNS, sorted(per_run)
        assert all(len(v) == 1 for v in per_run.values()), {r: len(v) for r, v in per_run.items() if len(v) > 1}
        for run, (page,) in per_run.items():
            names = sorted(a["labels"]["alertname"] for a in page["alerts"] if a["status"] == "firing")
            if run in STALLED:   # the run-level page mutes its ranks' down alerts
                assert names == ["RLRunStalled"], (run, names)
            elif run in NAN:     # two run-level alerts, still one page
                assert names == ["RLNonFiniteLoss", "RLOptimizerNonFiniteSkips"], (run, names)
            else:                # one page carrying every rank
                assert names == ["RLExporterDown"] * RANKS, (run, names)
                assert len({a["labels"]["instance"] for a in page["alerts"]}) == RANKS
        # every GPU warning is muted by a critical of its own run: no ticket at all
        assert not [b for p, b in sink.posts if p == "/tickets"]
        assert {p for p, _ in sink.posts} == {"/pagerduty"}

        # amtool reads the same from the running Alertmanager
        p = amtool("alert", "query", f"--alertmanager.url={base}", "--inhibited", "-o", "json")
        assert p.returncode == 0, p.stderr
        inhibited = defaultdict(int)
        for a in json.loads(p.stdout):
            if a["status"]["state"] == "suppressed" and a["status"]["inhibitedBy"]:
                inhibited[a["labels"]["alertname"]] += 1
        assert inhibited == {"RLExporterDown": (len(STALLED) + len(NAN)) * RANKS,
                             "RLGPUThrottling": RUNS * RANKS}, inhibited
        print(f"\nalertmanager storm: {len(alerts)} alerts from {RUNS * RANKS} targets -> "
              f"{len(pages)} pages ({RUNS} runs), 0 tickets; inhibited {dict(inhibited)}")
    finally:
        stop(proc)
        sink.close()
