"""The endpoint under slow clients: log() and scrape latency with N connections that each
drip one header line a second (and reconnect when closed), against the same without them.

    python benchmarks/bench_slow_clients.py              # about 1 minute
    python benchmarks/bench_slow_clients.py --quick
    python benchmarks/bench_slow_clients.py --conns 200 --mode body

The trainer side runs here: an Exporter serving /metrics while the main thread logs a
veRL-shaped frame every 2 ms, timing each log() call. The scraper (a GET /metrics every
0.1 s) and the attacker are separate processes, as they would be. Idle and attacked
rounds alternate, so a slow phase of this host hits both; the table gives each figure
under attack against the idle one of the same run.
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter import Exporter  # noqa: E402

logging.getLogger("rl_exporter").setLevel(logging.ERROR)

SCRAPER = textwrap.dedent("""
    import json, sys, time, urllib.request
    url, dur = sys.argv[1], float(sys.argv[2])
    lat, fail, end = [], 0, time.monotonic() + dur
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            urllib.request.urlopen(url, timeout=10).read()
            lat.append(time.monotonic() - t0)
        except Exception:
            fail += 1
        time.sleep(0.1)
    print(json.dumps({"lat": lat, "fail": fail}))
""")

ATTACKER = textwrap.dedent("""
    import socket, sys, time
    host, port, n, dur, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    HEAD = {"headers": b"GET /metrics HTTP/1.1\\r\\nHost: x\\r\\n",
            "body": b"POST /ingest HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n"
                    b"Content-Length: 1000000\\r\\n\\r\\n{"}[mode]
    DRIP = b"X-a: b\\r\\n" if mode == "headers" else b" "
    def conn():
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, port)); s.send(HEAD)
        except OSError:
            s.close(); return None
        return s
    socks = [conn() for _ in range(n)]
    end, reconnects = time.monotonic() + dur, 0
    while time.monotonic() < end:
        for i, s in enumerate(socks):
            try:
                if s is None:
                    raise OSError
                s.send(DRIP)
            except OSError:
                if s is not None:
                    s.close()
                socks[i] = conn(); reconnects += 1
        time.sleep(1.0)
    print(reconnects)
""")


def frame(rng) -> dict:
    f = {f"timing_s/phase_{i}": rng.uniform(0.1, 60) for i in range(20)}
    for fam in ("critic/score", "critic/rewards", "response_length", "prompt_length"):
        for stat in ("mean", "max", "min"):
            f[f"{fam}/{stat}"] = rng.random()
    for k in ("actor/pg_loss", "actor/entropy", "actor/grad_norm", "actor/lr", "perf/throughput"):
        f[k] = rng.random()
    return f


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def one_round(ex, seconds: float, attack: dict | None, step0: int):
    host, port = "127.0.0.1", ex.endpoint.port
    procs = []
    if attack:
        procs.append(subprocess.Popen([sys.executable, "-c", ATTACKER, host, str(port),
                                       str(attack["conns"]), str(seconds + 1.5), attack["mode"]],
                                      stdout=subprocess.PIPE, text=True))
        time.sleep(1.0)  # the attack is in place before the measurement starts
    scraper = subprocess.Popen([sys.executable, "-c", SCRAPER, ex.url, str(seconds)],
                               stdout=subprocess.PIPE, text=True)
    rng = random.Random(step0)
    frames = [frame(rng) for _ in range(64)]
    lat = []
    end = time.monotonic() + seconds
    step = step0
    pc = time.perf_counter_ns
    while time.monotonic() < end:
        f = frames[step % 64]
        t0 = pc()
        ex.log(f, step=step)
        lat.append(pc() - t0)
        step += 1
        time.sleep(0.002)
    got = json.loads(scraper.communicate(timeout=60)[0])
    for p in procs:
        p.communicate(timeout=60)
    return lat, got["lat"], got["fail"], step


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--conns", type=int, default=70, help="slow connections (default 70: more "
                    "than the endpoint's 64 slots)")
    ap.add_argument("--mode", choices=("headers", "body"), default="headers")
    ap.add_argument("--seconds", type=float, default=None, help="per round (default 10, quick 4)")
    args = ap.parse_args()
    seconds = args.seconds or (4.0 if args.quick else 10.0)
    rounds = 1 if args.quick else 2
    ex = Exporter(run="bench-slow", framework="verl", port=0, gpu=False)
    acc = {"idle": ([], [], 0), "attack": ([], [], 0)}
    step = 0
    try:
        for _ in range(rounds):
            for name, attack in (("idle", None), ("attack", {"conns": args.conns,
                                                             "mode": args.mode})):
                lg, sc, fail, step = one_round(ex, seconds, attack, step)
                a, b, f = acc[name]
                acc[name] = (a + lg, b + sc, f + fail)
        stats = dict(ex.endpoint.stats)
        counts = ex.stats()
    finally:
        ex.close()
    (li, si, fi), (la, sa, fa) = acc["idle"], acc["attack"]
    print(f"{args.conns} slow connections ({args.mode}), {rounds} x {seconds:g} s rounds "
          "of each, interleaved")
    print(f"{'':24s}{'idle':>12s}{'attacked':>12s}{'ratio':>8s}")
    for label, a, b, scale, unit in (
            ("log() p50", li, la, 1e3, "us"), ("log() p99", li, la, 1e3, "us"),
            ("scrape p50", si, sa, 1e-3, "ms"), ("scrape p99", si, sa, 1e-3, "ms")):
        q = 0.5 if "p50" in label else 0.99
        x, y = pct(a, q) / scale, pct(b, q) / scale
        print(f"{label + ' (' + unit + ')':24s}{x:12.1f}{y:12.1f}{y / x:8.2f}")
    print(f"{'scrapes ok / failed':24s}{len(si):>7d} / {fi:<3d}{len(sa):>7d} / {fa:<3d}")
    print("endpoint:", json.dumps(stats), "| frames received", counts["frames_received"],
          "processed", counts["frames_processed"], "dropped", counts["frames_dropped"])


if __name__ == "__main__":
    main()
