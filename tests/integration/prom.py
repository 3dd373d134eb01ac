"""Start a real Prometheus server (Debian's `prometheus`) on a free loopback port: the one
launcher the integration tests share (free ports come from tests.conftest.free_port)."""
from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

from tests.conftest import free_port, require_binary, stop


class Prometheus:
    def __init__(self, tmp: Path, targets: list[str], rule_files: list[str] = (),
                 interval: str = "1s", alertmanager: str | None = None, extra: dict | None = None,
                 args: list[str] = (), scrape_timeout: str | None = None, log: str = "prometheus.log"):
        self.binary = require_binary("prometheus")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval,
                       **({"scrape_timeout": scrape_timeout} if scrape_timeout else {})},
            "rule_files": list(rule_files),
            "scrape_configs": [{"job_name": "rl-exporter",
                                "static_configs": [{"targets": list(targets)}]}],
        }
        if alertmanager:
            cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
        cfg.update(extra or {})
        self.config = tmp / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(cfg))
        self.log = (tmp / log).open("w")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.config}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", *args], stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready()

    def wait_ready(self, timeout: float = 30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.proc.returncode}")
            try:
                urllib.request.urlopen(self.url + "/-/ready", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError("prometheus not ready")

    def api(self, path: str, **params) -> dict:
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        body = json.loads(urllib.request.urlopen(url, timeout=10).read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        return self.api("query", query=expr)["result"]

    def wait_for(self, expr: str, timeout: float = 30) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = self.query(expr)
            if result:
                return result
            time.sleep(0.5)
        raise TimeoutError(f"no result for {expr}")

    def stop(self):
        stop(self.proc)
        self.log.close()
