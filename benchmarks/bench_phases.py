"""Phases in progress and GPU time by phase: what they add to the training thread and to a
sampling pass.

    python benchmarks/bench_phases.py          # about 30 s on a busy 2-core host
    python benchmarks/bench_phases.py --quick

Rows, each measured in the same run, interleaved in rounds (median of rounds):
  timer enter+exit   `with ex.timer("gen"): pass` with phases in progress tracked, against the
                     same timer with tracking off, and against a bare perf_counter() pair
  sampling pass      GPUSampler.sample() over 8 fake GPUs (exporter/testing/nvml.py, no delay)
                     with per-phase attribution, against the same pass without it
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter import Exporter  # noqa: E402
from exporter.gpu import GPUSampler  # noqa: E402
from exporter.testing.nvml import FakeNVML  # noqa: E402

logging.getLogger("rl_exporter").setLevel(logging.ERROR)


class _Off:
    def open(self, phase):
        pass

    def close(self, phase):
        pass


def per_call(fn, n: int) -> float:
    t0 = time.perf_counter()
    fn(n)
    return (time.perf_counter() - t0) / n


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    rounds, n, passes = (5, 20_000, 200) if a.quick else (7, 50_000, 300)

    ex_on = Exporter(run="on", serve=False, gpu="off")
    ex_off = Exporter(run="off", serve=False, gpu="off")
    ex_off.timers.live = _Off()
    t_on, t_off = ex_on.timer("gen"), ex_off.timer("gen")

    def with_tracking(k):
        for _ in range(k):
            with t_on:
                pass

    def without_tracking(k):
        for _ in range(k):
            with t_off:
                pass

    def bare(k):
        pc = time.perf_counter
        for _ in range(k):
            t0 = pc()
            pc() - t0

    nv = FakeNVML(8)
    s_on = GPUSampler(ex_on.store, nvml=nv, rank=0, env={})
    s_on.start(thread=False)
    s_on.phases = ex_on.live_phases
    s_off = GPUSampler(ex_off.store, nvml=nv, rank=0, env={})
    s_off.start(thread=False)

    def sample_on(k):
        with t_on:
            for _ in range(k):
                s_on.sample()

    def sample_off(k):
        for _ in range(k):
            s_off.sample()

    res = {k: [] for k in ("on", "off", "bare", "s_on", "s_off")}
    for _ in range(rounds):
        res["on"].append(per_call(with_tracking, n))
        res["off"].append(per_call(without_tracking, n))
        res["bare"].append(per_call(bare, n))
        res["s_on"].append(per_call(sample_on, passes))
        res["s_off"].append(per_call(sample_off, passes))
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"{'measure':44s} {'median':>12s} {'ratio':>8s}")
    print(f"{'timer enter+exit, phases in progress tracked':44s} {med['on'] * 1e6:10.2f}us "
          f"{med['on'] / med['off']:7.2f}x  (vs tracking off)")
    print(f"{'timer enter+exit, tracking off':44s} {med['off'] * 1e6:10.2f}us {1:7.2f}x")
    print(f"{'bare perf_counter() pair':44s} {med['bare'] * 1e6:10.2f}us "
          f"{med['bare'] / med['off']:7.2f}x")
    print(f"{'sampling pass, 8 GPUs, per-phase attribution':44s} {med['s_on'] * 1e6:10.1f}us "
          f"{med['s_on'] / med['s_off']:7.2f}x  (vs without)")
    print(f"{'sampling pass, 8 GPUs, without':44s} {med['s_off'] * 1e6:10.1f}us {1:7.2f}x")
    s_on.stop()
    s_off.stop()
    ex_on.close()
    ex_off.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
