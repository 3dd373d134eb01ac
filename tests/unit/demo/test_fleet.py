"""The fleet simulator (exporter/demo/fleet.py) and the per-rank series budget."""
from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter.catalog import CATALOG
from exporter.demo.budget import BUDGET, full_rank, measure
from exporter.demo.fleet import FRAMEWORKS, Fleet, RankEndpoint, plan_kinds, translate
from exporter.demo import SimulatedRun
from tests.helpers import scrape_text

REPO = Path(__file__).resolve().parents[3]


def scrape(url: str) -> Counter:
    """Samples per family name, parsed like a scraper parses them."""
    body = scrape_text(url, timeout=10)
    return Counter({f.name: len(f.samples) for f in text_string_to_metric_families(body)})


def test_fully_featured_rank_scraped_is_within_the_budget():
    ex = full_rank(gpus=8)
    ep = RankEndpoint(ex.registry, "127.0.0.1", 0)
    ep.start()
    try:
        counts = scrape(f"http://127.0.0.1:{ep.port}/metrics")
        body = scrape_text(f"http://127.0.0.1:{ep.port}/metrics")
    finally:
        ep.stop()
        ex.close()
    total = sum(counts.values())
    gpus = {line.split('gpu="')[1].split('"')[0] for line in body.splitlines()
            if line.startswith("hw_gpu_utilization_ratio{")}
    assert gpus == {str(i) for i in range(8)}            # GPU series for 8 GPUs are in the count
    assert counts["rl_shaped_reward"] and counts["rl_moe_load_imbalance_ratio"] and counts["rl_turns"]
    assert not counts["rl_moe_expert_tokens"]             # per-expert series are opt-in
    assert 300 < total <= BUDGET, (total, counts.most_common(8))
    assert measure()["total"] == total                    # what `catalog --budget` prints


def test_per_expert_series_are_opt_in(monkeypatch):
    off = full_rank(gpus=0, moe=(2, 8))
    on = full_rank(gpus=0, moe=(2, 8), expert_series=True)
    monkeypatch.setenv("RL_EXPORTER_EXPERT_SERIES", "1")
    env = full_rank(gpus=0, moe=(2, 8), expert_series=None)
    try:
        names = lambda ex: Counter(s.name for f in ex.registry.collect() for s in f.samples)  # noqa: E731
        assert names(off)["rl_moe_expert_tokens"] == 0
        assert names(off)["rl_exporter_ignored_keys_total"] == 1 and off.stats()["ignored_keys"] >= 32
        assert names(on)["rl_moe_expert_tokens"] == 16 and names(on)["rl_moe_expert_load_ratio"] == 16
        assert names(env)["rl_moe_expert_tokens"] == 16
    finally:
        for ex in (off, on, env):
            ex.close()


def test_catalog_budget_cli():
    p = subprocess.run([sys.executable, "-m", "exporter.cli", "catalog", "--budget"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("series per rank: ") and f"budget of {BUDGET} (within; 8 GPUs" in first
    assert "per-expert MoE series" in p.stdout and "hw_gpu_clock_event_active" in p.stdout


def test_translate_gives_each_framework_its_own_keys():
    frame = SimulatedRun("healthy").frame(5)
    for fw in FRAMEWORKS:
        out = translate(frame, fw)
        assert len(out) >= 5, (fw, out)
        for key in out:
            r = CATALOG.resolve(key, fw)
            assert r.metric is not None and not r.fallback and not r.ignored, (fw, key)
    verl = {CATALOG.resolve(k, "auto").metric.name for k in translate(frame, "verl")}
    trl = translate(frame, "trl")
    assert "rl_score" in verl and "rl_shaped_reward" in verl and "rl_entropy" in verl
    # TRL names the same series differently: translated keys are TRL's, not veRL's
    assert set(trl) - set(frame), trl


def test_plan_kinds_mixes_and_is_mostly_healthy():
    import random
    kinds = Counter(plan_kinds(64, random.Random(0)))
    assert sum(kinds.values()) == 64 and kinds["healthy"] > 32
    assert all(kinds[k] >= 1 for k in ("failing", "finished", "restarting", "stalled"))
    assert set(plan_kinds(5, random.Random(0))) == {"healthy", "failing", "finished", "restarting", "stalled"}


def test_fleet_runs_finish_stall_and_restart():
    fleet = Fleet(runs=5, ranks=2, gpus=1, gpu_interval=60, restart_every=3).start()
    try:
        by = {r.kind: r for r in fleet.runs}
        assert len(fleet.targets) == 10 and len({t.port for t in fleet.targets}) == 10
        restarting = by["restarting"].targets[0]
        first = restarting.exporter
        seen_down = False
        for _ in range(7):
            fleet.tick()
            seen_down |= restarting.exporter is None
        assert seen_down and restarting.exporter is not first      # went down, came back new
        fin = by["finished"]
        assert fin.step == fin.total                               # stopped at its total
        store = fin.targets[0].exporter.store
        assert store.get("rl_config_value", {"parameter": "total_training_steps"}) == fin.total
        stalled = by["stalled"].targets[0].exporter
        stalled.flush()
        age = time.time() - stalled.store.get("rl_training_step_timestamp_seconds")
        assert age > 1000                                          # dated back: shows at once
        healthy = by["healthy"].targets[0]
        healthy.exporter.flush()
        counts = scrape(f"http://{healthy.address}/metrics")
        assert counts["rl_training_step"] == 1 and counts["hw_gpu_utilization_ratio"] == 2
        rank1 = scrape(f"http://{by['healthy'].targets[1].address}/metrics")
        assert rank1["rl_training_step"] == 0 and rank1["rl_run_info"] == 1  # rank 0 logs frames
    finally:
        fleet.close()


def test_demo_cli_prints_a_scrape_config(tmp_path):
    cfg = tmp_path / "scrape.yml"
    p = subprocess.run([sys.executable, "-m", "exporter.cli", "demo", "--runs", "3", "--ranks", "2",
                        "--gpus", "1", "--steps", "2", "--interval", "0.05", "--exit-after",
                        "--scrape-config", str(cfg)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "3 runs x 2 ranks = 6 targets" in p.stdout
    doc = yaml.safe_load(cfg.read_text())
    (job,) = doc["scrape_configs"]
    assert job["job_name"] == "rl-exporter-fleet"       # matches the alerts' exporter job selector
    assert len(job["static_configs"][0]["targets"]) == 6
    bad = subprocess.run([sys.executable, "-m", "exporter.cli", "demo", "--runs", "2", "--ranks", "0"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "at least 1" in bad.stderr
