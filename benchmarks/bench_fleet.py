"""What a fleet costs one Prometheus: the shipped recording and alerting rules over a
simulated fleet (`rl-exporter demo --runs N --ranks M`, 8 fake GPUs per rank), at several
sizes, on a real Prometheus (Debian `prometheus`).

    python3 benchmarks/bench_fleet.py [--sizes 8x8,16x8,32x8,64x8] [--seconds 120]
                                      [--interval 15s] [--gpus 8]

Per size: a fresh fleet process and a fresh Prometheus (scrape and rule evaluation every
--interval, the shipped exporter/rules/*.yaml), run for --seconds, then read Prometheus' own
numbers: rule group evaluation time (prometheus_rule_group_last_duration_seconds, max over
the run), scrape duration (scrape_duration_seconds over the targets), samples per target,
TSDB head series, Prometheus RSS (process_resident_memory_bytes) and CPU, the fleet
process's RSS and CPU, and the 5 slowest rules by the median of their evaluations
(/api/v1/rules, read at every poll).

Scaling model: each column is fitted by least squares as a + b x targets over the sizes
measured (>= 3 for a stated model) and extrapolated to bigger fleets. The range rules read
windows of up to 1 h; a short run fills them partly, so rule time is also measured at
half the run and the growth per minute of history is reported.

The alternative, measured in the same run at the largest size: every fleet-dashboard query
that reads a fleet recording rule, evaluated as written (pre-aggregated per-run series) and
with each recorded name expanded into its expression (what the dashboard would cost without
the recording rules), median wall time of 5 through the HTTP API.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from exporter.alerts.recordings import FLEET_STATES  # noqa: E402
from exporter.alerts.render import render
from exporter.dashboards.fleet import DASHBOARD  # noqa: E402
from exporter import rules as shipped  # noqa: E402
from exporter.testing import free_port  # noqa: E402

RULES = [str(p) for p in shipped.rule_files()]
FLEET_RECORDS = ("run:rl_fleet_targets:count", "run:rl_fleet_targets_up:count", "run:rl_training_step:max",
                 "run:rl_training_step:deriv10m", "run:rl_mfu_ratio:max",
                 "run:rl_gpu_throughput_tokens_per_second:max", "run:hw_gpus:count",
                 "run_severity:alerts_firing:count", "run:rl_run_state:code", "run:hw_gpus_failing:count")


def get(url: str, timeout: float = 60) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def query(base: str, expr: str) -> list:
    body = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    return body["data"]["result"]


def scalar(base: str, expr: str) -> float:
    r = query(base, expr)
    return float(r[0]["value"][1]) if r else float("nan")


def own_metrics(base: str) -> dict[str, float]:
    """Prometheus' own /metrics (it does not scrape itself here): family -> max sample."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            out[smp.name] = max(out.get(smp.name, float("-inf")), smp.value)
    return out


def proc_stat(pid: int) -> tuple[float, float]:
    """(RSS bytes, CPU seconds) of a process, from /proc."""
    rss = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = float(line.split()[1]) * 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return rss, (int(fields[11]) + int(fields[12])) / tick


def stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def measure(runs: int, ranks: int, gpus: int, seconds: float, interval: str, tmp: Path,
            compare: bool) -> dict:
    scrape = tmp / f"scrape-{runs}x{ranks}.yml"
    fleet = subprocess.Popen(
        [sys.executable, "-m", "exporter.cli", "demo", "--runs", str(runs), "--ranks", str(ranks),
         "--gpus", str(gpus), "--interval", "10", "--scrape-config", str(scrape),
         "--scrape-interval", interval, "--port", "0"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    prom = None
    try:
        t0 = time.monotonic()
        while not scrape.exists() or "scrape config" not in (fleet.stdout.readline() or "x"):
            if fleet.poll() is not None:
                raise RuntimeError("the fleet demo exited")
        start_s = time.monotonic() - t0
        cfg = yaml.safe_load(scrape.read_text())
        cfg["global"] = {"scrape_interval": interval, "evaluation_interval": interval}
        cfg["rule_files"] = RULES
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(cfg))
        port = free_port()
        data = tmp / f"data-{runs}x{ranks}"
        prom = subprocess.Popen(["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={data}", f"--web.listen-address=127.0.0.1:{port}",
                                 "--log.level=warn"], stdout=subprocess.DEVNULL,
                                stderr=(tmp / "prometheus.log").open("a"))
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/-/ready", timeout=1)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        _, fleet_cpu0 = proc_stat(fleet.pid)
        _, prom_cpu0 = proc_stat(prom.pid)
        t_start = time.monotonic()
        rule_max = half_rule = 0.0
        per_rule: dict[str, dict[str, float]] = {}  # rule -> {last evaluation: its duration}
        poll = max(2.0, float(interval.rstrip("s")) / 2)
        while time.monotonic() - t_start < seconds:
            time.sleep(poll)
            rule = own_metrics(base).get("prometheus_rule_group_last_duration_seconds", 0.0)
            rule_max = max(rule_max, rule)
            for g in get(f"{base}/api/v1/rules")["data"]["groups"]:
                for r in g["rules"]:
                    if r.get("lastEvaluation"):
                        per_rule.setdefault(r["name"], {})[r["lastEvaluation"]] = r.get("evaluationTime", 0)
            if not half_rule and time.monotonic() - t_start >= seconds / 2:
                half_rule = rule
        wall = time.monotonic() - t_start
        own = own_metrics(base)
        prom_rss, prom_cpu1 = proc_stat(prom.pid)
        row = {
            "runs": runs, "ranks": ranks, "targets": runs * ranks,
            "up": scalar(base, 'count(up{job="rl-exporter-fleet"} == 1)'),
            "samples/target": scalar(base, 'avg(scrape_samples_scraped{job="rl-exporter-fleet"})'),
            "head series": own["prometheus_tsdb_head_series"],
            "rule group s (max)": rule_max,
            "rule group s (last)": own["prometheus_rule_group_last_duration_seconds"],
            "rule s at half": half_rule,
            "missed evals": own.get("prometheus_rule_group_iterations_missed_total", 0.0),
            "scrape s (avg)": scalar(base, 'avg(avg_over_time(scrape_duration_seconds{job="rl-exporter-fleet"}'
                                           f'[{int(seconds)}s]))'),
            "scrape s (max)": scalar(base, 'max(max_over_time(scrape_duration_seconds{job="rl-exporter-fleet"}'
                                           f'[{int(seconds)}s]))'),
            "prom RSS MiB": own["process_resident_memory_bytes"] / 2**20,
            "prom CPU %": 100 * (prom_cpu1 - prom_cpu0) / wall,
            "fleet start s": start_s,
            "load avg": os.getloadavg()[0],
        }
        rss, cpu1 = proc_stat(fleet.pid)
        row["fleet RSS MiB"] = rss / 2**20
        row["fleet CPU %"] = 100 * (cpu1 - fleet_cpu0) / wall
        states = query(base, "count_values(\"code\", run:rl_run_state:code)")
        row["states"] = {FLEET_STATES[int(s["metric"]["code"])]: int(float(s["value"][1])) for s in states}
        # one evaluation's time is noisy on a busy host: the median of each rule's evaluations
        slow = sorted(((statistics.median(ts.values()), n) for n, ts in per_rule.items()),
                      reverse=True)[:5]
        row["slowest rules"] = [(n, round(t * 1000, 1)) for t, n in slow]
        row["evaluations per rule"] = min((len(ts) for ts in per_rule.values()), default=0)
        if compare:
            row["dashboard"] = compare_dashboard(base)
        return row
    finally:
        if prom is not None:
            stop(prom)
        stop(fleet)
        shutil.rmtree(tmp / f"data-{runs}x{ranks}", ignore_errors=True)


def expand(expr: str, records: dict[str, str]) -> str | None:
    """`expr` with each fleet recording replaced by its expression; None when a recording is
    read with matchers other than the dashboard's run variable (not expandable by text)."""
    out = expr
    for _ in range(3):
        for name, body in records.items():
            for m in list(re.finditer(re.escape(name) + r"(\{[^}]*\})?", out)):
                sel = m.group(1)
                if sel and sel not in ('{run=~".*"}',):
                    return None
            out = re.sub(re.escape(name) + r'(\{run=~"\.\*"\})?', lambda _: f"({body})", out)
    return out


def timed(base: str, expr: str, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        query(base, expr)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def compare_dashboard(base: str) -> dict:
    records = {r["record"]: r["expr"] for g in render()["groups"] for r in g["rules"]
               if "record" in r and r["record"] in FLEET_RECORDS}
    pairs = []
    for p, q in DASHBOARD.queries:
        expr = re.sub(r"\$\{?(\w+)\}?", lambda m: {"__range": "1h", "__rate_interval": "1m"}.get(m.group(1), ".*"),
                      q.expr)
        if not any(r in expr for r in records):
            continue
        raw = expand(expr, records)
        if raw is None:
            continue
        pairs.append((p.title, timed(base, expr), timed(base, raw)))
    rec = sum(a for _, a, _ in pairs)
    raw = sum(b for _, _, b in pairs)
    return {"queries": len(pairs), "recorded s": rec, "raw s": raw, "ratio": raw / rec if rec else float("nan"),
            "worst": max(pairs, key=lambda x: x[2] / x[1])[0] if pairs else ""}


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


COLUMNS = ("targets", "load avg", "up", "samples/target", "head series", "rule group s (max)", "rule group s (last)",
           "missed evals", "scrape s (avg)", "scrape s (max)", "prom RSS MiB", "prom CPU %",
           "fleet RSS MiB", "fleet CPU %")
MODEL = ("head series", "rule group s (last)", "rule group s (max)", "prom RSS MiB", "prom CPU %",
         "scrape s (avg)", "fleet CPU %")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="8x8,16x8,32x8,64x8", help="runs x ranks, comma-separated")
    ap.add_argument("--seconds", type=float, default=120, help="seconds per size (default 120)")
    ap.add_argument("--interval", default="15s", help="scrape and evaluation interval (default 15s)")
    ap.add_argument("--gpus", type=int, default=8, help="fake GPUs per rank (default 8)")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args(argv)
    if not shutil.which("prometheus"):
        print("bench_fleet: needs Debian prometheus (apt install prometheus)", file=sys.stderr)
        return 2
    sizes = [tuple(int(v) for v in s.split("x")) for s in a.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for i, (runs, ranks) in enumerate(sizes):
            row = measure(runs, ranks, a.gpus, a.seconds, a.interval, Path(d), compare=i == len(sizes) - 1)
            rows.append(row)
            print(f"# {runs}x{ranks}: " + ", ".join(f"{k}={row[k]:.4g}" for k in COLUMNS[1:]), flush=True)
    print(f"\nfleet on one Prometheus ({os.cpu_count()} cores; scrape and rule evaluation every "
          f"{a.interval}; {a.gpus} fake GPUs per rank; {a.seconds:.0f} s per size)\n")
    print(" | ".join(f"{c:>12s}" for c in COLUMNS))
    for r in rows:
        print(" | ".join(f"{r[c]:12.4g}" for c in COLUMNS))
    for r in rows:
        print(f"{r['runs']}x{r['ranks']}: states {r['states']}; slowest rules (median ms over {r['evaluations per rule']}+ evaluations) {r['slowest rules']}; "
              f"rule group at half the run {r['rule s at half']:.4g} s")
    if len(rows) >= 3:
        xs = [r["targets"] for r in rows]
        print("\nscaling model, least squares y = a + b x targets over "
              f"{len(rows)} sizes ({', '.join(str(x) for x in xs)} targets):")
        for c in MODEL:
            a0, b = fit(xs, [r[c] for r in rows])
            ext = ", ".join(f"{t}: {a0 + b * t:.4g}" for t in (1024, 2048, 4096))
            print(f"  {c:20s} a = {a0:.4g}, b = {b:.4g} per target -> {ext}")
        for c in ("rule group s (last)", "rule group s (max)"):
            a0, b = fit(xs, [r[c] for r in rows])
            if b > 0:
                print(f"  {c} reaches 1 s at about {(1 - a0) / b:.0f} targets (with this much history)")
        a0, b = fit(xs, [r["prom RSS MiB"] for r in rows])
        print(f"  Prometheus memory: {b * 1024:.3g} MiB per 1,024 targets above a {a0:.3g} MiB base")
    d = rows[-1].get("dashboard")
    if d:
        print(f"\nfleet dashboard at {rows[-1]['targets']} targets, {d['queries']} queries reading fleet "
              f"recordings: {d['recorded s'] * 1000:.1f} ms as recorded vs {d['raw s'] * 1000:.1f} ms with the "
              f"recordings expanded (raw / recorded = {d['ratio']:.1f}x; largest gap: {d['worst']})")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
