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
# At the end (close(), exit, crash, fatal signal) the endpoint is held until one more scrape
# has read the final rl_run_state, for at most this long (RL_EXPORTER_FINAL_SCRAPE_GRACE or
# final_scrape_grace=; 0 = off), and not at all when nothing ever scraped it. One scrape
# interval (the chart's 15 s) catches the next scrape wherever the end falls in it; where two
# scrapes were seen, the wait also ends two intervals after the last one began (the scraper
# has let go of the target).
DEFAULT_FINAL_SCRAPE_GRACE_S = 15.0
_modules = sys.modules
_LIVE: "weakref.WeakSet[Exporter]" = weakref.WeakSet()


@atexit.register
def _close_live_exporters() -> None:
    """Interpreter exit (and a fatal signal): every live exporter ends (finished, unless it
    crashed), then all are held for their final scrape together, within one grace period."""
    exs = list(_LIVE)
    for ex in exs:
        ex.end(timeout=2.0)
    start = time.monotonic()
    for ex in exs:
        ex.release(start)


# SIGTERM (Kubernetes, Slurm, torchrun stopping a job) and SIGHUP (the terminal went) end
# Python without atexit: the queued frames, the spool's tail, the last OTLP push and the final
# state would go. Where the process has no handler of its own for it, ours records the crash
# (exception SIGTERM / SIGHUP), closes the exporters (bounded, on a separate thread so a lock
# held by the interrupted code cannot block it; the final scrape's grace included), then dies
# by the signal as it would have.
SIGTERM_CLOSE_S = 3.0
FATAL_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))
_signals_installed: set = set()


def _install_signals() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in FATAL_SIGNALS:
        if sig in _signals_installed:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _on_sigterm)
                _signals_installed.add(sig)
        except (ValueError, OSError):  # not the main interpreter, or no signals here
            pass


def _on_sigterm(signum, frame) -> None:
    signal.signal(signum, signal.SIG_DFL)
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    grace = 0.0
    for ex in list(_LIVE):
        try:
            ex.lifecycle.crashed(name, f"terminated by {name} ({signum})", final=True)
            grace = max(grace, ex.final_scrape_grace)
        except Exception:  # nothing may stop the process from dying as it would have
            pass
    t = threading.Thread(target=_close_live_exporters, name="rl-exporter-sigterm", daemon=True)
    t.start()
    t.join(SIGTERM_CLOSE_S + grace)
    os.kill(os.getpid(), signum)


# An uncaught exception ends the run: the hook chains sys.excepthook (the main thread) and
# threading.excepthook (any other), never replacing them: the previous hook runs after ours,
# whatever ours met. The main thread's exception is final (the interpreter exits next; atexit
# then closes and holds for the final scrape); another thread's is a crash until a later step
# says the run goes on. Ours are put back when the last exporter closes, where nobody chained
# after them. A fork child inherits them with no live exporter: they only pass on.
_prev_hooks: dict = {}


def _exc_name(exc_type) -> str:
    mod = getattr(exc_type, "__module__", "") or ""
    name = getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "Exception")
    return name if mod in ("builtins", "__main__", "") else f"{mod}.{name}"


def _crash(exporters, exc_type, exc, final: bool, where: str = "") -> None:
    """Record an uncaught exception as the exporters' crash (`where`: in which thread)."""
    if exc_type is None or (isinstance(exc, SystemExit) and exc.code in (None, 0)):
        return  # sys.exit(0) is a normal end
    name = _exc_name(exc_type)
    try:
        text = str(exc)
    except Exception:  # an exception whose __str__ raises still crashed the run
        text = ""
    message = where + text if text else where.rstrip(": ")
    for ex in exporters:
        try:
            ex.lifecycle.crashed(name, message, final=final)
        except Exception:
            pass


def _crash_live(exc_type, exc, final: bool, where: str = "") -> None:
    _crash(list(_LIVE), exc_type, exc, final, where)


def _excepthook(exc_type, exc, tb) -> None:
    try:
        _crash_live(exc_type, exc, final=True)
    except Exception:
        pass
    (_prev_hooks.get("sys") or sys.__excepthook__)(exc_type, exc, tb)


def _thread_excepthook(args) -> None:
    try:
        thread = args.thread
        if thread is None or not thread.name.startswith("rl-exporter"):  # ours never raise
            name = getattr(thread, "name", "?")
            _crash_live(args.exc_type, args.exc_value, final=False, where=f"in thread {name}: ")
    except Exception:
        pass
    (_prev_hooks.get("threading") or threading.__excepthook__)(args)


def _install_excepthooks() -> None:
    if sys.excepthook is not _excepthook:
        _prev_hooks["sys"] = sys.excepthook
        sys.excepthook = _excepthook
    if threading.excepthook is not _thread_excepthook:
        _prev_hooks["threading"] = threading.excepthook
        threading.excepthook = _thread_excepthook


def _restore_excepthooks() -> None:
    """Put the previous hooks back where ours are still the ones installed (one chained
    after ours stays, and ours under it passes on)."""
    if sys.excepthook is _excepthook and "sys" in _prev_hooks:
        sys.excepthook = _prev_hooks.pop("sys")
    if threading.excepthook is _thread_excepthook and "threading" in _prev_hooks:
        threading.excepthook = _prev_hooks.pop("threading")


def _env_grace() -> float:
    v = os.environ.get("RL_EXPORTER_FINAL_SCRAPE_GRACE", "").strip()
    try:
        return max(0.0, float(v)) if v else DEFAULT_FINAL_SCRAPE_GRACE_S
    except ValueError:
        log.error("RL_EXPORTER_FINAL_SCRAPE_GRACE=%r is not a number of seconds; using %g",
                  v, DEFAULT_FINAL_SCRAPE_GRACE_S)
        return DEFAULT_FINAL_SCRAPE_GRACE_S


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
                 expert_series: bool | None = None, handle_sigterm: bool = True,
                 final_scrape_grace: float | None = None):
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
        # seconds close() holds the endpoint for one more scrape of the final state (0: off)
        self.final_scrape_grace = _env_grace() if final_scrape_grace is None else \
            max(0.0, float(final_scrape_grace))
        self.final_scrape = None  # what the last hold did: {"waited_s", "scraped"}
        self._mark = None         # scrapes begun when the final state was set
        self._released = False

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
            _install_signals()
        _install_excepthooks()
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
        self.final_scrape_grace = 0.0  # no endpoint of its own to hold for a final scrape
        self.final_scrape = None
        self._mark = None
        self._released = False
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
        """The run finished (unless it crashed): process what is queued (device copies
        included, within `timeout`), publish the last timer window, flush OTLP, then hold
        /metrics until one more scrape has read the final state (final_scrape_grace at most,
        not at all when nothing ever scraped it), stop serving. Idempotent. Frames still
        queued when the time is up are counted as dropped{reason="close_timeout"}."""
        if self._closed:
            return
        self.end(timeout)
        self.release(time.monotonic())

    def end(self, timeout: float = 5.0) -> None:
        """close() up to the hold: the final state set, everything queued processed."""
        if self._closed:
            return
        try:
            self.lifecycle.finish(final=True)  # nothing if it crashed: the crash is the end
        except Exception as e:
            self.counts.error("close", e)
        super().close(timeout)
        self._mark = None
        ep = self.endpoint
        if ep is not None:
            self._mark = ep.scrapes_begun  # a scrape begun after this renders the final state

    def release(self, start: float) -> None:
        """close() after end(): the hold for the final scrape (its grace counted from
        `start`, time.monotonic()), then stop serving and let go of the crash hooks."""
        if self._released:
            return
        self._released = True
        ep = self.endpoint
        try:
            if ep is not None and self._mark is not None:
                self._hold(ep, start)
        except Exception as e:
            self.counts.error("close", e)
        finally:
            if ep is not None:
                ep.stop()
            _LIVE.discard(self)
            if not _LIVE:
                _restore_excepthooks()

    def _hold(self, ep, start: float) -> None:
        grace = self.final_scrape_grace
        if grace <= 0 or not ep.scraped.is_set():
            return  # off, or nobody scrapes this endpoint: no wait at all
        deadline = start + grace
        every, age = ep.scrape_interval(), ep.last_scrape_age()
        if every is not None and age is not None:  # the scraper's own pace, where seen
            # two intervals and a second of jitter: a busy scraper (or host) is late, not gone
            deadline = min(deadline, time.monotonic() - age + 2 * every + 1.0)
        t0 = time.monotonic()
        got = ep.wait_for_scrape(self._mark, deadline)
        self.final_scrape = {"waited_s": round(time.monotonic() - t0, 3), "scraped": got}
        if not got:
            log.info("rl-exporter: run %s ended (%s) with no scrape of its final state within "
                     "%.1f s", self.run, self.lifecycle.state, time.monotonic() - t0)

    def _shutdown(self, timeout: float, deadline: float) -> None:
        if self.gpu_sampler is not None:
            self.gpu_sampler.stop()
        super()._shutdown(timeout, deadline)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:  # the block raised: the run crashed (sys.exit(0) aside)
            _crash((self,), exc_type, exc, final=True)
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
