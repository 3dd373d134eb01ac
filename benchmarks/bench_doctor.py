"""Post-mortem benchmark: `python benchmarks/bench_doctor.py [--steps N] [--keys K]`.

A generated veRL console log (default 10,000 steps, 150 keys: the demo's real veRL key
shapes plus validation and timing families; `timing_s/step` ~77 s, so about 9 days of run
time) goes through `backfill --out` (the log's blocks, every recording rule, the alert
history) and `doctor`, on every core this process may use (--cores N to pin fewer). The
table splits each one's wall and CPU time (ours plus promtool's and Prometheus's) between
parsing (parser -> exporter -> rendered samples), the log's blocks (promtool), recording
rules, alert range queries and the alert history; printed as ratios against the alternative
measured in the same run: doctor against backfill on the same log, and the log's samples as
18 h block files against promtool's default 2 h (one promtool run each), on the first
--compare-steps steps. The rules whose range queries took longest are named last.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def keys_and_frames(steps: int, nkeys: int, seed: int = 0):
    from exporter.demo import SimulatedRun
    sim = SimulatedRun("healthy", seed=seed, total_steps=steps, val_every=1)
    base = [k for k, v in sim.frame(1).items() if isinstance(v, (int, float))]
    extra = []
    for ds in ("openai/gsm8k", "math500", "aime24", "gpqa", "livecodebench", "mbpp", "humaneval",
               "olympiad"):
        for var in ("acc", "reward", "pass"):
            extra.append(f"val-core/{ds}/{var}/mean@4")
            extra.append(f"val-aux/{ds}/{var}/std@4")
    for ph in ("gen", "reward", "old_log_prob", "ref", "values", "adv", "update_critic",
               "update_actor", "update_weights", "save_checkpoint", "testing", "start_profile"):
        extra += [f"timing_per_token_ms/{ph}", f"timing_s/{ph}"]
    for stat in ("mean", "max", "min"):
        extra += [f"val-core/openai/gsm8k/acc/{stat}@16", f"critic/values/{stat}", f"critic/vf_explained_var/{stat}" if stat == "mean"
                  else f"critic/returns/{stat}", f"num_turns/{stat}", f"actor/pg_clipfrac_{stat}"]
    keys = list(dict.fromkeys(base + extra))
    i = 0
    while len(keys) < nkeys:  # more validation sets, as a long eval suite logs
        keys.append(f"val-core/suite_{i}/acc/mean@1")
        i += 1
    keys = keys[:nkeys]
    return sim, keys


def write_log(path: str, steps: int, nkeys: int) -> int:
    sim, keys = keys_and_frames(steps, nkeys)
    rng = random.Random(1)
    with open(path, "w") as f:
        for s in range(1, steps + 1):
            fr = sim.frame(s)
            parts = [f"step:{s}"]
            for k in keys:
                v = fr.get(k)
                if v is None:  # keys the demo does not simulate: steady values with noise
                    v = 0.5 + 0.01 * rng.random()
                parts.append(f"{k}:np.float64({v!r})" if k.startswith("actor/") else f"{k}:{v!r}")
            f.write("(TaskRunner pid=1, ip=10.0.0.1) " + " - ".join(parts) + "\n")
    return len(keys)


def parse_only(path: str) -> float:
    from exporter.logs import Reader
    t = time.perf_counter()
    with open(path) as fh:
        for _ in Reader("verl_console", where=False).read(fh):
            pass
    return time.perf_counter() - t


def compare_block_files(path: str, steps: int, work: str) -> tuple[float, float, int, int]:
    """promtool CPU seconds for the first `steps` steps' samples as 18 h block files (what
    backfill writes) vs 2 h block files (promtool's default block), and the files of each."""
    from exporter.postmortem import backfill as bf
    from exporter.postmortem import tools
    from exporter.postmortem.openmetrics import BLOCK_MS, BlockFiles, duration_flag
    head = os.path.join(work, "head.log")
    with open(path) as src, open(head, "w") as dst:
        for i, line in enumerate(src):
            if i >= steps:
                break
            dst.write(line)
    om = os.path.join(work, "om")
    res = bf.backfill([head], "bench", os.path.join(work, "per-18h"), keep_openmetrics=om,
                      progress=False)
    files_18h = len(os.listdir(om))
    small = os.path.join(work, "om-2h")
    two = BlockFiles(small, block_ms=BLOCK_MS)
    for name in sorted(os.listdir(om)):
        with open(os.path.join(om, name)) as src:
            for line in src:
                if line != "# EOF\n":
                    series, value, ts = line.rsplit(" ", 2)
                    two.write(float(ts), [f"{series} {value}"])
    two.close()
    c = tools.cpu(own=False)
    for name in sorted(os.listdir(small)):
        tools.run([tools.find("promtool"), "tsdb", "create-blocks-from", "openmetrics", "-q",
                   duration_flag(BLOCK_MS), os.path.join(small, name),
                   os.path.join(work, "per-2h")], "promtool")
    return res.timings["blocks_cpu"], tools.cpu(own=False) - c, files_18h, len(two.paths)


def big_backfill(args, work: str) -> int:
    """Backfill alone on a large log: throughput and peak RSS (the log is streamed, blocks are
    made and their OpenMetrics input deleted as each 18 h block completes)."""
    from exporter.postmortem.backfill import backfill
    log = os.path.join(work, "big.log")
    steps = int(args.backfill_mb * 2**20 / 6_700)  # about 6.7 kB a 150-key line
    write_log(log, steps, args.keys)
    size = os.path.getsize(log)
    t = time.perf_counter()
    res = backfill([log], "big", os.path.join(work, "tsdb"), progress=False)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    tm = res.timings
    print(f"backfill: {size / 2**20:.0f} MiB, {res.frames:,} steps, {res.samples:,} samples, "
          f"{res.blocks} blocks: {wall:.1f} s wall ({size / 2**20 / wall:.1f} MiB/s); CPU "
          f"parse->samples {tm['parse_render_cpu']:.1f} s, promtool {tm['blocks_cpu']:.1f} s; "
          f"peak RSS {rss:.0f} MiB (promtool {kids:.0f} MiB)")
    return 0


PHASES = [  # (row, wall key, CPU key)
    ("parse -> exporter -> samples (ours)", "parse_render", "parse_render_cpu"),
    ("log's blocks (promtool, overlapping parsing)", "blocks", "blocks_cpu"),
    ("  waiting for the last blocks after parsing", "blocks_wait", None),
    ("Prometheus start", "prometheus_start", None),
    ("recording rules (range queries -> blocks)", "recording_rules", "recording_rules_cpu"),
    ("alert range queries -> findings", "alert_queries", "alert_queries_cpu"),
    ("alert history (ALERTS) + the rules reading it", "alert_history", None),
    ("point findings, crash, stacks", "findings", None),
]


def timed(fn):
    t, c = time.perf_counter(), tools_cpu()
    out = fn()
    return out, time.perf_counter() - t, tools_cpu() - c


def tools_cpu() -> float:
    from exporter.postmortem import tools
    return tools.cpu()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--keys", type=int, default=150)
    ap.add_argument("--compare-steps", type=int, default=1000)
    ap.add_argument("--cores", type=int, default=0, help="CPU cores to use (default: all)")
    ap.add_argument("--backfill-mb", type=float, default=0,
                    help="instead: backfill only, on a log of this many MiB (flat memory check)")
    args = ap.parse_args()
    if args.cores and hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:args.cores]
        os.sched_setaffinity(0, set(cpus))  # children (promtool, prometheus) inherit it
        os.environ["GOMAXPROCS"] = str(args.cores)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    from exporter.postmortem import tools
    from exporter.postmortem.doctor import backfill_out, doctor
    try:
        tools.find("promtool"), tools.find("prometheus")
    except tools.ToolMissing as e:
        print(e, file=sys.stderr)
        return 3
    work = tempfile.mkdtemp(prefix="rlx-bench-doctor-")
    if args.backfill_mb:
        try:
            return big_backfill(args, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    try:
        log = os.path.join(work, "verl.log")
        t = time.perf_counter()
        nkeys = write_log(log, args.steps, args.keys)
        gen = time.perf_counter() - t
        size = os.path.getsize(log)
        c = time.process_time()
        parse_s = parse_only(log)
        parse_cpu = time.process_time() - c
        # doctor, backfill, doctor: the ratio is not the machine's drift between two runs
        out, d_wall1, d_cpu1 = timed(lambda: doctor([log], run="bench", progress=False))
        (bres, bev), b_wall, b_cpu = timed(lambda: backfill_out(
            [log], "bench", os.path.join(work, "out"), progress=False))
        out, d_wall2, d_cpu2 = timed(lambda: doctor([log], run="bench", progress=False))
        d_wall, d_cpu = (d_wall1 + d_wall2) / 2, (d_cpu1 + d_cpu2) / 2
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        c18, c2, n18, n2 = compare_block_files(log, args.compare_steps, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res, ev = out.backfill, out.evaluation
    print(f"bench_doctor: {args.steps:,} steps x {nkeys} keys, veRL console, {size / 2**20:.1f} MiB "
          f"(generated in {gen:.1f} s); {cores} core(s), load average {os.getloadavg()[0]:.1f}")
    print(f"  run time {(res.end - res.start) / 3600:.0f} h from {res.clock_why}; {res.series} "
          f"series, {res.samples:,} samples (scrape every 60 s); {len(ev.checks)} alerts "
          f"({len(ev.checks) - len(ev.no_data)} with data), {len(ev.findings)} findings")
    print(f"  backfill wrote {bres.blocks} blocks: {len(bev.recorded)} recording rules "
          f"({sum(bev.recorded.values())} series), {bev.alert_series} ALERTS/ALERTS_FOR_STATE "
          f"series; doctor evaluated {len(ev.recorded)} recording rules (those the alerts read)")
    print(f"  parser alone: {parse_s:.2f} s wall, {parse_cpu:.2f} s CPU")
    bt, dt = bres.timings, out.timings
    print(f"\n{'phase':<50}{'backfill':>18}{'doctor':>18}")
    print(f"{'':<50}{'wall s':>9}{'CPU s':>9}{'wall s':>9}{'CPU s':>9}")

    def cell(t, k):
        return f"{t[k]:>9.2f}" if k and k in t else f"{'':>9}"
    for name, wk, ck in PHASES:
        print(f"{name:<50}{cell(bt, wk)}{cell(bt, ck)}{cell(dt, wk)}{cell(dt, ck)}")
    print(f"{'end to end (incl. Prometheus, promtool CPU)':<50}{b_wall:>9.2f}{b_cpu:>9.2f}"
          f"{d_wall2:>9.2f}{d_cpu2:>9.2f}")
    ratio = d_wall / b_wall
    print(f"\ndoctor / backfill on the same log: {ratio:.2f}x wall, {d_cpu / b_cpu:.2f}x CPU "
          f"(target <= 1.5x: {'PASS' if ratio <= 1.5 else 'FAIL'}; doctor ran before and "
          f"after backfill: {d_wall1:.1f} s and {d_wall2:.1f} s wall; the phase table is the "
          "second)")
    print(f"doctor end to end: {d_wall:.1f} s wall, {d_cpu:.1f} s CPU on {cores} core(s) "
          f"(target < 15 s wall: {'PASS' if d_wall < 15 else 'FAIL'}; CPU / cores = "
          f"{d_cpu / cores:.1f} s, the wall time on idle cores)")
    slow = sorted(ev.query_seconds.items(), key=lambda kv: -kv[1])
    total = sum(ev.query_seconds.values())
    print(f"\nrange query time, doctor: {total:.1f} s over {len(slow)} rules; the slowest 5 "
          "(where a cheaper rule pays back first; a live Prometheus pays the same each minute):")
    for name, sec in slow[:5]:
        print(f"  {sec:7.2f} s  {sec / max(total, 1e-9):5.1%}  {name}")
    print(f"\npeak RSS: this process {rss:.0f} MiB, largest child (promtool/prometheus) {kids:.0f} MiB")
    print(f"\nblock creation, first {args.compare_steps:,} steps: {n18} 18 h block files "
          f"{c18:.2f} s CPU vs {n2} 2 h block files {c2:.2f} s CPU ({c2 / max(c18, 1e-9):.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
