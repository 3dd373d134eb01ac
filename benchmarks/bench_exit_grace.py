"""What the final-scrape grace costs a process's exit: `python benchmarks/bench_exit_grace.py`.

A real trainer process (the hook, a free port, three steps) is scraped by a scraper thread at a
fixed interval, as Prometheus would, from a random phase; the process is then told to end
(close(), or an uncaught exception) and the time from that moment until the process is gone
is measured. The same run measures the obvious alternative, no hold (final_scrape_grace=0),
and a process nobody scrapes (which must not wait at all). The hold ends once a scrape that
began after the final state has been served, so its cost is about half a scrape interval on
average and one interval at most; the table says whether the scraper read the final state.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CHILD = """
import sys
from exporter import Exporter
mode, grace = sys.argv[1], float(sys.argv[2])
ex = Exporter(run="bench", framework="verl", port=0, gpu=False, final_scrape_grace=grace)
for i in range(1, 4):
    ex.log({"actor/entropy": 0.5}, step=i)
ex.flush()
print(ex.url, flush=True)
sys.stdin.readline()
if mode == "raise":
    raise RuntimeError("the end")
ex.close()
"""


def one(mode: str, grace: float, interval: float | None, rng: random.Random) -> tuple[float, bool]:
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(grace)], cwd=ROOT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    url = p.stdout.readline().strip()
    stop = threading.Event()
    final = []

    def scrape():
        while not stop.is_set():
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    text = r.read().decode()
                if 'state="running"} 1.0' not in text:
                    final.append(True)
            except OSError:
                return
            stop.wait(interval)

    t = None
    if interval is not None:
        t = threading.Thread(target=scrape, daemon=True)
        t.start()
        time.sleep(interval * 1.5 + rng.random() * interval)  # two scrapes, then a random phase
    t0 = time.monotonic()
    p.stdin.write("go\n")
    p.stdin.flush()
    p.wait(timeout=120)
    took = time.monotonic() - t0
    stop.set()
    if t is not None:
        t.join(5)
    return took, bool(final)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--intervals", default="1,2,5", help="scrape intervals, seconds")
    ap.add_argument("--grace", type=float, default=15.0)
    args = ap.parse_args()
    rng = random.Random(0)
    rows = []
    cases = [("no scraper", None)] + [(f"scraped every {float(i):g} s", float(i))
                                      for i in args.intervals.split(",")]
    for mode in ("close", "raise"):
        for label, interval in cases:
            base = [one(mode, 0.0, interval, rng) for _ in range(args.trials)]
            held = [one(mode, args.grace, interval, rng) for _ in range(args.trials)]
            times = [h[0] for h in held]
            rows.append((mode, label, statistics.mean(b[0] for b in base), statistics.mean(times),
                         max(times), sum(b[1] for b in base), sum(h[1] for h in held)))
    print(f"exit time of a trainer process, mean of {args.trials} (grace {args.grace:g} s):")
    print(f"{'end':<6} {'scraper':<20} {'no hold':>9} {'held':>9} {'max held':>9} "
          f"{'extra':>8} {'ratio':>6}  final state read (no hold / held)")
    n = args.trials
    for mode, label, b, h, mx, read0, read in rows:
        print(f"{mode:<6} {label:<20} {b:8.3f}s {h:8.3f}s {mx:8.3f}s {h - b:7.3f}s "
              f"{h / b:5.2f}x  {read0}/{n} / {read}/{n}")


if __name__ == "__main__":
    main()
