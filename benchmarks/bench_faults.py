"""The fault suite's timing figures: log() p99 under each fault against the fault-free
exporter in the same process (interleaved rounds), and close() within its timeout.

    python benchmarks/bench_faults.py                 # tests/faults/test_faults.py, a few minutes
    python benchmarks/bench_faults.py -k scrapers     # one fault

The tests in tests/faults assert only what is deterministic (nothing raised, every loss
counted, the ledger balanced); this runs the same tests with RLX_FAULT_TIMING=1, which
also asserts each ratio within tests/faults/harness.py's LIMIT (re-measured up to 3 times
on a noisy host) and each bounded close(), and prints the table of ratios.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "faults.json"
        env = dict(os.environ, RLX_FAULT_TIMING="1", RLX_FAULT_REPORT=str(report),
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              str(ROOT / "tests" / "faults" / "test_faults.py"), *sys.argv[1:]],
                             cwd=ROOT, env=env)
        rows = json.loads(report.read_text()) if report.exists() else []
    print(f"\n{'fault':38} {'p99 ratio':>9} {'base us':>8} {'fault us':>9}  attempts")
    for r in rows:
        print(f"{r['fault'][:38]:38} {r['ratio']:9.2f} {r['base_p99_us']:8.1f} "
              f"{r['fault_p99_us']:9.1f}  {r['attempts']}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
