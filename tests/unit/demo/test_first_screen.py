"""What a newcomer sees from `rl-exporter demo`: the next steps on the first screen, one
scenario per alert (with the engine and ranks the scenario needs served beside the trainer),
one line for a port that cannot be had, and no line about a GPU the machine does not have."""
from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter.alerts.rules import ALERTS
from exporter.alerts.scenarios import EXPECTED
from exporter.demo import SCENARIOS, SimulatedRun
from exporter.demo.beside import ENGINE_JOB, Beside
from tests.conftest import rl_exporter_cmd
from tests.helpers import scrape_text

ROOT = Path(__file__).resolve().parents[3]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def demo(*args, timeout=60):
    return subprocess.run(rl_exporter_cmd("demo", *args), cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=timeout)


def test_every_alert_has_a_demo_scenario_that_fires_it():
    """`--scenario` covers every alert on its own (no second simulator to find), but the alert
    of a target whose trainer never served: the end-to-end test lists a port nobody listens on."""
    assert set(EXPECTED) - set(SCENARIOS) == {"never-served"}
    demo_alerts = {a for sc, alerts in EXPECTED.items() if sc in SCENARIOS for a in alerts}
    assert demo_alerts | set(EXPECTED["never-served"]) == {a.name for a in ALERTS}
    # a scenario named after an alert's subject fires that alert
    assert "RLRolloutLongTail" in EXPECTED["rollout-long-tail"]
    assert EXPECTED["rollout-aborts"] == {"RLRolloutAbortsHigh": ()}
    assert EXPECTED["kv-cache-thrash"] == {"RLRolloutKVCacheThrash": ()}
    assert EXPECTED["rollout-engine-down"] == {"RLRolloutEngineDown": ()}
    assert EXPECTED["rank-straggler"] == {"RLRankStraggler": ()}


def test_first_screen_names_the_next_steps_and_no_gpu():
    p = demo("--steps", "3", "--interval", "0", "--exit-after", "--port", "0")
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out[0].startswith("rl-exporter demo (healthy): scrape http://127.0.0.1:")
    url = out[0].rsplit(" ", 1)[1]
    base = url[: -len("/metrics")]
    text = "\n".join(out[:8])
    assert f"rl-exporter status {base}" in text
    assert "--scenario entropy-collapse" in text and f"{len(SCENARIOS)} scenarios" in text
    assert "Ctrl-C to stop" in text and "compose" in text
    # the GPU series are simulated: no "GPU sampler off ... pip install [gpu]" beside them
    assert "GPU" not in p.stderr and "pip install" not in p.stderr, p.stderr


def test_the_readme_shows_the_first_screen_the_demo_prints():
    """The README's quick start quotes the demo's first screen: it must be what a newcomer
    sees (the scenario count and the next steps go stale otherwise)."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("pip install . && rl-exporter demo")
    block = readme[start:].split("```", 3)[2].strip("\n").splitlines()
    p = demo("--steps", "1", "--exit-after", "--port", "0")  # the default pace: a step every 2 s
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    port = out[0].rsplit(":", 1)[1].split("/", 1)[0]
    assert out[:len(block)] == [line.replace(":9464", f":{port}") for line in block]


def test_a_failing_scenario_says_when_and_what_fires():
    p = demo("--scenario", "kl-spike", "--steps", "6", "--onset", "4", "--interval", "0",
             "--exit-after", "--port", "0")
    assert p.returncode == 0, p.stderr
    assert "fires RLPolicyKLSpike, RLClipFractionHigh" in p.stdout
    assert "step 4: kl-spike starts now" in p.stdout


def test_a_bad_port_is_one_usage_line():
    p = demo("--port", "99999", "--steps", "1", "--exit-after")
    assert p.returncode == 2
    assert "99999 is not a port (0-65535" in p.stderr and "in use" not in p.stderr
    assert "Traceback" not in p.stderr


def test_a_port_in_use_is_one_line_at_once():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        p = demo("--port", str(port), "--steps", "1", "--exit-after", timeout=20)
    assert p.returncode == 1
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, p.stderr
    assert f"cannot listen on 127.0.0.1:{port}: [Errno 98] Address already in use" in lines[0]
    assert "(in use?)" not in lines[0] and "port=0" not in lines[0]


@pytest.mark.parametrize("scenario", ["rollout-aborts", "rollout-engine-down"])
def test_engine_scenarios_serve_a_rollout_engine_with_the_runs_label(scenario):
    b = Beside(SCENARIOS[scenario], "demo-x", onset=3).start()
    try:
        rng = random.Random(0)
        sim = SimulatedRun(scenario, onset=3)
        for step in (1, 2):
            b.step(step, sim.frame(step), rng)
        body = scrape_text(b.engine_url)
        fams = {f.name for f in text_string_to_metric_families(body)}
        assert "vllm:request_success" in fams and "vllm:e2e_request_latency_seconds" in fams
        groups = b.targets("127.0.0.1:9464", "127.0.0.1")
        engine = [g for g in groups if g["labels"]["job"] == ENGINE_JOB]
        assert engine == [{"targets": [b.engine_url.split("//")[1].split("/")[0]],
                           "labels": {"job": ENGINE_JOB, "run": "demo-x"}}]
        b.step(3, sim.frame(3), rng)
        if scenario == "rollout-engine-down":
            with pytest.raises(OSError):
                scrape_text(b.engine_url, timeout=2)
        else:
            aborted = [s.value for f in text_string_to_metric_families(scrape_text(b.engine_url))
                       for s in f.samples if s.labels.get("finished_reason") == "abort"
                       and s.name.endswith("_total")]
            assert aborted and max(aborted) > 0
    finally:
        b.close()


def test_rank_straggler_serves_three_ranks_and_slows_the_last_ones_gen():
    b = Beside(SCENARIOS["rank-straggler"], "demo-s", onset=3).start()
    try:
        rng = random.Random(0)
        sim = SimulatedRun("rank-straggler", onset=3)
        frames = {}
        for step in range(1, 6):
            frames[step] = sim.frame(step)
            b.step(step, frames[step], rng)
        gens = [r.store.get("rl_phase_duration_seconds", {"phase": "gen"}) for r in b.ranks]
        assert len(b.ranks) == 2
        base = frames[5]["timing_s/gen"]
        assert 0.9 * base < gens[0] < 1.1 * base          # rank 1: like rank 0
        assert 2.3 * base < gens[1] < 2.7 * base          # rank 2: 2.5x from the onset
        for r in b.ranks:  # each rank its own target, its rank on rl_run_info
            info = [s for f in text_string_to_metric_families(scrape_text(r.url))
                    for s in f.samples if s.name == "rl_run_info"]
            assert [s.labels["rank"] for s in info] == [str(r.rank)]
        (group,) = b.targets("127.0.0.1:9464", "127.0.0.1")
        assert len(group["targets"]) == 3 and group["labels"] == {"job": "rl-exporter"}
    finally:
        b.close()


def test_scrape_config_yaml_and_file_sd(tmp_path):
    sd = tmp_path / "t.json"
    p = demo("--scenario", "kv-cache-thrash", "--steps", "2", "--interval", "0", "--exit-after",
             "--port", "0", "--scrape-config", str(sd), "--scrape-host", "demo")
    assert p.returncode == 0, p.stderr
    groups = json.loads(sd.read_text())
    assert [g["labels"] for g in groups] == [{"job": "rl-exporter"},
                                             {"job": ENGINE_JOB, "run": "demo-kv-cache-thrash"}]
    assert all(t.startswith("demo:") for g in groups for t in g["targets"])
    assert "rollout engine (simulated vLLM): http://127.0.0.1:" in p.stdout
    yml = tmp_path / "s.yml"
    p = demo("--steps", "1", "--interval", "0", "--exit-after", "--port", "0", "--scrape-config", str(yml))
    assert p.returncode == 0, p.stderr
    (job,) = yaml.safe_load(yml.read_text())["scrape_configs"]
    assert job["static_configs"][0]["labels"] == {"job": "rl-exporter"}


def test_no_simulated_gpu_is_announced():
    """`catalog --budget` and the fleet sample a fake NVML: no 'GPU sampler on ... H100' line on
    a machine without a GPU, and no line per restarted rank."""
    p = subprocess.run(rl_exporter_cmd("catalog", "--budget"), cwd=ROOT, env=ENV, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "GPU sampler" not in p.stderr, p.stderr
    p = demo("--runs", "5", "--ranks", "2", "--gpus", "2", "--steps", "14", "--interval", "0.02",
             "--exit-after", timeout=120)
    assert p.returncode == 0, p.stderr
    assert "GPU sampler" not in p.stderr, p.stderr
