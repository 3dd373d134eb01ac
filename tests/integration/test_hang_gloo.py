"""Hang forensics on real torch.distributed (gloo, CPU): rank 0 enters an all_reduce inside
timer("update_actor") that rank 1 never joins. The exporter's own thread sees the phase open
past its hang threshold, captures every thread's stack once, writes it beside the spool, and
GET /debug/stacks shows the blocked call while the rank is still alive."""
import json
import os
import time
import urllib.request

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from tests.conftest import free_port  # noqa: E402

pytestmark = pytest.mark.integration

NO_HISTORY_S = 2.0  # the phase's hang threshold here (no closed occurrence yet)


def _rank(rank, world, port, outdir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=__import__("datetime").timedelta(seconds=120))
    if rank == 1:  # alive, never joins the collective
        time.sleep(90)
        return
    from exporter import Exporter
    from exporter.core.thresholds import HangThresholds
    ex = Exporter(run="gloo-hang", port=0, gpu=False, spool=os.path.join(outdir, "run.spool"))
    ex.hang_watch.thresholds = HangThresholds(phase_no_history_s=NO_HISTORY_S)
    ex.log({"timing_s/gen": 0.1}, step=1)
    with open(os.path.join(outdir, "port.tmp"), "w") as f:
        json.dump({"url": ex.url, "opened": time.time()}, f)
    os.replace(os.path.join(outdir, "port.tmp"), os.path.join(outdir, "port.json"))
    with ex.timer("update_actor"):
        dist.all_reduce(torch.ones(4))  # rank 1 never calls it: blocks here


def test_gloo_collective_one_rank_never_joins_is_captured(tmp_path):
    ctx = mp.get_context("spawn")
    port = free_port()
    procs = [ctx.Process(target=_rank, args=(r, 2, port, str(tmp_path)), daemon=True)
             for r in range(2)]
    for p in procs:
        p.start()
    try:
        dump_path = tmp_path / "run.spool.stacks"
        deadline = time.time() + 60
        while time.time() < deadline and not dump_path.exists():
            time.sleep(0.1)
        seen = time.time()
        assert dump_path.exists(), "no hang dump within 60 s"
        info = json.loads((tmp_path / "port.json").read_text())
        time.sleep(0.2)  # the file is appended in one write; let it land
        dump = dump_path.read_text()
        # the dump names the phase and the blocked collective, in the training thread
        assert "phase 'update_actor' open" in dump
        main = dump.split('Thread "MainThread"', 1)[1].split("Thread ", 1)[0]
        assert "all_reduce" in main and "_rank" in main
        assert dump.count("# rl-exporter hang dump") == 1  # once per hang
        detect_s = seen - info["opened"]
        assert NO_HISTORY_S < detect_s, detect_s  # never before its threshold
        print(f"hang captured {detect_s - NO_HISTORY_S:.1f} s after its threshold")
        # the rank is alive and still answers: on demand, and the kept capture
        with urllib.request.urlopen(info["url"].replace("/metrics", "/debug/stacks"), timeout=10) as r:
            live = r.read().decode()
        assert live.count("all_reduce") >= 2 and "# last hang capture" in live
        with urllib.request.urlopen(info["url"].replace("/metrics", "/status"), timeout=10) as r:
            st = json.load(r)
        assert st["state"] == "hung" and st["open_phases"][0]["phase"] == "update_actor"
        assert st["last_hang"]["reason"] == "phase_hung"
        print(f"time to detect the gloo hang: {detect_s:.2f} s (threshold {NO_HISTORY_S} s)")
    finally:
        for p in procs:
            p.kill()
            p.join(10)
