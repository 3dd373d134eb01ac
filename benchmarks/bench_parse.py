"""Sidecar parsing benchmarks: `python benchmarks/bench_parse.py [--quick] [--backlog-mb N]`.

1. veRL console lines with 150 keys: our parser vs the obvious alternatives measured in the
   same run (a naive regex findall and a naive str.split, each converting values the same
   way), lines/s and key/values/s on one core.
2. veRL JSONL lines with 150 keys: our parser vs bare json.loads.
3. Catch-up: `rl-exporter serve --exit-when-idle` on a backlog file (default 200 MB of
   150-key veRL console lines), through the exporter; wall time, MB/s, peak RSS of the
   serve process; extrapolated linearly to 1 GB.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exporter.logs import make_parser  # noqa: E402
from exporter.logs.base import NOT_A_NUMBER, number  # noqa: E402


def keys150():
    fams = ["actor", "critic", "timing_s", "perf", "response_length", "prompt_length", "val-core"]
    out = []
    for i in range(150):
        f = fams[i % len(fams)]
        out.append(f"{f}/metric_{i}" + ("/mean" if i % 3 == 0 else "") +
                   ("@4" if f == "val-core" else ""))
    return out


def console_line(step, keys, rng):
    parts = [f"step:{step}"]
    for i, k in enumerate(keys):
        v = rng.random() * 10 ** rng.randint(-6, 4)
        if i % 3 == 0:
            parts.append(f"{k}:np.float64({v!r})")   # NumPy 2 repr (actor/critic reductions)
        elif i % 7 == 0:
            parts.append(f"{k}:{int(v)}")
        else:
            parts.append(f"{k}:{v!r}")
    return "(TaskRunner pid=1, ip=10.0.0.1) " + " - ".join(parts)


def jsonl_line(step, keys, rng):
    return json.dumps({"step": step, "data": {k: rng.random() for k in keys}},
                      separators=(",", ":"))


_NAIVE_RE = re.compile(r" - ([^:\s]+):(\S+)")


def _conv(v):
    try:
        return float(v)
    except ValueError:
        x = number(v)
        return None if x is NOT_A_NUMBER else x


def naive_regex(line):
    i = line.find("step:")
    step = int(line[i + 5:line.find(" ", i)])
    return step, {k: _conv(v) for k, v in _NAIVE_RE.findall(line)}


def naive_split(line):
    i = line.find("step:")
    parts = line[i:].split(" - ")
    step = int(parts[0][5:])
    d = {}
    for p in parts[1:]:
        k, v = p.split(":", 1)
        d[k] = _conv(v)
    return step, d


def bench(fn, lines, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(lines)
        best = min(best, time.perf_counter() - t0)
    return len(lines) / best


def run_ours(fmt):
    def go(lines):
        p = make_parser(fmt)
        feed = p.feed
        n = 0
        for line in lines:
            n += len(feed(line))
        n += len(p.flush())
        assert n == len(lines), (n, len(lines))
    return go


def run_fn(fn):
    def go(lines):
        for line in lines:
            fn(line)
    return go


def catch_up(mb: int, keys, rng):
    tmp = tempfile.mkdtemp(prefix="rlx-bench-")
    path = os.path.join(tmp, "backlog.log")
    lines = [console_line(s, keys, rng) for s in range(1, 201)]
    noise = "(TaskRunner pid=1) Training Progress:  10%|█         | 1/10 [00:10<01:30]"
    size, step = 0, 0
    with open(path, "wb") as f:
        while size < mb * 1024 * 1024:
            step += 1
            line = lines[step % 200].replace("step:%d " % (step % 200 + 1), f"step:{step} ", 1)
            data = (line + "\n" + noise + "\n").encode()
            f.write(data)
            size += len(data)
    t0 = time.perf_counter()
    err = open(os.path.join(tmp, "serve.err"), "w+")
    proc = subprocess.Popen([sys.executable, "-m", "exporter.cli", "--log-level", "INFO", "serve",
                             "--source", f"verl_console:{path}", "--port", "0", "--run", "bench",
                             "--state-file", os.path.join(tmp, "state.json"), "--exit-when-idle",
                             "--idle-flush", "0.01"],
                            env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.DEVNULL,
                            stderr=err)
    # Peak RSS from the child's own VmHWM (ru_maxrss of a forked child can carry the
    # parent's pre-exec high-water mark on Linux, so it is not used).
    hwm = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                for ln in fh:
                    if ln.startswith("VmHWM:"):
                        hwm = max(hwm, int(ln.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    st = json.load(open(os.path.join(tmp, "state.json")))
    off = next(iter(next(iter(st["sources"].values()))["files"].values()))["file"]["offset"]
    assert off == size, (off, size)
    err.seek(0)
    progress = [ln.split("INFO ", 1)[-1].strip() for ln in err if "catching up" in ln]
    err.close()
    for p in os.listdir(tmp):
        os.unlink(os.path.join(tmp, p))
    os.rmdir(tmp)
    return size, step, wall, hwm / 1024, progress


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer lines, 50 MB backlog")
    ap.add_argument("--backlog-mb", type=int, default=None)
    a = ap.parse_args()
    rng = random.Random(0)
    keys = keys150()
    n = 3000 if a.quick else 20000
    cl = [console_line(s, keys, rng) for s in range(1, n + 1)]
    jl = [jsonl_line(s, keys, rng) for s in range(1, n + 1)]
    # same answers first
    p = make_parser("verl_console")
    ours = (p.feed(cl[0]) + p.feed(cl[1]))[0]
    assert (ours.step, ours.data) == naive_regex(cl[0]) == naive_split(cl[0])

    rows = []
    r_ours = bench(run_ours("verl_console"), cl)
    r_re = bench(run_fn(naive_regex), cl)
    r_split = bench(run_fn(naive_split), cl)
    pre = [[v.replace("np.float64(", "").rstrip(")") for v in re.findall(r":(\S+)(?: - |$)", l)]
           for l in cl]
    r_floor = bench(run_fn(lambda vals: list(map(float, vals))), pre)
    rows += [("veRL console, 150 keys", "rl-exporter verl_console", r_ours, 1.0),
             ("", "floor: map(float) on values", r_floor, r_ours / r_floor),
             ("", "naive regex findall", r_re, r_ours / r_re),
             ("", "naive str.split", r_split, r_ours / r_split)]
    j_ours = bench(run_ours("verl_jsonl"), jl)
    j_raw = bench(run_fn(json.loads), jl)
    rows += [("veRL JSONL, 150 keys", "rl-exporter verl_jsonl", j_ours, 1.0),
             ("", "json.loads alone", j_raw, j_ours / j_raw)]
    print(f"{'input':24} {'parser':28} {'lines/s':>10} {'kv/s':>12} {'ours / this':>12}")
    for inp, name, r, ratio in rows:
        print(f"{inp:24} {name:28} {r:10,.0f} {r * 150:12,.0f} {ratio:12.2f}")
    target = "meets" if r_ours >= 10_000 else "MISSES"
    print(f"\nveRL console target >= 10,000 lines/s (1.5M kv/s) on one core: {target} "
          f"({r_ours:,.0f} lines/s)")

    mb = a.backlog_mb or (50 if a.quick else 200)
    size, frames, wall, rss, progress = catch_up(mb, keys, rng)
    print(f"\ncatch-up: {size / 2**20:.0f} MB backlog ({frames:,} frames of 150 keys + as many "
          f"noise lines) through `serve` and the exporter: {wall:.1f} s "
          f"({size / 2**20 / wall:.1f} MB/s, {frames / wall:,.0f} frames/s), peak RSS {rss:.0f} MB")
    print(f"progress lines logged by serve: {len(progress)}"
          + (f" (last: {progress[-1]!r})" if progress else ""))
    print(f"extrapolated to 1 GB: {1024 / (size / 2**20 / wall):.0f} s "
          "(linear: reading is streamed, memory does not grow with the backlog)")


if __name__ == "__main__":
    main()
