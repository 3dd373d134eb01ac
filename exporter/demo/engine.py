"""A stand-in rollout engine: vLLM's or SGLang's own /metrics series, declared from the
engines' definitions (exporter/catalog/engines.py) with the real prometheus_client, driven by
a simulated request stream. For demos, tests and the captured expositions in
tests/data/engines/ - not a model server.

    python -m exporter.demo.engine --engine vllm --scenario long-tail --port 0
    python -m exporter.demo.engine --engine vllm --capture tests/data/engines/vllm.prom

Scenarios (one tick = one simulated second of a busy 8-GPU rollout server):
    healthy    ~40 requests/s finish, e2e latency lognormal around 8 s (p99/p50 about 2.3)
    long-tail  as healthy, but 5 % of requests run 15x longer (p99/p50 about 15)
    aborts     10 % of requests end with finish reason abort
    kv-thrash  KV cache above 95 %, few requests running, preemptions every tick
    idle       no requests at all (the engine waits while the trainer waits on it)
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ..catalog.engines import SGLANG, VLLM, VLLM_FINISH_REASONS

SCENARIOS = ("healthy", "long-tail", "aborts", "kv-thrash", "idle")
MODEL = "Qwen/Qwen2.5-7B-Instruct"
_KINDS = {"gauge": Gauge, "counter": Counter, "histogram": Histogram}


class SimulatedEngine:
    def __init__(self, engine: str = "vllm", scenario: str = "healthy", seed: int = 0,
                 max_running: int = 256):
        if engine not in ("vllm", "sglang"):
            raise ValueError(f"engine must be vllm or sglang, not {engine!r}")
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
        self.engine, self.scenario = engine, scenario
        self.rng = random.Random(seed)
        self.max_running = max_running
        self.registry = CollectorRegistry(auto_describe=False)
        self.m = {}
        self.labelnames = {}  # metric -> its label names, as declared
        for d in (VLLM if engine == "vllm" else SGLANG):
            kw = {"name": d.name, "documentation": d.help, "labelnames": d.labels,
                  "registry": self.registry}
            if d.kind == "histogram":
                kw["buckets"] = d.buckets
            self.m[d.name] = _KINDS[d.kind](**kw)
            self.labelnames[d.name] = tuple(d.labels)
        self.ticks = 0
        if engine == "vllm":  # vLLM creates every child at start (make_per_engine, one per reason)
            for d in VLLM:
                if "finished_reason" in d.labels:
                    for reason in VLLM_FINISH_REASONS:
                        self._lab(d.name, finished_reason=reason)
                else:
                    self._lab(d.name)

    # ------------------------------------------------------------ labels
    def _lab(self, name, **extra):
        metric = self.m[name]
        if self.engine == "vllm":
            base = {"model_name": MODEL, "engine": "0"}
        elif "engine_type" in self.labelnames[name]:
            base = {"model_name": MODEL, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0",
                    "moe_ep_rank": "0"}
        else:
            base = {"model_name": MODEL}
        return metric.labels(**base, **extra)

    def _p(self, short: str) -> str:
        return f"{self.engine}:{short}"

    # ------------------------------------------------------------ simulation
    def tick(self) -> None:
        """One simulated second."""
        r, sc = self.rng, self.scenario
        self.ticks += 1
        idle = sc == "idle"
        finished = 0 if idle else max(0, int(r.gauss(40, 4)))
        if sc == "kv-thrash":
            finished = max(0, int(r.gauss(8, 2)))
        running = 0 if idle else int(self.max_running * (0.2 if sc == "kv-thrash" else 0.85)
                                     + r.gauss(0, 4))
        waiting = 0 if idle else (int(150 + r.gauss(0, 10)) if sc == "kv-thrash" else
                                  max(0, int(r.gauss(6, 3))))
        kv = 0.0 if idle else (min(0.999, 0.97 + r.gauss(0, 0.005)) if sc == "kv-thrash"
                               else min(0.95, 0.62 + r.gauss(0, 0.04)))
        preempted = (r.randint(2, 6) if sc == "kv-thrash" else 0)
        gen_tokens = prompt_tokens = 0
        for _ in range(finished):
            latency = r.lognormvariate(math.log(8.0), 0.35)
            if sc == "long-tail" and r.random() < 0.05:
                latency *= 15
            out_len = max(1, int(r.lognormvariate(math.log(350), 0.5)))
            reason = "length" if out_len >= 1024 else "stop"
            if sc == "aborts" and r.random() < 0.10:
                reason = "abort"
            out_len = min(out_len, 1024)
            gen_tokens += out_len
            prompt_tokens += 120
            self._finish(latency, out_len, reason)
        if self.engine == "vllm":
            self._lab("vllm:num_requests_running").set(max(0, running))
            self._lab("vllm:num_requests_waiting").set(max(0, waiting))
            self._lab("vllm:kv_cache_usage_perc").set(kv)
            self._lab("vllm:gpu_cache_usage_perc").set(kv)
            self._lab("vllm:num_preemptions").inc(preempted)
            self._lab("vllm:prompt_tokens").inc(prompt_tokens)
            self._lab("vllm:generation_tokens").inc(gen_tokens)
        else:
            self._lab("sglang:num_running_reqs").set(max(0, running))
            self._lab("sglang:num_queue_reqs").set(max(0, waiting))
            self._lab("sglang:token_usage").set(kv)
            self._lab("sglang:gen_throughput").set(gen_tokens)
            self._lab("sglang:max_total_num_tokens").set(620_000)
            self._lab("sglang:num_retracted_requests_total").inc(preempted)
            self._lab("sglang:prompt_tokens_total").inc(prompt_tokens)
            self._lab("sglang:generation_tokens_total").inc(gen_tokens)

    def _finish(self, latency: float, out_len: int, reason: str) -> None:
        r = self.rng
        ttft = r.lognormvariate(math.log(0.15), 0.5)
        if self.engine == "vllm":
            self._lab("vllm:request_success", finished_reason=reason).inc()
            self._lab("vllm:e2e_request_latency_seconds").observe(latency)
            self._lab("vllm:time_to_first_token_seconds").observe(ttft)
            self._lab("vllm:time_per_output_token_seconds").observe(max(1e-3, (latency - ttft) / out_len))
            self._lab("vllm:request_queue_time_seconds").observe(r.expovariate(5))
            self._lab("vllm:request_generation_tokens").observe(out_len)
        else:
            if reason == "abort":
                self._lab("sglang:num_aborted_requests_total").inc()
                return
            self._lab("sglang:num_requests_total").inc()
            self._lab("sglang:e2e_request_latency_seconds").observe(latency)
            self._lab("sglang:time_to_first_token_seconds").observe(ttft)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m exporter.demo.engine", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", choices=("vllm", "sglang"), default="vllm")
    p.add_argument("--scenario", choices=SCENARIOS, default="healthy")
    p.add_argument("--onset", type=int, default=0, help="ticks of healthy traffic first")
    p.add_argument("--interval", type=float, default=1.0, help="wall seconds per tick (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=8000, help="port to serve /metrics on (0 = any)")
    p.add_argument("--listen", default="127.0.0.1")
    p.add_argument("--capture", help="write the exposition after --ticks ticks to this file and exit")
    p.add_argument("--ticks", type=int, default=600)
    a = p.parse_args(argv)
    sim = SimulatedEngine(a.engine, "healthy" if a.onset else a.scenario, seed=a.seed)
    if a.capture:
        for _ in range(a.ticks):
            if a.onset and sim.ticks == a.onset:
                sim.scenario = a.scenario
            sim.tick()
        with open(a.capture, "wb") as f:
            f.write(sim.exposition())
        print(f"wrote {a.capture}")
        return 0
    from prometheus_client import start_http_server
    server, _ = start_http_server(a.port, addr=a.listen, registry=sim.registry)
    print(f"rl-exporter demo engine ({a.engine}, {a.scenario}): scrape "
          f"http://{a.listen}:{server.server_address[1]}/metrics", flush=True)
    try:
        while True:
            if a.onset and sim.ticks == a.onset:
                sim.scenario = a.scenario
            sim.tick()
            time.sleep(a.interval)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
