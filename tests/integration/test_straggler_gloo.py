"""RLRankStraggler on real torch.distributed (gloo, CPU) ranks scraped by a real Prometheus.

Two runs of WORLD ranks each, every rank with its own Exporter (RANK set as torchrun sets it,
one endpoint per rank), a real all_reduce per step inside timer("update_actor"), and
log_across_ranks as the reduction guide has it (rank 0 logs the reduced frame; the other ranks
publish only their own phase durations). In the
straggler run rank SLOW sleeps extra inside timer("gen") from step ONSET on; the others then
wait for it in the all_reduce. Prometheus loads the rendered rules, time-compressed as in
test_alerts_e2e.py. RLRankStraggler must fire for that rank and gen only (not for the ranks
that wait in update_actor), and nothing may fire on the healthy run. The test prints the
time and the number of slowed steps it took to fire.
"""
from __future__ import annotations

import json
import os
import random
import time

import pytest
import yaml

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from exporter.alerts.render import render  # noqa: E402
from exporter.alerts.scenarios import RANK_EXPECTED  # noqa: E402
from exporter.dashboards.diagnosis import RANK_PHASE  # noqa: E402
from tests.conftest import free_port, require_binary  # noqa: E402
from tests.integration.prom import Prometheus  # noqa: E402
from tests.integration.test_dashboards_queries import substitute  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TIME_SCALE = 1 / 120      # the 5 min step window is 2.5 s here, the 5 s excess floor 42 ms
WORLD = 3                 # straggler_min_ranks
STEPS = 40
ONSET = 12                # the slow rank is slowed from this step on
SLOW = 1
GEN_S = 0.10              # every rank's gen, +-15 % jitter per step
EXTRA_S = 0.15            # the slow rank's extra time inside gen: 2.5x the others'
UPDATE_S = 0.05


def _wait_file(path: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.02)
    return False


def _write(path: str, obj) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def _rank(rank, world, port, outdir, run, slow):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from exporter import Exporter
    from exporter.distributed import log_across_ranks
    ex = Exporter(run=run, framework="verl", port=0, gpu=False)  # rank from RANK, as under torchrun
    _write(os.path.join(outdir, f"{run}-{rank}.json"), {"url": ex.url, "rank": ex.rank})
    try:
        if not _wait_file(os.path.join(outdir, "go"), 120):
            return
        dist.barrier()
        rng = random.Random(rank * 7919 + 1)
        ends = {}
        for step in range(1, STEPS + 1):
            t0 = time.monotonic()
            with ex.timer("gen"):
                extra = EXTRA_S if slow and rank == SLOW and step >= ONSET else 0.0
                time.sleep(GEN_S * rng.uniform(0.85, 1.15) + extra)
            with ex.timer("update_actor"):
                dist.all_reduce(torch.ones(1024))  # waits for the slowest rank's gen
                time.sleep(UPDATE_S)
            # as docs/reduction-timers-distributions.md: rank 0 logs the global frame, every
            # rank's own phase durations are published (timers close on the other ranks)
            log_across_ranks(ex, {"timing_s/step": time.monotonic() - t0}, step=step)
            ends[step] = time.time()
        _write(os.path.join(outdir, f"{run}-{rank}.done"), ends)
        _wait_file(os.path.join(outdir, "stop"), 120)  # keep serving while Prometheus evaluates
    finally:
        ex.close()
        dist.destroy_process_group()


def _start(ctx, run, slow, outdir):
    port = free_port()
    procs = [ctx.Process(target=_rank, args=(r, WORLD, port, outdir, run, slow), daemon=True)
             for r in range(WORLD)]
    for p in procs:
        p.start()
    return procs


def test_gloo_straggler_fires_for_the_slow_rank_and_phase_only(tmp_path):
    require_binary("prometheus")
    outdir = str(tmp_path)
    ctx = mp.get_context("spawn")
    runs = {f"gloo-{sc}": sc == "straggler" for sc in RANK_EXPECTED}
    procs = [p for run, slow in runs.items() for p in _start(ctx, run, slow, outdir)]
    prom = None
    try:
        targets = {}
        for run in runs:
            for r in range(WORLD):
                path = os.path.join(outdir, f"{run}-{r}.json")
                assert _wait_file(path, 120), f"{run} rank {r} started no exporter"
                info = json.load(open(path))
                assert info["rank"] == r  # env_rank() read RANK
                targets[info["url"].split("//", 1)[1].split("/", 1)[0]] = (run, str(r))
        rules = tmp_path / "rules.yaml"
        rules.write_text(yaml.safe_dump(render(time_scale=TIME_SCALE), sort_keys=False))
        prom = Prometheus(tmp_path, sorted(targets), [str(rules)], interval="250ms",
                          scrape_timeout="200ms", args=["--log.level=warn"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if len([u for u in prom.query("up") if u["value"][1] == "1"]) == len(targets):
                break
            time.sleep(0.25)
        else:
            raise AssertionError("Prometheus does not scrape every rank")
        open(os.path.join(outdir, "go"), "w").close()

        # ---- watch every firing alert until both runs finished and the rules had a window more
        first: dict[tuple, float] = {}
        done_at = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for a in prom.api("alerts")["alerts"]:
                if a["state"] == "firing":
                    lab = a["labels"]
                    key = (lab["alertname"], lab.get("run"), lab.get("rank"), lab.get("phase"))
                    first.setdefault(key, time.time())
            finished = all(os.path.exists(os.path.join(outdir, f"{run}-{r}.done"))
                           for run in runs for r in range(WORLD))
            if finished and done_at is None:
                done_at = time.monotonic()
            if done_at is not None and time.monotonic() - done_at > 3:
                break
            time.sleep(0.2)
        assert done_at is not None, "the ranks did not finish their steps"

        # ---- the per-rank panel's query names every rank of both runs
        got = {(s["metric"]["run"], s["metric"]["rank"]) for s in prom.query(substitute(RANK_PHASE))}
        assert got == set(targets.values()), got
    finally:
        open(os.path.join(outdir, "stop"), "w").close()
        for p in procs:
            p.join(20)
            if p.is_alive():
                p.kill()
        if prom is not None:
            prom.stop()

    fired = set(first)
    assert {(name, run) for name, run, _, _ in fired} == {
        (name, f"gloo-{sc}") for sc, alerts in RANK_EXPECTED.items() for name in alerts}, sorted(fired)
    want = {("RLRankStraggler", "gloo-straggler", str(SLOW), "gen")}
    assert fired == want, f"fired: {sorted(fired)}"  # that rank and phase only
    # time and slowed steps to detect, from the first slowed step's start (the end of step ONSET-1)
    ends = {int(k): v for k, v in json.load(open(os.path.join(outdir, f"gloo-straggler-{SLOW}.done"))).items()}
    onset = ends[ONSET - 1]
    fired_at = first[next(iter(want))]
    steps = sum(1 for s, t in ends.items() if s >= ONSET and t <= fired_at)
    detect_s = fired_at - onset
    print(f"RLRankStraggler fired {detect_s:.2f} s after the slowdown began ({detect_s / TIME_SCALE:.0f} s "
          f"unscaled), after {steps} slowed steps (window >= 5 steps; {len(ends) - ONSET + 1} slowed in all)")
    assert 5 <= steps < STEPS - ONSET + 1, steps
