"""Every query of every dashboard panel, evaluated by a real Prometheus that scrapes
several `rl-exporter demo` runs (healthy and failure scenarios) at once.

Each query must parse; each must return data unless its panel (or the query) is declared
feature-gated (GPU, critic, preference, MoE, async, ...: the demo cannot feed those).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from exporter.dashboards import DASHBOARDS
from exporter.dashboards.names import BASELINE_RECORDS, recording_rules
from tests.integration.prom import Prometheus

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = ("healthy", "nan-loss", "no-signal", "stall")
INTERVAL = 0.25      # seconds per simulated step
ONSET = 12           # failures start ~3 s in
SETTLE_S = 25        # data to accumulate before querying (rate/deriv windows need points)
VARS = {"job": ".*", "namespace": ".*", "run": ".*"}
BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m"}


def substitute(expr: str) -> str:
    def repl(m):
        name = m.group(1) or m.group(2)
        if name in BUILTINS:
            return BUILTINS[name]
        if name in VARS:
            return VARS[name]
        raise AssertionError(f"unknown template variable ${name} in {expr!r}")
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", repl, expr)


def get(url: str, timeout: float = 10) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # 400 carries Prometheus' parse error as JSON
        return json.load(e)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    if not shutil.which("prometheus"):
        pytest.skip("prometheus is not installed (scripts/test installs it)")
    tmp = tmp_path_factory.mktemp("prom")
    procs: list[subprocess.Popen] = []
    try:
        targets = []
        for sc in SCENARIOS:
            p = subprocess.Popen(
                [sys.executable, "-m", "exporter.cli", "demo", "--scenario", sc, "--interval",
                 str(INTERVAL), "--onset", str(ONSET), "--val-every", "5", "--port", "0"],
                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            procs.append(p)
            line = p.stdout.readline()
            m = re.search(r"scrape http://([\d.]+:\d+)/metrics", line)
            assert m, f"demo {sc} did not start: {line!r}"
            targets.append(m.group(1))
        rules_dir = Path(os.environ.get("RLX_ALERT_RULES_DIR", REPO / "exporter" / "rules"))
        rule_files = sorted(str(p) for p in rules_dir.glob("*.y*ml")) if rules_dir.is_dir() else []
        prom = Prometheus(tmp, targets, rule_files, interval="1s", args=["--log.level=warn"])
        procs.append(prom.proc)
        base = prom.url
        deadline = time.time() + 30
        while True:
            try:
                runs = get(f"{base}/api/v1/query?query=count(rl_training_step)")
                if runs["data"]["result"] and runs["data"]["result"][0]["value"][1] == str(len(SCENARIOS)):
                    break
            except OSError:
                pass
            assert time.time() < deadline, (tmp / "prometheus.log").read_text()[-2000:]
            time.sleep(0.5)
        time.sleep(SETTLE_S)
        yield base, rule_files
    finally:
        for p in reversed(procs):
            stop(p)


def test_every_panel_query_parses_and_returns_data(prometheus, capsys):
    base, rule_files = prometheus
    present = set(get(f"{base}/api/v1/label/__name__/values")["data"])
    # Canaries: the harness must see a parse error and an empty result as such.
    bad = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": "rate(rl_reward[1m]"}))
    assert bad["status"] == "error"
    empty = get(f"{base}/api/v1/query?" + urllib.parse.urlencode(
        {"query": substitute('rl_reward{run=~"$run", stat="no-such-stat"}')}))
    assert empty["status"] == "success" and empty["data"]["result"] == []
    checked = with_data = gated = 0
    failures, gated_with_data = [], 0
    for d in DASHBOARDS:
        for panel, q in d.queries:
            expr = substitute(q.expr)
            r = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
            checked += 1
            where = f"{d.uid} / {panel.title!r}: {q.expr}"
            if r.get("status") != "success":
                failures.append(f"{where}\n    does not parse/evaluate: {r.get('error')}")
                continue
            has_data = bool(r["data"]["result"])
            with_data += has_data
            if panel.gate_of(q):
                gated += 1
                gated_with_data += has_data
                continue
            if has_data:
                continue
            missing = [m for m in q.metrics if m not in present]
            failures.append(f"{where}\n    returned no data (absent metrics: {missing or 'none'})")
    summary = (f"dashboard query check: {checked} queries checked, {with_data} returned data, "
               f"{gated} feature-gated ({gated_with_data} of them returned data anyway), "
               f"{len(failures)} failed; "
               f"alert rule files loaded: {len(rule_files)}")
    with capsys.disabled():
        print("\n" + summary)
    assert not failures, summary + "\n" + "\n".join(failures)


def test_template_variables_resolve(prometheus):
    """The job and run variables list the demo's job and runs (namespace is empty outside
    Kubernetes, where Prometheus adds no namespace label)."""
    base, _ = prometheus
    values = {}
    for d in DASHBOARDS[:1]:
        model = json.loads((REPO / "helm" / "rl-exporter" / "files" / "dashboards" / f"{d.uid}.json").read_text())
        for var in model["templating"]["list"]:
            if var["type"] != "query":
                continue
            m = re.fullmatch(r"label_values\((.+), (\w+)\)", var["query"])
            assert m, var["query"]
            match = substitute(m.group(1))
            r = get(f"{base}/api/v1/label/{m.group(2)}/values?" + urllib.parse.urlencode({"match[]": match}))
            assert r["status"] == "success", r
            values[var["name"]] = set(r["data"])
    assert values["job"] == {"rl-exporter"}
    assert values["run"] == {f"demo-{s}" for s in SCENARIOS}
    assert values["namespace"] == set()


def test_recording_rules_used_by_dashboards_exist_in_the_loaded_rules(prometheus):
    """The shipped rules record every series a panel queries, but for the baseline bands (a
    baseline's own rule file records them: tests/integration/test_baseline_rules.py)."""
    base, rule_files = prometheus
    from exporter.catalog.engines import NAMES as ENGINE_SERIES  # vllm:*, sglang:*: not rules
    used = {m for d in DASHBOARDS for p in d.panels for m in p.metrics
            if ":" in m and m not in ENGINE_SERIES} - BASELINE_RECORDS
    assert used <= recording_rules(), used - recording_rules()


def _panel_values(base, uid, title, ref=0) -> dict[str, float]:
    d = next(d for d in DASHBOARDS if d.uid == uid)
    p = next(p for p in d.panels if p.title == title)
    r = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": substitute(p.queries[ref].expr)}))
    assert r["status"] == "success", r
    out = {}
    for s in r["data"]["result"]:
        key = s["metric"].get("run", "") + "/" + s["metric"].get("phase", s["metric"].get("metric", ""))
        out[key] = float(s["value"][1])
    return out


def test_panels_tell_the_scenarios_apart(prometheus):
    """The panels do not just return data: they show the failure the scenario simulates."""
    base, _ = prometheus
    # silence in step lengths: age / max(6 min, longest step); the demo's steps are 0.25 s
    age = _panel_values(base, "rl-diagnosis", "Symptom: silence in step lengths")
    assert age["demo-stall/"] > 15 / 360 > age["demo-healthy/"], age
    share = _panel_values(base, "rl-diagnosis", "Check first: phase share of the step")
    healthy = {k: v for k, v in share.items() if k.startswith("demo-healthy/")}
    assert len(healthy) >= 5 and all(0 < v < 1 for v in healthy.values()), healthy
    assert 0.9 < sum(healthy.values()) <= 1.0001, healthy
    assert max(healthy, key=healthy.get) == "demo-healthy/gen"  # generation dominates (seed 001 s9)
    nonfinite = _panel_values(base, "rl-exporter-health", "Non-finite values by metric")
    assert nonfinite.get("demo-nan-loss/rl_policy_loss", 0) > 0, nonfinite
    assert not any(k.startswith("demo-healthy/") and v > 0 for k, v in nonfinite.items()), nonfinite
    grad = _panel_values(base, "rl-diagnosis", "Symptom: gradient norm at 0")
    assert grad["demo-no-signal/"] == 0 < grad["demo-healthy/"], grad
