"""End to end: how a run ends, read by a real Prometheus with the shipped rules (time-compressed
120x: 1 h of alerting time is 30 s here), from real processes: hooks that finish, crash, are
killed, pause, or come back as new scrape targets, and `rl-exporter serve` on whole public logs
that end with the framework's final line, with an out-of-memory traceback, or nowhere.

A critical page must be certain: a finished run pages nothing on static or file-based
discovery, a crash pages at once naming its exception, a declared pause is no stall, and a
crash loop that returns as new targets is still a crash loop. Each silent case has a control
beside it that pages (a killed trainer, a log cut short, a pause nobody declared), so a rule
that pages nothing at all fails this test too.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from exporter.alerts.render import render
from tests.conftest import free_port, stop
from tests.integration.prom import Prometheus

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed")]

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "data" / "runs"
TIME_SCALE = 1 / 120
STEP = 0.25        # seconds a simulated step (a 30 s step, scaled)
STEPS = 20
PAUSE = 25.0       # past RLRunStalled's 30 min floor (15 s here) and its for: (2.5 s)
OBSERVE = 45.0     # seconds from the last process's start
AHEAD = 5          # crash-loop pods listed before they run
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

# One trainer: `mode run port first_step`; real Exporter, the demo's veRL frames.
TRAINER = r"""
import os, sys, time
from exporter import Exporter
from exporter.demo import SimulatedRun
mode, run, port, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if len(sys.argv) > 5:  # a pod started ahead, scheduled once the last one died
    while not os.path.exists(sys.argv[5]):
        time.sleep(0.02)
STEP, STEPS, PAUSE = TIMES
sim = SimulatedRun("healthy", seed=1)
rlx = Exporter(run=run, framework="verl", port=port, gpu="off", final_scrape_grace=5)
def steps(a, b):
    for s in range(a, b):
        f = sim.frame(s) or {}
        f["timing_s/step"] = STEP
        rlx.log(f, step=s)
        time.sleep(STEP)
last = 15 if mode == "loop" else first + STEPS  # a crash loop never gets past step 14
steps(first, last)
if mode == "finish":
    rlx.close()
    sys.exit(0)
if mode == "crash":
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
if mode == "loop":  # the node dies under it, once its last step was scraped: no exception, no close
    time.sleep(0.6)
    os.kill(os.getpid(), 9)
if mode == "pause":
    with rlx.timer("heat_guard"):  # the run declares its pause
        time.sleep(PAUSE)
elif mode == "sleep":  # the same wait, undeclared
    time.sleep(PAUSE)
steps(last, last + 10**6)
""".replace("TIMES", repr((STEP, STEPS, PAUSE)))


def trainer(mode: str, run: str, port: int, err: Path, first: int = 1,
            go: Path | None = None) -> subprocess.Popen:
    # stderr to a file: a pipe nobody reads would block a chatty process
    return subprocess.Popen([sys.executable, "-c", TRAINER, mode, run, str(port), str(first),
                             *([str(go)] if go else [])],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=err.open("a"))


def serve(log: Path, run: str, port: int, err: Path) -> subprocess.Popen:
    # --crash-quiet: a log ending in a traceback reads as crashed once quiet this long (60 s
    # by default, against a stall window of 30 min: 15 s at this time scale)
    return subprocess.Popen([sys.executable, "-m", "exporter.cli", "--log-level", "WARNING", "serve",
                             "--source", f"auto:{log}", "--run", run, "--port", str(port),
                             "--gpu", "off", "--crash-quiet", "2"],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=err.open("a"))


def write_sd(path: Path, targets: list[str], run: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([{"targets": targets, "labels": {"job_run": run}}]))
    os.replace(tmp, path)  # file_sd readers never see half a file


def firing(prom: Prometheus, instances: dict[str, str]) -> list[tuple[str, str, dict]]:
    out = []
    for a in prom.api("alerts")["alerts"]:
        if a["state"] == "firing":
            lab = a["labels"]
            run = lab.get("run") or instances.get(lab.get("instance", ""), "?")
            out.append((run, lab["alertname"], a))
    return out


def test_how_a_run_ends_is_what_pages(tmp_path):
    verl_log = RUNS / "verl" / "eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-resp256.log"
    oom_log = RUNS / "slime" / "radixark_miles_cp2_ep4_qwen35_gdn.log"
    lines = verl_log.read_text().splitlines(keepends=True)
    assert any("Final validation metrics" in line for line in lines[-40:])
    cut = tmp_path / "cut.log"  # the same run, its log ending mid-training (a hang, a lost node)
    cut.write_text("".join(lines[: len(lines) * 3 // 5]))

    static = {"finished-static": "hook", "killed": "hook", "crashed": "hook", "paused": "hook",
              "unpaused": "hook", "sidecar-finished": "serve", "sidecar-cut": "serve",
              "sidecar-oom": "serve"}
    ports = {run: free_port() for run in static}
    ports["finished-filesd"] = free_port()
    instances = {f"127.0.0.1:{p}": run for run, p in ports.items()}
    sd_finished = tmp_path / "finished.json"
    sd_loop = tmp_path / "loop.json"
    write_sd(sd_finished, [f"127.0.0.1:{ports['finished-filesd']}"], "finished-filesd")
    # the crash loop's pods, each listed AHEAD pods before it runs, as Kubernetes lists a pod
    # while it is pending (Prometheus applies discovery changes every 5 s: a pod listed only
    # once it ran would never be scraped in its 1.5 s of life)
    loop_ports = [free_port() for _ in range(16)]
    instances.update({f"127.0.0.1:{p}": "crashloop" for p in loop_ports})
    write_sd(sd_loop, [f"127.0.0.1:{p}" for p in loop_ports[:AHEAD + 1]], "crashloop")

    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(render(time_scale=TIME_SCALE), sort_keys=False))
    # job names the shipped rules' exporter_job_selector matches (job=~".*rl-exporter.*")
    scrape = [
        {"job_name": "rl-exporter-static",
         "static_configs": [{"targets": [f"127.0.0.1:{ports[r]}" for r in static]}]},
        {"job_name": "rl-exporter-file-sd", "file_sd_configs": [{"files": [str(sd_finished), str(sd_loop)]}]},
    ]
    prom = Prometheus(tmp_path, [], [str(rules)], interval="500ms", scrape_timeout="400ms",
                      extra={"scrape_configs": scrape}, args=["--log.level=warn"])
    procs: list[subprocess.Popen] = [prom.proc]
    by_name: dict[str, subprocess.Popen] = {}
    seen: dict[tuple[str, str], dict] = {}
    err = {run: tmp_path / f"{run}.err" for run in [*static, "finished-filesd", "crashloop"]}
    try:
        for run, kind in static.items():
            if kind == "hook":
                mode = {"finished-static": "finish", "killed": "finish", "crashed": "crash",
                        "paused": "pause", "unpaused": "sleep"}[run]
                by_name[run] = trainer(mode, run, ports[run], err[run])
            else:
                log = {"sidecar-finished": verl_log, "sidecar-cut": cut, "sidecar-oom": oom_log}[run]
                by_name[run] = serve(log, run, ports[run], err[run])
        by_name["finished-filesd"] = trainer("finish", "finished-filesd", ports["finished-filesd"],
                                             err["finished-filesd"])
        # the crash loop: a first process gets to step 14, then each new one (a new pod: a new
        # port, the old one gone from discovery) resumes at the checkpoint of step 12 and dies
        # after step 14 again
        loop = trainer("loop", "crashloop", loop_ports[0], err["crashloop"])
        go = [tmp_path / f"go-{i}" for i in range(len(loop_ports))]
        ahead = trainer("loop", "crashloop", loop_ports[1], err["crashloop"], first=12, go=go[1])
        procs += [*by_name.values(), loop, ahead]
        t0 = time.monotonic()
        loop_i, killed, next_look = 0, False, t0
        while time.monotonic() - t0 < OBSERVE:
            if not killed and prom.api("query", query='rl_training_step{run="killed"} >= 5')["result"]:
                by_name["killed"].send_signal(signal.SIGKILL)  # mid-run, scraped: no close, no exception
                killed = True
            if loop.poll() is not None and ahead is not None:
                loop_i += 1
                go[loop_i].touch()
                loop, ahead = ahead, None
                write_sd(sd_loop, [f"127.0.0.1:{p}" for p in loop_ports[loop_i:loop_i + AHEAD + 1]],
                         "crashloop")
                if loop_i + 1 < len(loop_ports):
                    ahead = trainer("loop", "crashloop", loop_ports[loop_i + 1], err["crashloop"],
                                    first=12, go=go[loop_i + 1])
                    procs.append(ahead)
            if time.monotonic() >= next_look:
                for run, name, a in firing(prom, instances):
                    seen.setdefault((run, name), a)
                next_look = time.monotonic() + 0.5
            time.sleep(0.05)
        goodput = {r["metric"]["bucket"]: float(r["value"][1]) for r in prom.api(
            "query", query='rl_goodput_seconds_total{run="paused"}')["result"]}
        by_name["crashed"].wait(15)  # its crash hook holds /metrics for one more scrape, no longer
    finally:
        for p in procs:
            stop(p)

    by_run: dict[str, set[str]] = {}
    for run, name in seen:
        by_run.setdefault(run, set()).add(name)
    summary = json.dumps({r: sorted(n) for r, n in sorted(by_run.items())}, indent=1)
    critical = {(r, n) for (r, n), a in seen.items() if a["labels"].get("severity") == "critical"}

    # finished runs page nothing, on static and file-based discovery alike; killed does
    for run in ("finished-static", "finished-filesd", "sidecar-finished"):
        assert not {n for r, n in critical if r == run}, f"{run} paged: {summary}"
    assert "RLExporterDown" in by_run.get("killed", set()), summary
    # the same public log cut short mid-run is a stall (its finished copy above is not)
    assert "RLRunStalled" in by_run.get("sidecar-cut", set()), summary
    # a crash pages at once, naming the exception; the hook's crash hook chains Python's own
    assert "RuntimeError: CUDA error: an illegal memory access" in err["crashed"].read_text()
    assert killed and loop_i >= 4, (killed, loop_i)
    crash = seen.get(("crashed", "RLRunCrashed"))
    assert crash and "RuntimeError: CUDA error: an illegal memory access" in \
        crash["annotations"]["description"], summary
    oom = seen.get(("sidecar-oom", "RLRunCrashed"))
    assert oom and "OutOfMemoryError" in oom["annotations"]["description"], summary
    # a declared pause longer than the stall window is no stall, and its time is its own bucket
    assert not {n for r, n in critical if r == "paused"}, summary
    assert "RLPhaseHung" not in by_run.get("paused", set()), summary
    assert goodput.get("paused", 0.0) >= PAUSE - 5, goodput
    assert "RLRunStalled" in by_run.get("unpaused", set()), summary
    # a crash loop that comes back as new targets (no series of its own ever resets)
    assert "RLRestartWithoutProgress" in by_run.get("crashloop", set()), summary
