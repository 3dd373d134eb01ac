"""The local stack (deploy/compose/compose.yaml) without a container engine: Debian's
`docker-compose config` validates and resolves it, and what it mounts is what runs here.

- the file validates, its images are pinned, its ports stay on loopback;
- it mounts the shipped files themselves (the rule file, the Alertmanager example, Grafana's
  provisioning and the chart's dashboards), no copies;
- Grafana's provisioning (not in Debian: its shape is checked) resolves to the compose's
  Prometheus and provides every dashboard the chart ships;
- the compose's own Prometheus and Alertmanager configs and command lines, their container paths
  mapped to the files the compose mounts and its service names to loopback ports, run with the
  real binaries: promtool checks the config and its rules, Prometheus loads every shipped rule,
  scrapes the targets a real `rl-exporter demo` (the compose's own demo command) writes, and an
  alert it fires reaches the Alertmanager, routed by the example routing.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import free_port, require_binary, stop

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "compose.yaml"
RULES = ROOT / "exporter" / "rules" / "rl-exporter.rules.yaml"
ALERTMANAGER_YML = ROOT / "helm" / "rl-exporter" / "files" / "alertmanager" / "alertmanager.yml"
DASHBOARDS = ROOT / "helm" / "rl-exporter" / "files" / "dashboards"
PROVISIONING = ROOT / "exporter" / "dashboards" / "provisioning"


def resolved(**env) -> dict:
    """`docker-compose config`: the file validated, variables and relative paths resolved."""
    exe = require_binary("docker-compose")
    r = subprocess.run([exe, "-f", str(COMPOSE), "config"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, **env}, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return yaml.safe_load(r.stdout)


@pytest.fixture(scope="module")
def config():
    return resolved()


def mounts(service: dict) -> list[tuple[str, str]]:
    """(source, container path): a bind's absolute host path, or a named volume's name."""
    out = []
    for v in service.get("volumes", []):
        if isinstance(v, dict):
            out.append((v["source"], v["target"]))
        else:
            src, dst = v.split(":")[:2]
            out.append((src, dst))
    return out


def host_path(service: dict, container_path: str, volumes: dict[str, Path]) -> Path:
    """Where a container path of the service is on this machine, by the compose's mounts
    (the longest mount point first); named volumes map to the directories in `volumes`."""
    for src, dst in sorted(mounts(service), key=lambda m: -len(m[1])):
        if container_path == dst or container_path.startswith(dst.rstrip("/") + "/"):
            base = Path(src) if src.startswith("/") else volumes[src]
            return base / os.path.relpath(container_path, dst) if container_path != dst else base
    raise AssertionError(f"{container_path} is not mounted in this service")


def translate(text: str, service: dict, volumes: dict[str, Path], hosts: dict[str, str]) -> str:
    """A config or command line of the service as this machine runs it: every mounted container
    path to its host path, every service address to its loopback one."""
    for src, dst in sorted(mounts(service), key=lambda m: -len(m[1])):
        text = re.sub(re.escape(dst) + r"(?=[/\s'\"\],]|$)", lambda m: str(host_path(service, dst, volumes)), text)
    for name, addr in hosts.items():
        text = text.replace(name, addr)
    return text


def test_the_compose_file_validates_pins_its_images_and_stays_on_loopback(config):
    services = config["services"]
    assert set(services) == {"demo", "serve", "prometheus", "alertmanager", "grafana"}
    for name, s in services.items():
        image = s["image"]
        assert re.search(r":v?\d+\.\d+\.\d+$", image), f"{name}: pin {image} to an exact version"
        for p in s.get("ports", []):
            spec = p if isinstance(p, str) else f"{p.get('host_ip')}:{p['published']}"
            assert spec.startswith("127.0.0.1:"), f"{name} publishes {spec} beyond loopback"
    assert services["demo"]["build"]["target"] == "full"       # the Dockerfile's default target
    # the scenario is the user's: SCENARIO=kl-spike docker compose up
    cmd = resolved(SCENARIO="kl-spike")["services"]["demo"]["command"]
    assert cmd[cmd.index("--scenario") + 1] == "kl-spike"
    assert (COMPOSE.parent / ".env").read_text().strip() == "COMPOSE_PROFILES=demo"
    assert services["demo"]["profiles"] == ["demo"] and services["serve"]["profiles"] == ["serve"]


def test_it_mounts_the_shipped_files_not_copies(config):
    s = config["services"]
    prom = dict(mounts(s["prometheus"]))
    assert prom[str(RULES)] == "/etc/prometheus/rules/rl-exporter.rules.yaml"
    assert dict(mounts(s["alertmanager"]))[str(ALERTMANAGER_YML)] == "/etc/alertmanager/alertmanager.yml"
    graf = dict(mounts(s["grafana"]))
    assert str(DASHBOARDS) in graf and str(PROVISIONING / "datasource.yaml") in graf
    for svc in s.values():
        for src, _ in mounts(svc):
            if src.startswith("/") and "${" not in src and not src.endswith("/logs"):
                assert Path(src).exists(), f"mounted {src} does not exist"
    copies = [p.name for p in COMPOSE.parent.rglob("*") if p.suffix in (".json",) or "rules" in p.name
              or p.name == "alertmanager.yml"]
    assert not copies, f"deploy/compose holds copies of shipped files: {copies}"


def expand_env(value: str, env: dict) -> str:
    """Grafana's provisioning interpolation: Go's os.ExpandEnv ($VAR, ${VAR}; no defaults)."""
    return re.sub(r"\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)",
                  lambda m: env.get(m.group(1) if m.group(1) is not None else m.group(2), ""), value)


def test_grafana_provisioning_reaches_the_composes_prometheus_and_every_dashboard(config):
    g = config["services"]["grafana"]
    env = g.get("environment", {})
    to_host = {dst: Path(src) for src, dst in mounts(g)}
    ds_file = next(h for c, h in to_host.items() if c.startswith("/etc/grafana/provisioning/datasources/"))
    doc = yaml.safe_load(ds_file.read_text())
    assert doc["apiVersion"] == 1
    (ds,) = doc["datasources"]
    assert ds["type"] == "prometheus" and ds["access"] == "proxy" and ds["isDefault"] is True
    url = expand_env(ds["url"], env)
    m = re.fullmatch(r"http://([a-z-]+):(\d+)", url)
    assert m, f"the datasource url {ds['url']!r} expands to {url!r} in the compose's Grafana"
    assert m.group(1) in config["services"] and m.group(1) == "prometheus"
    assert any(f":{m.group(2)}" in str(p) for p in config["services"]["prometheus"]["ports"])
    assert f"--web.listen-address" not in " ".join(config["services"]["prometheus"]["command"])  # 9090
    prov_file = next(h for c, h in to_host.items() if c.startswith("/etc/grafana/provisioning/dashboards/"))
    prov = yaml.safe_load(prov_file.read_text())
    (provider,) = prov["providers"]
    assert provider["type"] == "file"
    path = expand_env(provider["options"]["path"], env)
    assert path in to_host, f"the provider reads {path}, which the compose does not mount"
    mounted = {p.name for p in to_host[path].glob("*.json")}
    assert mounted == {p.name for p in DASHBOARDS.glob("*.json")} and len(mounted) == 6
    for p in to_host[path].glob("*.json"):
        d = json.loads(p.read_text())
        assert d["uid"] and d["title"], p
        variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
        assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    home = env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert host_path(g, home, {}).is_file()


def get(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def wait(what, fn, timeout: float, every: float = 1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except OSError as e:
            last = e
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


@pytest.mark.slow
def test_its_prometheus_and_alertmanager_configs_run_the_shipped_rules_and_routes(tmp_path):
    prometheus, promtool = require_binary("prometheus"), require_binary("promtool")
    alertmanager, amtool = require_binary("prometheus-alertmanager"), require_binary("amtool")
    scenario = "nan-loss"
    config = resolved(SCENARIO=scenario)
    s = config["services"]
    volumes = {name: tmp_path / f"vol-{name}" for name in config.get("volumes", {})}
    for d in volumes.values():
        d.mkdir()
    am_port, prom_port, demo_port = free_port(), free_port(), free_port()
    hosts = {"alertmanager:9093": f"127.0.0.1:{am_port}"}
    procs = []
    try:
        # ---- Alertmanager: the compose's command on the file it mounts
        am = s["alertmanager"]
        am_args = [translate(a, am, volumes, hosts) for a in am["command"]]
        am_cfg = host_path(am, "/etc/alertmanager/alertmanager.yml", volumes)
        assert am_cfg == ALERTMANAGER_YML
        r = subprocess.run([amtool, "check-config", str(am_cfg)], capture_output=True, text=True)
        assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
        routed = subprocess.run([amtool, "config", "routes", "test", f"--config.file={am_cfg}",
                                 "severity=critical", "run=x"], capture_output=True, text=True)
        assert routed.stdout.strip() == "pagerduty", routed.stdout + routed.stderr
        am_args = [a for a in am_args if not a.startswith("--storage.path")] + [
            f"--storage.path={tmp_path / 'am'}", f"--web.listen-address=127.0.0.1:{am_port}",
            "--cluster.listen-address="]
        procs.append(subprocess.Popen([alertmanager, *am_args], stdout=subprocess.DEVNULL,
                                      stderr=open(tmp_path / "am.log", "w")))
        # ---- the demo: the compose's own command, its targets file in the shared volume
        demo = s["demo"]
        args = [translate(a, demo, volumes, {}) for a in demo["command"]]
        args[args.index("--scrape-host") + 1] = "127.0.0.1"       # its service name, here
        args += ["--port", str(demo_port), "--interval", "0.25", "--onset", "30", "--start-on-scrape"]
        procs.append(subprocess.Popen([sys.executable, "-m", "exporter.container", *args], cwd=ROOT,
                                      env=dict(os.environ, PYTHONPATH=str(ROOT)),
                                      stdout=subprocess.DEVNULL, stderr=open(tmp_path / "demo.log", "w")))
        targets = volumes["targets"] / "targets.json"
        wait("the demo's targets file", targets.exists, 30, 0.2)
        # ---- Prometheus: the compose's prometheus.yml and command, paths and services mapped
        prom = s["prometheus"]
        src_cfg = host_path(prom, "/etc/prometheus/prometheus.yml", volumes)
        assert src_cfg == COMPOSE.parent / "prometheus.yml"
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(translate(src_cfg.read_text(), prom, volumes, hosts))
        assert host_path(prom, "/etc/prometheus/rules/rl-exporter.rules.yaml", volumes) == RULES
        assert str(RULES) in cfg.read_text()
        r = subprocess.run([promtool, "check", "config", str(cfg)], capture_output=True, text=True)
        assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
        prom_args = [translate(a, prom, volumes, hosts) for a in prom["command"]]
        prom_args = [f"--config.file={cfg}" if a.startswith("--config.file") else a for a in prom_args
                     if not a.startswith("--storage.tsdb.path")]
        procs.append(subprocess.Popen(
            [prometheus, *prom_args, f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prom.log", "w")))
        api = f"http://127.0.0.1:{prom_port}/api/v1"
        # every shipped rule is loaded
        shipped = sum(len(g["rules"]) for g in yaml.safe_load(RULES.read_text())["groups"])
        groups = wait("rules loaded", lambda: get(f"{api}/rules")["data"]["groups"], 30)
        assert sum(len(g["rules"]) for g in groups) == shipped
        # the demo's target, found through the file it wrote, is up with its job label
        up = wait("the demo scraped", lambda: [r for r in get(f"{api}/query?query=up")["data"]["result"]
                                                  if r["value"][1] == "1"], 30)
        assert [r["metric"]["job"] for r in up] == ["rl-exporter"]
        assert up[0]["metric"]["instance"] == f"127.0.0.1:{demo_port}"
        # an alert the scenario fires reaches the Alertmanager, routed to PagerDuty (critical)
        # or tickets (warning) by the example routing
        am_api = f"http://127.0.0.1:{am_port}/api/v2"
        fired = wait("an alert of the demo in Alertmanager", lambda: [
            a for a in get(f"{am_api}/alerts") if a["labels"].get("run") == f"demo-{scenario}"], 240, 2)
        names = {a["labels"]["alertname"] for a in fired}
        assert names <= {"RLNonFiniteLoss", "RLOptimizerNonFiniteSkips", "RLNonFiniteGradSkipped"}, names
        receivers = {r["name"] for a in fired for r in a["receivers"]}
        assert receivers <= {"pagerduty", "tickets"} and receivers, receivers
        print(f"compose stack: {shipped} rules loaded; {sorted(names)} reached Alertmanager "
              f"({sorted(receivers)})")
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(tmp_path / "tsdb", ignore_errors=True)
