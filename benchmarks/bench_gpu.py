"""NVML sampler cost and GIL behaviour, with the fake nvidia-ml-py (no GPU needed).

    python3 benchmarks/bench_gpu.py [--gpus 1,8] [--samples 2000] [--delay-ms 5]

1. Cost: wall time of GPUSampler.sample() per GPU per pass, with NVML calls that
   return at once (so this is the sampler's own Python + store writes; a real
   driver adds its call latency, see benchmarks/gpu_check_nvml.py). Also the
   duty cycle at the default 5 s interval.
2. GIL: every fake NVML call sleeps `delay` in C through ctypes. CDLL is how
   nvidia-ml-py calls libnvidia-ml (the GIL is released during the call); PyDLL
   keeps the GIL held (what a GIL-holding binding would do). A second Python
   thread counts as fast as it can while one sampling pass runs; its longest gap
   is how long the sampler kept it from running. Claim proven when the CDLL gap is
   below ONE call's duration while the PyDLL gap is at least one call. Keep the delay
   above the interpreter's switch interval (5 ms): a thread that wants the GIL back
   after a C call may wait up to that long whatever the sampler does.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from exporter.catalog import CATALOG  # noqa: E402
from exporter.gpu import GPUSampler  # noqa: E402
from exporter.core.store import Store  # noqa: E402
from exporter.testing.nvml import FakeNVML  # noqa: E402


def sampler(n_gpus: int, **fake_kw):
    nv = FakeNVML(n_gpus, **fake_kw)
    nv.gpus[0]["processes"] = [(os.getpid(), 1 << 30)]
    s = GPUSampler(Store("bench", CATALOG), nvml=nv, rank=0, env={}).start(thread=False)
    return s, nv


def cost(n_gpus: int, samples: int) -> dict:
    s, nv = sampler(n_gpus)
    for _ in range(50):
        s.sample()  # warm: series created, caches filled
    before = sum(nv.calls.values())
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        s.sample()
        times.append(time.perf_counter() - t0)
    calls = (sum(nv.calls.values()) - before) / samples / n_gpus
    series = sum(1 for m in s.store.metrics if m.group == "gpu")
    s.stop()
    med = statistics.median(times)
    return {"gpus": n_gpus, "per_gpu_us": med / n_gpus * 1e6,
            "p99_per_gpu_us": sorted(times)[int(0.99 * len(times))] / n_gpus * 1e6,
            "calls_per_gpu": calls, "series_per_gpu": series / n_gpus,
            "duty_5s": med / 5.0}


def gil_gap(hold_gil: bool, delay: float, n_gpus: int = 1) -> dict:
    s, nv = sampler(n_gpus, hold_gil=hold_gil)
    nv.call_delay_us = int(delay * 1e6)
    calls0 = sum(nv.calls.values())
    stamps = []
    done = threading.Event()

    def run():
        s.sample()
        done.set()

    t = threading.Thread(target=run)
    t0 = time.perf_counter()
    t.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
    t.join()
    wall = time.perf_counter() - t0
    calls = sum(nv.calls.values()) - calls0
    s.stop()
    gaps = [b - a for a, b in zip(stamps, stamps[1:])] or [wall]
    return {"binding": "PyDLL (GIL held)" if hold_gil else "CDLL (as pynvml)",
            "calls": calls, "sample_ms": wall * 1e3, "max_gap_ms": max(gaps) * 1e3,
            "gap_over_call": max(gaps) / delay, "counter_iters": len(stamps)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="1,8")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--delay-ms", type=float, default=20.0)
    a = ap.parse_args(argv)

    print("## NVML sampler cost (fake NVML, calls return at once)\n")
    print("| GPUs | µs per GPU per sample (median) | p99 | NVML calls per GPU | series per GPU "
          "| duty cycle at 5 s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in a.gpus.split(",")]:
        r = cost(n, a.samples)
        print(f"| {r['gpus']} | {r['per_gpu_us']:.1f} | {r['p99_per_gpu_us']:.1f} | "
              f"{r['calls_per_gpu']:.0f} | {r['series_per_gpu']:.0f} | {r['duty_5s']:.1e} |")

    delay = a.delay_ms / 1e3
    print(f"\n## GIL during NVML calls (each call sleeps {a.delay_ms:g} ms in C; interpreter switch "
          f"interval {sys.getswitchinterval() * 1e3:g} ms)\n")
    print("| binding | calls in the pass | pass ms | longest stall of another thread, ms "
          "| stall / one call | counter iterations |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = [gil_gap(True, delay), gil_gap(False, delay)]
    for r in rows:
        print(f"| {r['binding']} | {r['calls']} | {r['sample_ms']:.1f} | {r['max_gap_ms']:.2f} | "
              f"{r['gap_over_call']:.2f} | {r['counter_iters']} |")
    held, released = rows
    ok = released["gap_over_call"] < 1.0 <= held["gap_over_call"] * 1.05
    print(f"\nclaim (stall < one call with CDLL, >= one call with PyDLL): "
          f"{'PROVEN' if ok else 'NOT SHOWN'}; the counting thread ran "
          f"{released['counter_iters'] / max(1, held['counter_iters']):.0f}x more iterations "
          "while the sampler waited in C.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
