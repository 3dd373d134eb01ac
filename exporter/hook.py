"""The in-process hook: the public API and the exporter's lifecycle.

    from exporter import Exporter
    with Exporter(run="grpo-7b-a", framework="verl") as rlx:
        for step in range(n):
            metrics = train_step()
            rlx.log(metrics, step=step)

`log()` copies the frame and appends it to a bounded queue (the oldest frame is
dropped and counted when full); the worker thread (worker.py) resolves keys
through the catalog (cached per key), coerces values (coerce.py) and writes the
store (store.py), and the spool (spool.py) when asked. Nothing here raises
into the training loop: every loss is counted under a named reason in one registry
(self_metrics.py) and logged once per kind.
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time
import weakref

from prometheus_client import CollectorRegistry

from .catalog import CATALOG, FRAMEWORK_ALIASES, Catalog
from .core.collector import StoreCollector
from .core.endpoint import DEFAULT_ADDR, DEFAULT_PORT, Endpoint
from .core.otel import Telemetry
from .core.pipeline import Pipeline, env_rank, run_info
from .core.run import ServedRun
from .core.self_metrics import Counts
from .core.values import PLAIN_TYPES, prepare_values
from .spool import SpoolWriter

log = logging.getLogger("rl_exporter")

DEFAULT_FALLBACK_LIMIT = 500      # distinct unknown keys exported under rl_unmapped_value
DEFAULT_QUEUE_SIZE = 1024         # frames
_modules = sys.modules
_LIVE: "weakref.WeakSet[Exporter]" = weakref.WeakSet()


@atexit.register
def _close_live_exporters() -> None:
    for ex in list(_LIVE):
        ex.close(timeout=2.0)


# SIGTERM (Kubernetes, Slurm, torchrun stopping a job) ends Python without atexit: the
# queued frames, the spool's tail and the last OTLP push would go. Where the process
# has no SIGTERM handler of its own, ours closes the exporters (bounded, on a separate
# thread so a lock held by the interrupted code cannot block it), then dies by SIGTERM
# as it would have.
SIGTERM_CLOSE_S = 3.0
_sigterm_installed = False


def _install_sigterm() -> None:
    global _sigterm_installed
    if _sigterm_installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
            _sigterm_installed = True
    except (ValueError, OSError):  # not the main interpreter, or no signals here
        pass


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    t = threading.Thread(target=_close_live_exporters, name="rl-exporter-sigterm", daemon=True)
    t.start()
    t.join(SIGTERM_CLOSE_S)
    os.kill(os.getpid(), signal.SIGTERM)


# A fork copies the exporter but none of its threads (worker, HTTP server, samplers), and any
# lock another thread held at that instant stays held forever in the child. The child's copy
# is therefore retired at once: fresh locks, nothing left to serve or join, every later
# frame counted as dropped{reason="forked"} (the parent goes on exporting). A child that
# wants metrics of its own creates its own Exporter.
def _retire_in_fork_child() -> None:
    for ex in list(_LIVE):
        try:
            ex.retire_after_fork()
        except Exception:  # nothing may raise in a fork child's start-up
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_retire_in_fork_child)


def default_run() -> str:
    return os.environ.get("RL_EXPORTER_RUN") or time.strftime("run-%Y%m%d-%H%M%S")


_PORT_UNSET = object()  # port not passed: RL_EXPORTER_PORT, else DEFAULT_PORT


def _env_port() -> int:
    """RL_EXPORTER_PORT (like RL_EXPORTER_RUN) where the caller passed no port."""
    v = os.environ.get("RL_EXPORTER_PORT", "").strip()
    return int(v) if v.isdigit() else DEFAULT_PORT


class Exporter(ServedRun):
    """Export an RL run's per-step metrics to Prometheus (and OTLP). A served run
    (core/run.py) plus the public API, /metrics, the NVML sampler and the process's lifecycle."""

    def __init__(self, run: str | None = None, framework: str = "auto", *,
                 algorithm: str | None = None, model: str | None = None,
                 rank: int | None = None, host: str | None = None,
                 port: int | str | None = _PORT_UNSET, addr: str = DEFAULT_ADDR, serve: bool = True,
                 otlp_endpoint: str | None = None, otlp_interval: float = 15.0,
                 queue_size: int = DEFAULT_QUEUE_SIZE,
                 fallback_limit: int = DEFAULT_FALLBACK_LIMIT, series_limit: int = 2000,
                 registry: CollectorRegistry | None = None, catalog: Catalog = CATALOG,
                 poll_interval: float = 0.02,
                 gpu: bool | str = "auto", gpu_interval: float = 5.0, spool: str | None = None,
                 expert_series: bool | None = None, handle_sigterm: bool = True):
        run = run or default_run()
        # Per-expert MoE series (label `expert`: layers x experts of them) are opt-in: they
        # alone can exceed a rank's whole series budget (`rl-exporter catalog --budget`).
        if expert_series is None:
            expert_series = os.environ.get("RL_EXPORTER_EXPERT_SERIES", "").lower() in ("1", "true", "yes")
        # the one loss registry: the worker, store, timers, distributions and samplers count here
        counts = Counts()
        framework = FRAMEWORK_ALIASES.get(framework, framework)  # "ms-swift" -> "swift"
        if framework not in ("auto",) and framework not in catalog.vocabularies:
            log.error("unknown framework %r; using 'auto' (known: %s)", framework,
                      ", ".join(catalog.vocabularies))
            framework = "auto"
        rank = env_rank() if rank is None else rank
        spool_writer = SpoolWriter.open(spool, run, framework, counts) if spool else None
        pipeline = Pipeline(
            run, catalog=catalog, framework=framework, counts=counts,
            info=run_info(framework, algorithm, model, host, rank),
            queue_size=queue_size, fallback_limit=fallback_limit, series_limit=series_limit,
            poll_interval=poll_interval, spool=spool_writer, expert_series=expert_series)
        telemetry = Telemetry({"service.name": "rl-exporter", "rl.run": run},
                              catalog=catalog, otlp_endpoint=otlp_endpoint,
                              otlp_interval_s=otlp_interval, on_error=counts.error)
        telemetry.mirror(pipeline.store, pipeline.self_metrics)
        from .spans import Spans
        super().__init__(pipeline, rank=rank, telemetry=telemetry,
                         spans=Spans.start(pipeline, otlp_endpoint))  # opt-in traces
        self.expert_series = expert_series
        self.fallback_limit = fallback_limit
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
        # hot-path state read by log(): plain attributes
        self._dropped = counts.dropped
        self._plain = set(PLAIN_TYPES)
        self._enqueue = pipeline.enqueue
        self._queue = pipeline.queue
        self._qlock = pipeline.qlock
        self._worker = pipeline.worker
        self._closed_reason = "closed"  # or "forked": why log() drops frames once closed
        self.endpoint = None
        self.gpu_sampler = None

        self.collector = StoreCollector(self.store, extra=pipeline.self_metrics)
        self.registry.register(self.collector)
        from .stacks import HangWatch
        self.hang_watch = HangWatch(self)  # stacks captured once per hang (exporter/stacks.py)
        pipeline.start()
        _LIVE.add(self)  # closed at interpreter exit: the last frames and the last OTLP push
        # served last: a scrape that arrives during start-up finds the worker in place
        if port is _PORT_UNSET:
            port = _env_port()
        if serve and port is not None:
            self._serve(addr, port)
        if handle_sigterm:
            _install_sigterm()
        # NVML sampler (gpu.py): on when NVML is present, else one log line says why.
        from .gpu import start_sampler
        self.gpu_sampler = start_sampler(self, gpu, gpu_interval)

    def _serve(self, addr: str, port) -> None:
        """Start /metrics; a port that cannot be had is a counted error, never an exception."""
        try:
            port = int(port)  # "9464" from a config file or the environment
        except (TypeError, ValueError):
            self.counts.error("bind", None, f"port {port!r} is not a port number; /metrics is "
                              "not served (metrics are still collected)")
            return
        try:
            self.listen(addr, port)
            log.info("rl-exporter serving %s (run %s)", self.url, self.run)
        except (OSError, OverflowError) as e:
            self.counts.error("bind", e, f"cannot serve /metrics on {addr}:{port} ({e}); "
                              "metrics are still collected (pass port=0 for a free port)")

    def listen(self, addr: str = DEFAULT_ADDR, port: int = DEFAULT_PORT) -> str:
        """Serve /metrics (and /status, /debug/stacks) now, for an Exporter built with
        serve=False: the URL, or OSError/OverflowError at once when the port cannot be had
        (a command line says so in one line; the constructor's path counts it instead)."""
        ep = Endpoint(self.registry, addr, port, health=self.health)
        from .status import add_routes
        add_routes(ep, self)  # GET /status, GET /debug/stacks
        ep.start()
        self.endpoint = ep
        return ep.url

    def retire_after_fork(self) -> None:
        """In a fork child: this copy has no worker, server or sampler threads, and its locks
        may be held by threads that no longer exist. Retire it without touching any of them."""
        if not self._closed:
            self._closed_reason = "forked"
        super().retire_after_fork()
        self._qlock = self.pipeline.qlock
        if self.endpoint is not None:
            self.endpoint.detach()  # the listening socket is the parent's
            self.endpoint = None
        self.gpu_sampler = None
        _LIVE.discard(self)

    # ================================================================ caller thread
    def log(self, frame, step=None) -> None:
        """Hand one metrics frame to the exporter. Never blocks, never raises."""
        try:
            if self._closed:
                reason = self._closed_reason
                self.counts.received += 1  # handed to log() all the same: the ledger balances
                self._dropped[reason] += 1
                if reason == "forked" and self._dropped[reason] == 1:
                    log.warning("rl-exporter: run %s is exported by the parent process; frames "
                                "logged in this forked child are counted as "
                                "dropped{reason=\"forked\"} (create an Exporter in the child to "
                                "export from it)", self.run)
                return
            self.counts.received += 1
            if frame.__class__ is dict:
                frame = frame.copy()
            elif hasattr(frame, "items"):
                frame = dict(frame.items())
            else:
                self._dropped["not_a_mapping"] += 1
                self.counts.error("frame", None,
                                  f"log() got a {type(frame).__name__}, not a dict; dropped")
                return
            # Only torch tensors need work on this thread (a snapshot, without a device sync);
            # without torch loaded there can be none, so skip the per-value type scan.
            if _modules.get("torch") is not None and \
                    not self._plain.issuperset(map(type, frame.values())):
                frame = prepare_values(frame, self._plain, self.counts)
            self._enqueue(frame, step, time.time(), 0, time.monotonic())
        except Exception as e:  # the training loop never sees our exceptions
            self.counts.error("log", e)

    def restore(self, frame: dict, step, ts: float) -> None:
        """Re-apply a frame this run exported before a restart (the sidecar keeps each
        source's last frame in its state file): its values, the step and the step's own
        timestamp are back at once. Not counted as processed, not spooled again."""
        if self._closed or not isinstance(frame, dict):
            return
        self.pipeline.restore(frame, step, ts)

    def close(self, timeout: float = 5.0) -> None:
        """Process what is queued (device copies included, within `timeout`), publish the
        last timer window, flush OTLP, stop serving. Idempotent. Frames still queued when
        the time is up are counted as dropped{reason="close_timeout"}."""
        if self._closed:
            return
        try:
            super().close(timeout)
        finally:
            if self.endpoint is not None:
                self.endpoint.stop()

    def _shutdown(self, timeout: float, deadline: float) -> None:
        if self.gpu_sampler is not None:
            self.gpu_sampler.stop()
        super()._shutdown(timeout, deadline)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def url(self) -> str | None:
        return self.endpoint.url if self.endpoint else None

    # ================================================================ observability
    # stats() and flush() are the served run's (core/run.py)
    def health(self) -> dict:
        p = self.pipeline
        return {"status": "ok" if p.alive else "error", "run": self.run,
                "frames_processed": self.counts.processed, "last_step": p.last_step,
                "queue": len(p.queue)}

    def process_now(self, frame: dict, step, ts: float) -> None:
        """Process one frame on the caller's thread, stamped `ts` instead of now, in order
        with nothing queued (replays of recorded frames: backfill, tests). Not for a
        training loop: log() is the call that never blocks."""
        self.pipeline.process_now(frame, step, ts)

    # ================================================================ timers, distributions
    # (exporter/timers.py, exporter/distributions.py: the served run's, made on first use)
    def timer(self, phase: str, tokens: float | None = None, cuda: bool | None = None):
        """Time a phase: `with rlx.timer("gen"):` or `@rlx.timer("gen")`. Totals per
        step (one per log() call) land on rl_phase_duration_seconds{phase} and the
        rl_phase_timing_seconds histogram; `tokens` (or `.tokens = n` inside the block)
        adds rl_phase_time_per_token_seconds. CUDA events when CUDA is in use (no sync)."""
        return self.timers.timer(phase, tokens=tokens, cuda=cuda)

    def observe(self, name: str, values, labels: dict | None = None) -> None:
        """Record per-sample values (tensor, array, list) on a distribution histogram:
        `rlx.observe("response_length", lengths)`. Never raises; see distributions.py."""
        self.distributions.observe(name, values, labels)
