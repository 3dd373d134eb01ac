"""The fault suite's training loop and its yardstick.

A loop calls timer(), observe() and log() the way a trainer does (a 150-key veRL
frame per step, some host work between steps). Each fault test runs it on a
fault-free exporter and on a faulted one, interleaved in rounds in the same process,
and records log()'s p99 ratio (the caller's cost) in the table printed at the end.

The tests assert what is deterministic: nothing raised into the loop, every loss counted
under its reason, the ledger balanced. The timing figures (the p99 ratio within LIMIT,
close() within its timeout) are a benchmark's: `python benchmarks/bench_faults.py` runs
this suite with RLX_FAULT_TIMING=1, which asserts them too. On a shared 2-core host one
unlucky round can read high, so there a comparison above the limit is measured again (at
most ATTEMPTS times, all attempts reported); a real regression fails every attempt.
"""
from __future__ import annotations

import json
import os
import time

from exporter.testing import verl_frame

LIMIT = 2.0       # faulted p99 / fault-free p99
TIMED = os.environ.get("RLX_FAULT_TIMING", "") == "1"  # assert the timing figures too
ATTEMPTS = 3 if TIMED else 1
HANG_S = 60.0     # without TIMED: how long a bounded operation may take before it is a hang
RESULTS: list[dict] = []  # printed as a table at the end of the session (conftest.py)


FRAME = verl_frame(0)
REWARDS = [i / 16 for i in range(16)]


def loop(ex, steps: int, *, frame_fn=None, after_log=None, host_work_s: float = 0.0003,
         first_step: int = 0) -> list[int]:
    """Run `steps` training steps against `ex`; return each log() call's duration (ns).
    Any exception from the exporter propagates: the test fails."""
    out = []
    pc = time.perf_counter_ns
    for step in range(first_step, first_step + steps):
        with ex.timer("gen"):
            pass
        ex.observe("reward", REWARDS)
        f = frame_fn(step) if frame_fn is not None else FRAME
        t0 = pc()
        ex.log(f, step=step)
        out.append(pc() - t0)
        if after_log is not None:
            after_log(f, step)
        if host_work_s:
            time.sleep(host_work_s)
    return out


def p99(xs: list[int]) -> float:
    s = sorted(xs)
    return float(s[min(len(s) - 1, int(0.99 * len(s)))])


def compare(name: str, base_ex, fault_ex, *, steps: int = 800, rounds: int = 2,
            fault_frame_fn=None, base_frame_fn=None, after_log=None, counted=None) -> dict:
    """Interleaved rounds of the loop on both exporters; asserts the p99 ratio (with
    re-measurement, see the module docstring) and records the result."""
    attempts = []
    step = 0
    for _ in range(ATTEMPTS):
        base, fault = [], []
        for _ in range(rounds):
            base += loop(base_ex, steps, frame_fn=base_frame_fn, first_step=step)
            fault += loop(fault_ex, steps, frame_fn=fault_frame_fn, after_log=after_log,
                          first_step=step)
            step += steps
        ratio = p99(fault) / p99(base)
        attempts.append((ratio, p99(base) / 1000, p99(fault) / 1000))
        if ratio <= LIMIT:
            break
    ratio, b, f = attempts[-1]
    res = {"fault": name, "ratio": ratio, "base_p99_us": b, "fault_p99_us": f,
           "attempts": [round(a[0], 2) for a in attempts], "counted": counted}
    RESULTS.append(res)
    check_ratio(ratio, f"{name}: log() p99 {f:.1f} us vs {b:.1f} us fault-free "
                       f"(ratios {res['attempts']})")
    return res


def check_ratio(ratio: float, what: str = "") -> None:
    """The p99 ratio within LIMIT: asserted in the benchmark run (TIMED), recorded always."""
    if TIMED:
        assert ratio <= LIMIT, what or ratio


def check_bound(seconds: float, limit: float, what: str) -> None:
    """A bounded operation (close() within its timeout): within `limit` in the benchmark
    run (TIMED); otherwise only not a hang."""
    assert seconds < (limit if TIMED else HANG_S), f"{what}: {seconds:.2f} s"


def record(name: str, ratio: float, base_us: float, fault_us: float, counted: str,
           attempts=None) -> None:
    RESULTS.append({"fault": name, "ratio": ratio, "base_p99_us": base_us,
                    "fault_p99_us": fault_us, "attempts": attempts or [round(ratio, 2)],
                    "counted": counted})


def set_counted(name: str, counted: str) -> None:
    for r in RESULTS:
        if r["fault"] == name:
            r["counted"] = counted


def write_report() -> None:
    path = os.environ.get("RLX_FAULT_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(RESULTS, f, indent=1)
