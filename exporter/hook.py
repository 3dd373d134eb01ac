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
from .core.self_metrics import Counts
from .spool import SpoolWriter
from .core.values import PLAIN_TYPES, prepare_values
from .core.pipeline import Pipeline, env_rank, run_info

log = logging.getLogger("rl_exporter")

DEFAULT_FALLBACK_LIMIT = 500      # distinct unknown keys exported under rl_unmapped_value
DEFAULT_QUEUE_SIZE = 1024         # frames
_HELPER_LOCK = threading.RLock()  # helper() factories may create other helpers inside it
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
    global _HELPER_LOCK
    _HELPER_LOCK = threading.RLock()
    for ex in list(_LIVE):
        try:
            ex._retire_after_fork()
        except Exception:  # nothing may raise in a fork child's start-up
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_retire_in_fork_child)


def _fresh_locks(obj) -> None:
    """Replace every lock attribute of obj with a new, unlocked one of the same kind."""
    for name, val in list(vars(obj).items()):
        if isinstance(val, _LOCK):
            setattr(obj, name, threading.Lock())
        elif isinstance(val, _RLOCK):
            setattr(obj, name, threading.RLock())


_LOCK, _RLOCK = type(threading.Lock()), type(threading.RLock())


def default_run() -> str:
    return os.environ.get("RL_EXPORTER_RUN") or time.strftime("run-%Y%m%d-%H%M%S")


_PORT_UNSET = object()  # port not passed: RL_EXPORTER_PORT, else DEFAULT_PORT


def _env_port() -> int:
    """RL_EXPORTER_PORT (like RL_EXPORTER_RUN) where the caller passed no port."""
    v = os.environ.get("RL_EXPORTER_PORT", "").strip()
    return int(v) if v.isdigit() else DEFAULT_PORT


class Exporter:
    """Export an RL run's per-step metrics to Prometheus (and OTLP)."""

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
        self.run = run or default_run()
        self.catalog = catalog
        # Per-expert MoE series (label `expert`: layers x experts of them) are opt-in: they
        # alone can exceed a rank's whole series budget (`rl-exporter catalog --budget`).
        if expert_series is None:
            expert_series = os.environ.get("RL_EXPORTER_EXPERT_SERIES", "").lower() in ("1", "true", "yes")
        self.expert_series = expert_series
        # the one loss registry: the worker, store, timers, distributions and samplers count here
        self.counts = Counts()
        framework = FRAMEWORK_ALIASES.get(framework, framework)  # "ms-swift" -> "swift"
        if framework not in ("auto",) and framework not in catalog.vocabularies:
            log.error("unknown framework %r; using 'auto' (known: %s)", framework,
                      ", ".join(catalog.vocabularies))
            framework = "auto"
        self.framework = framework
        self.rank = env_rank() if rank is None else rank
        self.fallback_limit = fallback_limit
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
        spool_writer = SpoolWriter.open(spool, self.run, framework, self.counts) if spool else None
        self.pipeline = Pipeline(
            self.run, catalog=catalog, framework=framework, counts=self.counts,
            info=run_info(framework, algorithm, model, host, self.rank),
            queue_size=queue_size, fallback_limit=fallback_limit, series_limit=series_limit,
            poll_interval=poll_interval, spool=spool_writer, expert_series=expert_series)
        self.store = self.pipeline.store
        # hot-path state read by log(): plain attributes
        self._dropped = self.counts.dropped
        self._plain = set(PLAIN_TYPES)
        self._enqueue = self.pipeline.enqueue
        self._queue = self.pipeline.queue
        self._qlock = self.pipeline.qlock
        self._worker = self.pipeline.worker
        self._closed = False
        self._helpers: dict = {}   # timers, distributions, device resolver (helper())
        self._closed_reason = "closed"  # or "forked": why log() drops frames once closed

        self.collector = StoreCollector(self.store, extra=self.self_metrics)
        self.registry.register(self.collector)
        self.telemetry = Telemetry({"service.name": "rl-exporter", "rl.run": self.run},
                                   catalog=catalog, otlp_endpoint=otlp_endpoint,
                                   otlp_interval_s=otlp_interval, on_error=self.counts.error)
        self.telemetry.mirror(self.store, self.self_metrics)
        from .spans import Spans
        self.spans = Spans.start(self, otlp_endpoint)  # opt-in traces (RL_EXPORTER_TRACES=1)
        self.goodput = self.pipeline.goodput           # rl_goodput_seconds_total
        self.goodput.spans = self.spans
        from .stacks import HangWatch
        self.hang_watch = HangWatch(self)  # stacks captured once per hang (exporter/stacks.py)
        self.pipeline.start()
        _LIVE.add(self)  # closed at interpreter exit: the last frames and the last OTLP push
        # served last: a scrape that arrives during start-up finds the worker in place
        self.endpoint = None
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
        ep = Endpoint(self.registry, addr, port, health=self.health)
        from .status import add_routes
        add_routes(ep, self)  # GET /status, GET /debug/stacks
        try:
            ep.start()
            self.endpoint = ep
            log.info("rl-exporter serving %s (run %s)", ep.url, self.run)
        except (OSError, OverflowError) as e:
            self.counts.error("bind", e, f"cannot serve /metrics on {addr}:{port} ({e}); "
                              "metrics are still collected (pass port=0 for a free port)")

    def _retire_after_fork(self) -> None:
        """In a fork child: this copy has no worker, server or sampler threads, and its locks
        may be held by threads that no longer exist. Retire it without touching any of them."""
        self.pipeline.retire_after_fork()
        self._qlock = self.pipeline.qlock
        _fresh_locks(self.store)
        for helper in self._helpers.values():
            _fresh_locks(helper)
        if not self._closed:
            self._closed = True
            self._closed_reason = "forked"
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
        self._closed = True
        deadline = time.monotonic() + timeout
        try:
            timers = self._helpers.get("_rlx_timers")
            if timers is not None:
                timers.end_step()  # the window after the last log() is published too
            if getattr(self, "gpu_sampler", None) is not None:
                self.gpu_sampler.stop()
            self.pipeline.close(timeout, deadline)
            resolver = self._helpers.get("_rlx_device_resolver")
            if resolver is not None:
                resolver.drain(max(0.0, deadline - time.monotonic()))
            if self.spans is not None:  # open spans end now; queued ones are pushed
                self.spans.close(max(0.1, (deadline - time.monotonic()) / 2))
            # the last OTLP push, then stop: both within what is left of the timeout
            self.telemetry.close(deadline)
        except Exception as e:
            self.counts.error("close", e)
        finally:
            if self.endpoint is not None:
                self.endpoint.stop()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every frame logged so far is processed (tests, shutdown paths)."""
        return self.pipeline.flush(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def url(self) -> str | None:
        return self.endpoint.url if self.endpoint else None

    @property
    def closed(self) -> bool:
        return self._closed

    # ================================================================ observability
    def stats(self) -> dict:
        """A snapshot of the exporter's own counters (what rl_exporter_* series show):
        frames received/processed/dropped by reason, values rejected by reason, non-finite
        values by metric, errors by kind, unknown/ignored keys, queue length, last step."""
        return self.pipeline.stats()

    def self_metrics(self):
        """The rl_exporter_* series as (store, metric, labels, value): what a collector
        rendering several stores adds beside them."""
        return self.pipeline.self_metrics()

    def health(self) -> dict:
        p = self.pipeline
        return {"status": "ok" if p.alive else "error", "run": self.run,
                "frames_processed": self.counts.processed, "last_step": p.last_step,
                "queue": len(p.queue)}

    # ----------------------------------------------- the small internal interface
    # Timers, distributions and samplers reach the exporter through these, not its attributes.
    @property
    def frames_logged(self) -> int:
        """log() calls accepted so far: a timer window is one of these."""
        return self.counts.received

    def helper(self, name: str, factory):
        """The helper object `name` (timers, distributions, resolver), created by
        factory(self) on first use, so an exporter without timers or observe() pays nothing."""
        obj = self._helpers.get(name)
        if obj is None:
            with _HELPER_LOCK:
                obj = self._helpers.get(name)
                if obj is None:
                    obj = self._helpers[name] = factory(self)
                    setattr(self, name, obj)  # readable as an attribute too (tests)
        return obj

    def _error(self, kind: str, exc, message: str | None = None) -> None:
        self.counts.error(kind, exc, message)

    def process_now(self, frame: dict, step, ts: float) -> None:
        """Process one frame on the caller's thread, stamped `ts` instead of now, in order
        with nothing queued (replays of recorded frames: backfill, tests). Not for a
        training loop: log() is the call that never blocks."""
        self.pipeline.process_now(frame, step, ts)

    # ================================================================ timers, distributions
    # (exporter/timers.py, exporter/distributions.py; created on first use)
    def timer(self, phase: str, tokens: float | None = None, cuda: bool | None = None):
        """Time a phase: `with rlx.timer("gen"):` or `@rlx.timer("gen")`. Totals per
        step (one per log() call) land on rl_phase_duration_seconds{phase} and the
        rl_phase_timing_seconds histogram; `tokens` (or `.tokens = n` inside the block)
        adds rl_phase_time_per_token_seconds. CUDA events when CUDA is in use (no sync)."""
        from .timers import timers_of
        return timers_of(self).timer(phase, tokens=tokens, cuda=cuda)

    def observe(self, name: str, values, labels: dict | None = None) -> None:
        """Record per-sample values (tensor, array, list) on a distribution histogram:
        `rlx.observe("response_length", lengths)`. Never raises; see distributions.py."""
        from .distributions import distributions_of
        distributions_of(self).observe(name, values, labels)
