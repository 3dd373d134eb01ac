"""reduce_across_ranks with 150 keys on 4 gloo processes (CPU).

    python3 benchmarks/bench_reduce.py [--world 4] [--keys 150] [--iters 200]

Compares, in the same run and process group:
  ours            reduce_across_ranks: 1 all_reduce(SUM) + 1 all_reduce(MAX) (max keys exist)
  per-key         the obvious alternative: one all_reduce per key (and per weight)
  gather-objects  all_gather_object of the whole frame, reduced on every rank in Python
Prints a table: collectives per call, microseconds per call, ratio vs ours.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def frame_for(rank: int, n_keys: int) -> dict:
    """veRL-shaped frame: token-weighted means, sums, maxima, mins and plain means."""
    f = {"perf/total_num_tokens": 1000 * (rank + 1)}
    kinds = ["actor/pg_loss", "actor/entropy", "critic/score", "actor/pg_clipfrac",
             "response_length/max", "response_length/min", "timing_s/gen"]
    i = 0
    while len(f) < n_keys:
        base = kinds[i % len(kinds)]
        key = base if i < len(kinds) else f"{base}_{i}"  # unknown copies: plain means
        if base.startswith("timing_s"):
            key = f"timing_s/phase{i}"
        if base.endswith("/max") or base.endswith("/min"):
            key = f"response_length_{i}/{base.rsplit('/', 1)[1]}" if i >= len(kinds) else base
        f[key] = float(rank + i)
        i += 1
    return f


def worker(rank, world, port, n_keys, iters, q):
    import torch
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from exporter.distributed import reduce_across_ranks
    from exporter.reduce import reduce_frames
    frame = frame_for(rank, n_keys)
    out = {}

    # ours
    r = reduce_across_ranks(frame, framework="verl")  # first call agrees the layout
    first = r.collectives
    calls = []
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        r = reduce_across_ranks(frame, framework="verl")
        calls.append(r.collectives)
    out["ours"] = ((time.perf_counter() - t0) / iters, sum(calls) / iters, first, len(r))

    # per-key all_reduce (the obvious loop): SUM per key, MAX for /max keys
    dist.barrier()
    t0 = time.perf_counter()
    n = 0
    for _ in range(iters // 4):
        n = 0
        for k in sorted(frame):
            t = torch.tensor([frame[k]], dtype=torch.float64)
            op = dist.ReduceOp.MAX if k.endswith("/max") else dist.ReduceOp.SUM
            dist.all_reduce(t, op=op)
            n += 1
    out["per-key"] = ((time.perf_counter() - t0) / (iters // 4), n, None, len(frame))

    # all_gather_object + Python reduce on every rank
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters // 4):
        got = [None] * world
        dist.all_gather_object(got, frame)
        reduce_frames(got, "verl")
    out["gather-objects"] = ((time.perf_counter() - t0) / (iters // 4), 1, None, len(frame))
    dist.destroy_process_group()
    if rank == 0:
        q.put(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--keys", type=int, default=150)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args(argv)
    import torch
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    mp.spawn(worker, args=(a.world, port, a.keys, a.iters, q), nprocs=a.world, join=True)
    res = q.get()
    ours = res["ours"][0]
    print(f"reduce_across_ranks: {a.keys} keys, {a.world} gloo processes (CPU), "
          f"torch {torch.__version__}, {os.cpu_count()} cores, {a.iters} iterations")
    print(f"first call (layout agreement): {res['ours'][2]} collectives")
    print("| method | collectives/call | us/call | vs ours |")
    print("|---|---|---|---|")
    for name in ("ours", "per-key", "gather-objects"):
        t, coll, _, _ = res[name]
        print(f"| {name} | {coll:g} | {t * 1e6:,.0f} | {t / ours:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
