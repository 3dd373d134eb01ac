"""On a machine with an NVIDIA GPU: one sample of every GPU series and the sampler's cost.

    python3 benchmarks/gpu_check_nvml.py [--samples 50]

Prints (1) the devices NVML shows and which the sampler takes after
CUDA_VISIBLE_DEVICES, with the MFU peak-table entry for each model; (2) every
GPU sample (the metrics of exporter/catalog/hardware.py) from one pass, as /metrics renders it;
(3) the cost per GPU per pass (median, p99) and per query; (4) the longest
stall a busy Python thread sees while a real pass runs (GIL released during NVML
calls). Exits 2 when NVML is not available, 1 when a check fails.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from prometheus_client import generate_latest  # noqa: E402

from exporter import Exporter  # noqa: E402
from exporter.catalog.hardware import METRICS as GPU_METRICS  # noqa: E402
from exporter.mfu import UnknownGPU, lookup_peak  # noqa: E402

FAMILIES = {m.name[:-6] if m.name.endswith("_total") else m.name for m in GPU_METRICS
            if m.group == "gpu" or "gpu" in m.name}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=50)
    a = ap.parse_args(argv)

    ex = Exporter(run="gpu-check", serve=False, gpu=True, gpu_interval=3600)
    s = ex.gpu_sampler
    if s is None:
        print("NVML not available: the GPU sampler is off (see the log line above)")
        ex.close()
        return 2
    failed = []
    try:
        deadline = time.monotonic() + 10
        while s.samples < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        nv = s.nv
        print("## devices")
        print(f"driver {nv.nvmlSystemGetDriverVersion()}, NVML sees {nv.nvmlDeviceGetCount()}, "
              f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}")
        for d in s.devices:
            try:
                key, peak = lookup_peak(d.name, "bf16")
                entry = f"peak table: {key}, bf16 dense {peak / 1e12:.1f} TFLOP/s" if peak else \
                    f"peak table: {key}, no bf16 figure"
            except UnknownGPU:
                entry = "peak table: UNKNOWN (MFU would be skipped, not guessed)"
            print(f"  gpu {d.index}  {d.uuid}  {d.name!r}  {entry}; unsupported queries: "
                  f"{sorted(d.skip) or 'none'}")

        print("\n## one sample of every series (/metrics)")
        s.sample()
        text = generate_latest(ex.registry).decode()
        def family(ln):
            if ln.startswith("# "):
                return ln.split()[2] if len(ln.split()) > 2 else ""
            name = ln.split("{")[0].split(" ")[0]
            return name[:-6] if name.endswith("_total") else name
        lines = [ln for ln in text.splitlines() if family(ln) in FAMILIES]
        print("\n".join(lines))
        for name in ("hw_gpu_utilization_ratio", "hw_gpu_memory_usage_bytes", "hw_gpu_power_watts",
                     "hw_gpu_temperature_celsius", "hw_gpu_clock_hertz", "hw_gpu_status"):
            if not any(ln.startswith(name + "{") for ln in lines):
                failed.append(f"no {name} series")

        print(f"\n## cost ({a.samples} passes, {len(s.devices)} GPU(s))")
        times = []
        for _ in range(a.samples):
            t0 = time.perf_counter()
            s.sample()
            times.append(time.perf_counter() - t0)
        n = max(1, len(s.devices))
        times.sort()
        print(f"per GPU per pass: median {statistics.median(times) / n * 1e6:.0f} µs, "
              f"p99 {times[int(0.99 * (len(times) - 1))] / n * 1e6:.0f} µs, "
              f"max {times[-1] / n * 1e6:.0f} µs")
        print("| query | µs per GPU (median) |")
        print("|---|---:|")
        for query, fn in s._QUERIES:
            per = []
            for _ in range(max(5, a.samples // 5)):
                for d in s.devices:
                    if query in d.skip or d.lost:
                        continue
                    t0 = time.perf_counter()
                    try:
                        fn(s, d)
                    except Exception:
                        pass
                    per.append(time.perf_counter() - t0)
            print(f"| {query} | {statistics.median(per) * 1e6:.0f} |" if per else
                  f"| {query} | not supported |")

        print("\n## GIL: longest stall of a busy Python thread during real passes")
        stamps, done = [], threading.Event()

        def run():
            for _ in range(a.samples):
                s.sample()
            done.set()

        t = threading.Thread(target=run)
        t.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
        t.join()
        gap = max((b - a_ for a_, b in zip(stamps, stamps[1:])), default=0.0)
        print(f"longest stall {gap * 1e3:.2f} ms over {a.samples} passes "
              f"(switch interval {sys.getswitchinterval() * 1e3:g} ms); "
              f"counter iterations {len(stamps)}")
    finally:
        ex.close()
    if failed:
        print("\nFAILED: " + "; ".join(failed))
        return 1
    print("\nOK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
