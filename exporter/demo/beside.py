"""What a deployment serves beside the trainer, for the demo scenarios whose alerts read it
(a pathology's `engine` and `ranks`, exporter/demo/pathologies.py):

- a stand-in rollout engine (exporter/demo/engine.py: vLLM's own series) on its own /metrics,
  healthy until the onset, then the pathology's engine scenario; `down` stops serving it. A real
  engine's series get the run's `run` label from the scrape config (docs/rollout-engines.md),
  so the demo's target does too: `targets()` says how each is scraped;
- the run's other ranks, each an Exporter on its own /metrics that publishes only its own phase
  durations (as a rank that leaves log() to rank 0 does, exporter/distributed.py); the last one
  gets the pathology's `rank_edits` from the onset.
"""
from __future__ import annotations

from .frames import FrameView
from .pathologies import apply

ENGINE_JOB = "rollout-engine"   # matched by RLRolloutEngineDown's job=~".*(rollout-engine|vllm|sglang).*"
TRAINER_JOB = "rl-exporter"
# prometheus_client >= 0.22 escapes the engines' colons to underscores when Prometheus negotiates
# OpenMetrics (prometheus/client_python#1177): renamed back at ingestion, as the chart does.
ENGINE_METRIC_RELABEL = [{"source_labels": ["__name__"], "regex": "(vllm|sglang)_(.+)",
                          "target_label": "__name__", "replacement": "${1}:${2}"}]
_RANK_PHASES = ("gen", "update_actor")


class Beside:
    def __init__(self, pathology, run: str, *, listen: str = "127.0.0.1", port: int = 0,
                 onset: int = 20, seed: int = 0):
        self.p, self.run, self.listen, self.onset = pathology, run, listen, onset
        self.next_port = port          # 0: any free port; else consecutive ports from here
        self.seed = seed
        self.engine = self.engine_endpoint = None
        self.ranks: list = []          # Exporters of ranks 1..ranks-1
        self.engine_url = None

    @property
    def wanted(self) -> bool:
        return bool(self.p.engine or self.p.ranks > 1)

    def _port(self) -> int:
        if not self.next_port:
            return 0
        port, self.next_port = self.next_port, self.next_port + 1
        return port

    def start(self) -> "Beside":
        """Bind every endpoint (OSError when a port cannot be had: the caller says which)."""
        from ..core.endpoint import Endpoint
        from ..hook import Exporter
        from .engine import SimulatedEngine
        if self.p.engine:
            self.engine = SimulatedEngine("vllm", "healthy", seed=self.seed)
            self.engine_endpoint = Endpoint(self.engine.registry, self.listen, self._port())
            self.engine_endpoint.start()
            self.engine_url = self.engine_endpoint.url
        for rank in range(1, self.p.ranks):
            ex = Exporter(run=self.run, framework="auto", algorithm="grpo", rank=rank,
                          host=f"demo-node-{rank}", serve=False, gpu=False, handle_sigterm=False)
            self.ranks.append(ex)
            ex.listen(self.listen, self._port())
        return self

    def step(self, step: int, frame: dict | None, rng) -> None:
        """One training step: the engine serves a second of requests, every rank its phases."""
        on = step >= self.onset
        if self.engine is not None:
            if on and self.p.engine == "down":
                if self.engine_endpoint is not None:
                    self.engine_endpoint.stop()   # the engine died; the trainer goes on
                    self.engine_endpoint = None
            else:
                self.engine.scenario = self.p.engine if on else "healthy"
                self.engine.tick()
        if frame is None:
            return
        for i, ex in enumerate(self.ranks, start=1):
            own = {f"timing_s/{ph}": frame[f"timing_s/{ph}"] * rng.uniform(0.95, 1.05)
                   for ph in _RANK_PHASES if f"timing_s/{ph}" in frame}
            if on and i == len(self.ranks):
                apply(self.p.rank_edits, FrameView(own, {}), step - self.onset, rng)
            for key, value in own.items():
                ex.store.set("rl_phase_duration_seconds", float(value), {"phase": key.split("/", 1)[1]})

    def targets(self, trainer: str, host: str) -> list[dict]:
        """Prometheus target groups (file_sd / static_configs) for everything the demo serves:
        the trainer's ranks as job rl-exporter, the engine as job rollout-engine with the run's
        label. `trainer`: rank 0's host:port; `host`: the name Prometheus reaches the demo by."""
        ranks = [trainer] + [f"{host}:{ex.endpoint.port}" for ex in self.ranks if ex.endpoint]
        out = [{"targets": ranks, "labels": {"job": TRAINER_JOB}}]
        if self.p.engine:
            port = self.engine_url.rsplit(":", 1)[1].split("/")[0]
            out.append({"targets": [f"{host}:{port}"], "labels": {"job": ENGINE_JOB, "run": self.run}})
        return out

    def lines(self) -> list[str]:
        """What the demo's first screen says about these endpoints."""
        out = []
        if self.engine_url:
            out.append(f"  rollout engine (simulated vLLM): {self.engine_url}  (scrape it as job "
                       f"{ENGINE_JOB} with label run={self.run}; --scrape-config FILE writes it)")
        for ex in self.ranks:
            out.append(f"  rank {ex.rank}: {ex.url}")
        return out

    def close(self) -> None:
        if self.engine_endpoint is not None:
            self.engine_endpoint.stop()
            self.engine_endpoint = None
        for ex in self.ranks:
            ex.close(timeout=1.0)
