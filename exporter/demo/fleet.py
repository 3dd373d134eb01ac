"""A simulated fleet: many runs x ranks in one process, for scale tests and dashboards.

    fleet = Fleet(runs=64, ranks=8, gpus=8)   # 512 targets, each its own /metrics port
    fleet.start(); fleet.scrape_config()      # a Prometheus/vmagent scrape config
    fleet.tick()                              # one training step on every live run

Every rank is a real `Exporter` (store, catalog resolution, collector, OTel histograms)
behind its own HTTP endpoint, so a scraper sees what it would see from a real job: one
target per rank, `instance` = host:port, the run's identity on `rl_run_info`. Rank 0 logs
the trainer's frames (as `log_across_ranks` does); every rank carries the GPU series of
`gpus` GPUs through the real NVML sampler over the fake NVML (exporter/testing/nvml.py).

Frameworks rotate over veRL, TRL, OpenRLHF, AReaL and slime: the simulated run's veRL-keyed
frame is translated key by key into each framework's own keys through the catalog (keys a
framework has no name for are left out, as that framework would not log them), so the
frames go through that framework's vocabulary like a real trainer's.

Run kinds (fractions of the fleet, at least one of each from 5 runs on):
  healthy     advancing steps;
  failing     a failure scenario (exporter/demo/pathologies.py) from a few steps in;
  finished    reached rl_config_value{parameter="total_training_steps"}, still serving;
  restarting  rank processes restart every few steps: down for a tick, counters reset,
              the step rewinds to the last checkpoint;
  stalled     stopped advancing; its last step is dated `stall_age` seconds back (the
              simulator says the hang began before the demo started, so it shows at once).
"""
from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field

from ..catalog import CATALOG
from ..core.endpoint import Endpoint
from . import SimulatedRun

log = logging.getLogger("rl_exporter.fleet")

FRAMEWORKS = ("verl", "trl", "openrlhf", "areal", "slime")
KINDS = (("healthy", 0.70), ("failing", 0.12), ("finished", 0.08), ("restarting", 0.05),
         ("stalled", 0.05))
FAILURES = ("nan-loss", "entropy-collapse", "kl-spike", "grad-explosion", "length-truncation",
            "no-signal", "gpu-memory-full", "throughput-drop", "gpu-throttle")
POWER_CAP, HW_THERMAL = 0x4, 0x40  # NVML clock-event reason bits
TOTAL_STEPS_PARAMETER = "total_training_steps"
MODELS = ("qwen2.5-7b", "qwen2.5-3b", "llama-3.1-8b", "qwen3-30b-a3b")


def _translation(framework: str) -> dict[tuple, tuple[str, float]]:
    """(metric, labels) -> (key of `framework` for that series, its scale)."""
    by_series: dict[tuple, tuple[str, float]] = {}
    for key, a in CATALOG.vocabularies[framework].keys.items():
        by_series.setdefault((a.metric, tuple(sorted(a.labels))), (key, a.scale))
    return by_series


_TRANSLATIONS: dict[str, dict] = {}


def _known(r) -> bool:
    return r.metric is not None and not (r.fallback or r.ignored or r.step)


def translate(frame: dict, framework: str) -> dict:
    """The simulated frame (veRL keys plus posttrain's group/optimizer keys) as `framework`
    would log it: its own key for the same series, or its own resolution of the key;
    series it has no name for are left out."""
    index = _TRANSLATIONS.get(framework)
    if index is None:
        index = _TRANSLATIONS[framework] = _translation(framework)
    out = {}
    for k, v in frame.items():
        if _known(CATALOG.resolve(k, framework)):
            out[k] = v
            continue
        r = CATALOG.resolve(k, "auto")
        if not _known(r):
            continue
        hit = index.get((r.metric.name, tuple(sorted(r.labels))))
        if hit is None:
            continue
        key, scale = hit
        out[key] = v * r.scale / scale if isinstance(v, (int, float)) and scale else v
    return out


class Listener:
    """One thread accepting on every rank's port: a thread per port polling for shutdown
    would wake thousands of times a second in a big fleet. Each request is still served on
    its own thread (ThreadingMixIn), as the real endpoint serves it."""

    def __init__(self):
        import selectors
        self._sel = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="rl-exporter-fleet-http", daemon=True)
        self._stop = False
        self._thread.start()

    def add(self, server) -> None:
        import selectors
        with self._lock:
            self._sel.register(server.socket, selectors.EVENT_READ, server)

    def remove(self, server) -> None:
        with self._lock:
            try:
                self._sel.unregister(server.socket)
            except (KeyError, ValueError):
                pass

    def _loop(self) -> None:
        while not self._stop:
            if not self._sel.get_map():
                time.sleep(0.1)
                continue
            try:
                ready = self._sel.select(timeout=0.1)
            except (OSError, ValueError):  # a socket closed under us: look again
                continue
            for key, _ in ready:
                _accept(key.data)  # accept, then a thread serves it

    def close(self) -> None:
        self._stop = True


def _accept(server) -> None:
    """Accept one connection and hand it to the server's thread, with socketserver's public
    steps (get_request, verify_request, process_request)."""
    try:
        request, addr = server.get_request()
    except (OSError, ValueError):
        return
    if not server.verify_request(request, addr):
        server.shutdown_request(request)
        return
    try:
        server.process_request(request, addr)
    except Exception:
        server.handle_error(request, addr)
        server.shutdown_request(request)


_LISTENER: Listener | None = None


def listener() -> Listener:
    global _LISTENER
    if _LISTENER is None or _LISTENER._stop:
        _LISTENER = Listener()
    return _LISTENER


class RankEndpoint(Endpoint):
    def start(self) -> None:
        listener().add(self.bind())  # served by the one listener thread, not a thread of its own

    def stop(self) -> None:
        if self._server is not None:
            listener().remove(self._server)
            self._server.server_close()
            self._server = None


@dataclass
class Target:
    run: str
    rank: int
    port: int = 0
    exporter: object = None
    endpoint: RankEndpoint | None = None
    down_ticks: int = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    host: str = "127.0.0.1"


@dataclass
class SimRun:
    name: str
    kind: str
    framework: str
    scenario: str
    model: str
    sim: SimulatedRun
    step: int
    total: int
    targets: list[Target] = field(default_factory=list)


def plan_kinds(runs: int, rng: random.Random) -> list[str]:
    kinds = []
    for kind, frac in KINDS:
        kinds += [kind] * int(round(frac * runs))
    if runs >= len(KINDS):
        for kind, _ in KINDS:  # at least one of each
            if kind not in kinds:
                kinds.append(kind)
    while len(kinds) > runs:
        kinds.remove("healthy")
    kinds += ["healthy"] * (runs - len(kinds))
    rng.shuffle(kinds)
    return kinds


class Fleet:
    def __init__(self, runs: int = 8, ranks: int = 2, *, gpus: int = 8, seed: int = 0,
                 listen: str = "127.0.0.1", base_port: int = 0, gpu_interval: float = 15.0,
                 onset: int = 3, restart_every: int = 6, stall_age: float = 1800.0,
                 prefix: str = "fleet"):
        if runs < 1 or ranks < 1:
            raise ValueError("--runs and --ranks must be at least 1")
        self.ranks, self.gpus, self.listen = ranks, gpus, listen
        self.base_port, self.gpu_interval = base_port, gpu_interval
        self.onset, self.restart_every, self.stall_age = onset, restart_every, stall_age
        self.rng = random.Random(seed)
        self.ticks = 0
        self.runs: list[SimRun] = []
        kinds = plan_kinds(runs, self.rng)
        for i, kind in enumerate(kinds):
            fw = FRAMEWORKS[i % len(FRAMEWORKS)]
            scenario = self.rng.choice(FAILURES) if kind == "failing" else \
                "stall" if kind == "stalled" else "healthy"
            start = self.rng.randint(20, 400)
            total = start + 2 if kind == "finished" else 10_000
            sim = SimulatedRun(scenario, seed=seed * 1000 + i, onset=start + onset,
                               total_steps=total)
            self.runs.append(SimRun(f"{prefix}-{i:03d}-{kind}", kind, fw, scenario,
                                    MODELS[i % len(MODELS)], sim, start, total))

    # ------------------------------------------------------------ lifecycle
    @property
    def targets(self) -> list[Target]:
        return [t for r in self.runs for t in r.targets]

    def start(self) -> "Fleet":
        n = 0
        for r in self.runs:
            for rank in range(self.ranks):
                port = self.base_port + n if self.base_port else 0
                t = Target(r.name, rank, port=port, host=self.listen if self.listen not in
                           ("0.0.0.0", "") else "127.0.0.1")
                r.targets.append(t)
                self._up(r, t)
                n += 1
            self._advance(r)  # a first frame, so every run has its series before a scrape
        return self

    def _up(self, r: SimRun, t: Target) -> None:
        from ..gpu import start_sampler
        from ..hook import Exporter
        from ..testing.nvml import FakeNVML
        ex = Exporter(run=r.name, framework=r.framework, algorithm="grpo", model=r.model,
                      rank=t.rank, host=f"{r.name}-node-{t.rank}", serve=False, gpu=False,
                      poll_interval=1.0)
        if self.gpus:
            nv = FakeNVML(gpus=self.gpus)
            for g in nv.gpus:  # at the power cap under load, as healthy GPUs are; no thermal slowdown
                g["reasons"] = POWER_CAP
            if r.scenario == "gpu-throttle":
                nv.gpus[-1]["reasons"] = POWER_CAP | HW_THERMAL
            ex.gpu_sampler = start_sampler(ex, "on", self.gpu_interval, nvml=nv)
        ex.store.set("rl_config_value", float(r.total), {"parameter": TOTAL_STEPS_PARAMETER})
        ep = RankEndpoint(ex.registry, self.listen, t.port, health=ex.health)
        ep.start()  # OSError on a taken port: the caller says which
        t.port, t.exporter, t.endpoint = ep.port, ex, ep

    def _down(self, t: Target) -> None:
        if t.endpoint is not None:
            t.endpoint.stop()
        if t.exporter is not None:
            t.exporter.close(timeout=1.0)
        t.exporter = t.endpoint = None

    def close(self) -> None:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(16) as pool:  # each stop waits up to a server poll interval
            list(pool.map(self._down, self.targets))

    # ------------------------------------------------------------ steps
    def tick(self) -> None:
        """One step of every live run (restarts, finishes and stalls included)."""
        self.ticks += 1
        for r in self.runs:
            if r.kind == "restarting":
                for t in r.targets:
                    if t.exporter is None:
                        t.down_ticks -= 1
                        if t.down_ticks <= 0:
                            self._up(r, t)
                    elif self.ticks % self.restart_every == 0:
                        self._down(t)
                        t.down_ticks = 1
                if self.ticks % self.restart_every == 1 and self.ticks > 1:
                    r.step -= r.step % 10  # resumed from the last checkpoint
            self._advance(r)

    def _advance(self, r: SimRun) -> None:
        rank0 = r.targets[0].exporter if r.targets else None
        if rank0 is None or r.kind == "finished" and r.step >= r.total:
            return
        if r.kind == "stalled" and r.step > r.sim.onset:
            return
        r.step += 1
        frame = r.sim.frame(r.step)
        if frame is None:  # the stall scenario: the trainer hangs from its onset on
            # the last frame's own timestamp first, then the backdated one: a flush that gave up
            # early (a loaded machine) would let the worker write the fresh one over it later
            rank0.flush(30.0)
            stamp = time.time() - self.stall_age
            rank0.store.set("rl_training_step_timestamp_seconds", stamp)
            # ... and the run was running before its last step: a state that began after the
            # backdated step would be a pause that just ended, which no stall rule counts
            rank0.store.set("rl_run_state_change_timestamp_seconds", min(rank0.lifecycle.since, stamp))
            return
        rank0.log(translate(frame, r.framework), step=r.step)
        for metric, value, labels in r.sim.side_series(r.step):
            if not metric.startswith("hw_gpu_"):  # the NVML sampler owns the GPU series
                rank0.store.set(metric, value, labels)

    # ------------------------------------------------------------ scraping
    def scrape_config(self, job: str = "rl-exporter-fleet", interval: str = "15s") -> dict:
        """A Prometheus (and vmagent) scrape config for every target."""
        return {"scrape_configs": [{
            "job_name": job, "scrape_interval": interval,
            "static_configs": [{"targets": [t.address for t in self.targets]}]}]}

    def summary(self) -> list[dict]:
        return [{"run": r.name, "kind": r.kind, "framework": r.framework, "scenario": r.scenario,
                 "step": r.step, "targets": [t.address for t in r.targets]} for r in self.runs]
