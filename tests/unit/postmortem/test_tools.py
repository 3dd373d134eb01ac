"""The engine's environment (exporter/postmortem/tools.py): promtool and Prometheus run as batch
jobs with a lazier Go collector, unless the user set their own."""
import os
import shutil

import pytest

from exporter.postmortem import tools


def test_go_env_sets_a_lazier_collector_and_keeps_the_users(monkeypatch):
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    env = tools.go_env()
    assert env["GOGC"] == "400" and env["GOMEMLIMIT"] == "2GiB"
    assert env["PATH"] == os.environ["PATH"]          # the rest of the environment is passed on
    monkeypatch.setenv("GOGC", "150")
    monkeypatch.setenv("GOMEMLIMIT", "512MiB")
    env = tools.go_env()
    assert env["GOGC"] == "150" and env["GOMEMLIMIT"] == "512MiB"
    assert "GOGC" not in os.environ or os.environ["GOGC"] == "150"   # ours is a copy


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc/<pid>/environ")
def test_the_scratch_prometheus_runs_with_it(tmp_path, monkeypatch):
    if shutil.which("prometheus") is None:
        pytest.skip("no prometheus on PATH (scripts/test installs it)")
    monkeypatch.delenv("GOGC", raising=False)
    prom = tools.Prometheus(str(tmp_path / "data"), str(tmp_path)).start()
    try:
        environ = open(f"/proc/{prom.proc.pid}/environ", "rb").read().split(b"\0")
    finally:
        prom.stop()
    assert b"GOGC=400" in environ and b"GOMEMLIMIT=2GiB" in environ
