"""The image's entrypoint (exporter/container.py): a verb runs that verb, flags alone run serve,
and the health check asks the port the container's own command serves, on a real demo."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exporter.container import command, health_url
from tests.conftest import free_port, stop

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def entry(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "exporter.container", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def test_a_verb_runs_that_verb_and_flags_alone_run_serve():
    assert command(["demo", "--port", "0"]) == ["demo", "--port", "0"]
    assert command(["doctor", "train.log"]) == ["doctor", "train.log"]
    assert command(["--listen=0.0.0.0", "--source=verl:/var/log/rl/train.log"]) == [
        "serve", "--listen=0.0.0.0", "--source=verl:/var/log/rl/train.log"]
    assert command(["--version"]) == ["--version"]


def test_entrypoint_runs_demo_and_serve(tmp_path):
    r = entry("demo", "--steps", "2", "--interval", "0", "--exit-after", "--port", "0")
    assert r.returncode == 0 and r.stdout.startswith("rl-exporter demo (healthy): scrape "), r.stderr
    r = entry("--source", f"auto:{tmp_path}/none.log", "--port", "0", "--exit-when-idle")
    assert r.returncode == 1 and "no such file" in r.stderr       # serve ran, with those flags
    r = entry("--port", "99999")
    assert r.returncode == 2 and "usage: rl-exporter serve" in r.stderr


def test_the_images_listen_default_reaches_serve_and_demo(monkeypatch):
    from exporter.cli import build_parser
    monkeypatch.setenv("RL_EXPORTER_LISTEN", "0.0.0.0")   # the Dockerfile's ENV
    verbs = build_parser().verbs
    assert verbs["demo"].parse_args([]).listen == "0.0.0.0"
    assert verbs["serve"].parse_args([]).listen == "0.0.0.0"
    monkeypatch.delenv("RL_EXPORTER_LISTEN")
    assert build_parser().verbs["demo"].parse_args([]).listen == "127.0.0.1"


def test_health_url_follows_the_commands_own_port_and_address():
    assert health_url(["serve", "--listen", "0.0.0.0", "--port", "9500"]) == "http://127.0.0.1:9500/healthz"
    assert health_url(["--listen=::", "--port=9600", "--source=x:y"]) == "http://[::1]:9600/healthz"
    assert health_url(["demo"]) == "http://127.0.0.1:9464/healthz"
    assert health_url(["doctor", "train.log"]) is None           # serves nothing: healthy
    assert health_url(["demo", "--runs", "8"]) is None
    assert health_url(["serve", "--port", "0"]) is None


def test_healthcheck_on_a_running_demo():
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "exporter.container", "demo", "--port", str(port),
                          "--interval", "0.1"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        assert "scrape http" in p.stdout.readline()
        r = entry("--healthcheck", str(p.pid))
        assert r.returncode == 0, r.stderr
    finally:
        stop(p)
    time.sleep(0.2)
    gone = subprocess.Popen([sys.executable, "-m", "exporter.container", "demo", "--port", str(port),
                             "--steps", "1", "--interval", "0", "--exit-after"], cwd=ROOT, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gone.wait(60)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                                "exporter.container", "serve", "--port", str(port)])
    try:  # a process whose command serves that port, with nothing listening there
        r = entry("--healthcheck", str(sleeper.pid))
        assert r.returncode == 1 and f"127.0.0.1:{port}/healthz" in r.stderr
    finally:
        stop(sleeper)


@pytest.mark.parametrize("image,says", [("sidecar", "use the image's default target"),
                                        ("", "sudo apt-get install prometheus")])
def test_doctor_without_promtool_names_where_to_get_it(tmp_path, image, says):
    log = tmp_path / "train.log"
    log.write_text("step:1 - actor/pg_loss:0.1\nstep:2 - actor/pg_loss:0.2\n")
    env = dict(ENV, PATH=str(tmp_path), RL_EXPORTER_IMAGE=image)
    env.pop("RL_EXPORTER_PROMTOOL", None)
    r = subprocess.run([sys.executable, "-m", "exporter.container", "doctor", str(log)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and says in r.stderr, r.stderr
