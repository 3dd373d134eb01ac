"""The in-process hook.

    from exporter import Exporter
    with Exporter(run="grpo-7b-a", framework="verl") as rlx:
        for step in range(n):
            metrics = train_step()
            rlx.log(metrics, step=step)

`log()` copies the frame and appends it to a bounded queue (the oldest frame is
dropped and counted when full); a worker thread resolves keys through the
catalog (cached per key), coerces values and writes the store. Nothing here
raises into the training loop: failures are counted and logged once per kind.
"""
from __future__ import annotations

import atexit
import collections
import decimal
import logging
import math
import numbers
import os
import socket
import sys
import threading
import time
import weakref

from prometheus_client import CollectorRegistry

from . import __version__
from .catalog import CATALOG, COUNTER, STATE, Catalog
from .collector import StoreCollector
from .endpoint import DEFAULT_ADDR, DEFAULT_PORT, Endpoint
from .otel import Telemetry
from .store import Store
from .values import PLAIN_TYPES, Pending, prepare_values

log = logging.getLogger("rl_exporter")

DEFAULT_FALLBACK_LIMIT = 500      # distinct unknown keys exported under rl_unmapped_value
DEFAULT_QUEUE_SIZE = 1024         # frames
_KEY_CACHE_LIMIT = 100_000        # resolved keys kept; past it, unknown keys are resolved each time
_INF = math.inf
_modules = sys.modules
_LIVE: "weakref.WeakSet[Exporter]" = weakref.WeakSet()


@atexit.register
def _close_live_exporters() -> None:
    for ex in list(_LIVE):
        ex.close(timeout=2.0)


class _Slot:
    """What to do with a key other than 'store a float at index i'."""
    __slots__ = ()


class _Scaled(_Slot):
    __slots__ = ("sid", "scale")

    def __init__(self, sid, scale):
        self.sid, self.scale = sid, scale


class _Counter(_Slot):
    __slots__ = ("sid",)

    def __init__(self, sid):
        self.sid = sid


class _State(_Slot):
    __slots__ = ("metric", "labels")

    def __init__(self, metric, labels):
        self.metric, self.labels = metric, labels


class _Step(_Slot):
    __slots__ = ()


class _Fallback(_Slot):
    __slots__ = ("sid",)

    def __init__(self, sid):
        self.sid = sid


class _New(_Slot):
    """Resolved, but the series is created only once a valid value arrives, so a
    rejected value never leaves a NaN series behind."""
    __slots__ = ("resolution",)

    def __init__(self, resolution):
        self.resolution = resolution


class _Drop(_Slot):
    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason  # 'ignored' | 'fallback_cap' | 'series_limit'


_STEP = _Step()


def _default_run() -> str:
    return os.environ.get("RL_EXPORTER_RUN") or time.strftime("run-%Y%m%d-%H%M%S")


def _env_rank() -> int | None:
    for var in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


class Exporter:
    """Export an RL run's per-step metrics to Prometheus (and OTLP)."""

    def __init__(self, run: str | None = None, framework: str = "auto", *,
                 algorithm: str | None = None, model: str | None = None,
                 rank: int | None = None, host: str | None = None,
                 port: int | None = DEFAULT_PORT, addr: str = DEFAULT_ADDR, serve: bool = True,
                 otlp_endpoint: str | None = None, otlp_interval: float = 15.0,
                 queue_size: int = DEFAULT_QUEUE_SIZE,
                 fallback_limit: int = DEFAULT_FALLBACK_LIMIT, series_limit: int = 2000,
                 registry: CollectorRegistry | None = None, catalog: Catalog = CATALOG,
                 scope_labels: bool = False, poll_interval: float = 0.02,
                 gpu: bool | str = "auto", gpu_interval: float = 5.0, spool: str | None = None,
                 expert_series: bool | None = None):
        self.run = run or _default_run()
        # Per-expert MoE series (label `expert`: layers x experts of them) are opt-in: they
        # alone can exceed a rank's whole series budget (`rl-exporter catalog --budget`).
        if expert_series is None:
            expert_series = os.environ.get("RL_EXPORTER_EXPERT_SERIES", "").lower() in ("1", "true", "yes")
        self.expert_series = expert_series
        self.catalog = catalog
        if framework not in ("auto",) and framework not in catalog.vocabularies:
            log.error("unknown framework %r; using 'auto' (known: %s)", framework,
                      ", ".join(catalog.vocabularies))
            framework = "auto"
        self.framework = framework
        self.rank = _env_rank() if rank is None else rank
        self.fallback_limit = fallback_limit
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
        self.store = Store(self.run, catalog, series_limit=series_limit)
        # hot-path counters: plain ints, read by the collector
        self._received = 0
        self._processed = 0
        self._dropped: collections.Counter = collections.Counter()
        self._rejected: collections.Counter = collections.Counter()
        self._unknown = 0
        self._ignored = 0
        self._fallback_dropped = 0
        self._errors: collections.Counter = collections.Counter()
        self._logged_kinds: set[str] = set()
        self._fallback_keys = 0
        self._last_step: float | None = None
        self._last_frame_ts = math.nan
        self._slots: dict = {}
        self._plain = set(PLAIN_TYPES)

        self._queue: collections.deque = collections.deque()
        self._queue_size = max(1, int(queue_size))
        self._qlock = threading.Lock()
        self._busy = False
        self._closed = False
        self._stop = threading.Event()
        self._poll = poll_interval

        self.store.set("rl_run_info", 1.0, {
            "framework": framework, "algorithm": algorithm or "", "model": model or "",
            "host": host or socket.gethostname(), "rank": "" if self.rank is None else str(self.rank),
            "version": __version__})
        self.collector = StoreCollector(self.store, extra=self.self_metrics)
        self.registry.register(self.collector)
        self.telemetry = Telemetry(self.registry, {"service.name": "rl-exporter", "rl.run": self.run},
                                   catalog=catalog, otlp_endpoint=otlp_endpoint,
                                   otlp_interval_s=otlp_interval, scope_labels=scope_labels)
        self.telemetry.mirror(self.store, self.self_metrics)
        self._frame_hist = self.telemetry.histogram("rl_exporter_frame_processing_seconds")
        self._run_attrs = {"run": self.run}

        self.endpoint = None
        if serve and port is not None:
            ep = Endpoint(self.registry, addr, port, health=self.health)
            try:
                ep.start()
                self.endpoint = ep
                log.info("rl-exporter serving %s (run %s)", ep.url, self.run)
            except OSError as e:
                self._error("bind", e, f"cannot serve /metrics on {addr}:{port} ({e}); "
                            "metrics are still collected (pass port=0 for a free port)")
        # Optional replay log in our spool format (exporter/sources/spool.py), written by the
        # worker: `rl-exporter serve --source spool:PATH` or `rl-exporter parse` read it back.
        self._spool = None
        if spool:
            try:
                self._spool = open(spool, "a", encoding="utf-8", buffering=1)
            except OSError as e:
                self._error("spool", e, f"cannot write the spool {spool} ({e}); not spooling")
        self._worker = threading.Thread(target=self._work, name="rl-exporter-worker", daemon=True)
        self._worker.start()
        _LIVE.add(self)  # closed at interpreter exit: the last frames and the last OTLP push
        # NVML sampler (gpu.py): on when NVML is present, else one log line says why.
        from .gpu import start_sampler
        self.gpu_sampler = start_sampler(self, gpu, gpu_interval)

    # ================================================================ caller thread
    def log(self, frame, step=None) -> None:
        """Hand one metrics frame to the exporter. Never blocks, never raises."""
        try:
            if self._closed:
                self._dropped["closed"] += 1
                return
            self._received += 1
            if frame.__class__ is dict:
                frame = frame.copy()
            elif hasattr(frame, "items"):
                frame = dict(frame.items())
            else:
                self._dropped["not_a_mapping"] += 1
                self._error("frame", None, f"log() got a {type(frame).__name__}, not a dict; dropped")
                return
            # Only torch tensors need work on this thread (a snapshot, without a CUDA sync);
            # without torch loaded there can be none, so skip the per-value type scan.
            if _modules.get("torch") is not None and \
                    not self._plain.issuperset(map(type, frame.values())):
                frame = prepare_values(frame, self._plain)
            item = (frame, step, time.time())
            with self._qlock:
                if len(self._queue) >= self._queue_size:
                    self._queue.popleft()
                    self._dropped["queue_full"] += 1
                self._queue.append(item)
        except Exception as e:  # the training loop never sees our exceptions
            self._error("log", e)

    def restore(self, frame: dict, step, ts: float) -> None:
        """Re-apply a frame this run exported before a restart (the sidecar keeps each
        source's last frame in its state file): its values, the step and the step's own
        timestamp are back at once, so dashboards have no hole and a run that hung before
        the restart still looks stalled. Not counted as processed, not spooled again."""
        if self._closed or not isinstance(frame, dict):
            return
        with self._qlock:
            self._queue.append((dict(frame), step, float(ts), True))

    def close(self, timeout: float = 5.0) -> None:
        """Process what is queued, flush OTLP, stop serving. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._stop.set()
            if getattr(self, "gpu_sampler", None) is not None:
                self.gpu_sampler.stop()
            self._worker.join(timeout)
            if self._spool is not None:
                self._spool.close()
            self.telemetry.force_flush()
            self.telemetry.shutdown()
        except Exception as e:
            self._error("close", e)
        finally:
            if self.endpoint is not None:
                self.endpoint.stop()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every frame logged so far is processed (tests, shutdown paths)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._queue and not self._busy:
                return True
            time.sleep(0.001)
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def url(self) -> str | None:
        return self.endpoint.url if self.endpoint else None

    # ================================================================ worker thread
    def _work(self) -> None:
        while True:
            with self._qlock:
                batch = list(self._queue)
                self._queue.clear()
                self._busy = bool(batch)
            if batch:
                for item in batch:
                    t0 = time.perf_counter()
                    try:
                        self._process(*item)
                    except Exception as e:
                        self._error("process", e)
                    self._frame_hist.record(time.perf_counter() - t0, self._run_attrs)
                self._busy = False
                continue
            self._busy = False
            if self._stop.wait(self._poll):
                with self._qlock:
                    if self._queue:
                        continue  # drain what arrived before close()
                return

    def _process(self, frame: dict, step, ts: float, restored: bool = False) -> None:
        slots = self._slots
        values = self.store.values
        frame_step = None
        for k, v in frame.items():
            slot = slots.get(k)
            if slot is None:
                slot = self._slot_for(k)
            if slot.__class__ is int:
                tv = v.__class__
                if tv is not float:
                    if tv is int or tv is bool:
                        try:
                            v = float(v)
                        except OverflowError:
                            self._rejected["overflow"] += 1
                            continue
                    else:
                        v = self._coerce(k, v)
                        if v is None:
                            continue
                if v - v != 0.0:  # NaN or +/-Inf: exported as they are, and counted
                    self.store.nonfinite[self.store.metrics[slot].name] += 1
                values[slot] = v
            else:
                st = self._special(slot, k, v)
                if st is not None:
                    frame_step = st
        if step is None:
            step = frame_step
        self._advance(step, ts)
        if restored:  # exported and counted before a restart: values back, counts unchanged
            return
        if self._spool is not None:
            self._write_spool(frame, step, ts)
        self._processed += 1
        self._last_frame_ts = time.time()

    def _write_spool(self, frame: dict, step, ts: float) -> None:
        from .sources.spool import encode
        data = {}
        for k, v in frame.items():
            if v is None or v.__class__ in (float, int, str):
                data[str(k)] = v
            else:
                num = self._number_or_reject(k, v, count=False)  # numpy, bool, resolved tensors
                if num is not None:
                    data[str(k)] = num
        try:
            self._spool.write(encode(step, data, ts=round(ts, 3), run=self.run,
                                     framework=self.framework) + "\n")
        except (OSError, ValueError) as e:
            self._error("spool", e)

    def _advance(self, step, ts: float) -> None:
        if step is None:
            step = 0 if self._last_step is None else self._last_step + 1  # count frames
        else:
            step = self._number_or_reject(None, step, count=False)
            if step is None or step != step:
                return
        if step != self._last_step:
            self._last_step = step
            self.store.set("rl_training_step", step)
            self.store.set("rl_training_step_timestamp_seconds", ts)

    def _special(self, slot, key, v):
        cls = slot.__class__
        if cls is _New:
            if v is None:
                return None
            num = self._number_or_reject(key, v)
            if num is None:
                return None
            slot = self._materialise(key, slot.resolution)
            if slot.__class__ is int:
                if num - num != 0.0:
                    self.store.nonfinite[self.store.metrics[slot].name] += 1
                self.store.values[slot] = num
                return None
            return self._special(slot, key, num)
        if cls is _Scaled:
            v = self._number_or_reject(key, v)
            if v is not None:
                v *= slot.scale
                if v - v != 0.0:
                    self.store.nonfinite[self.store.metrics[slot.sid].name] += 1
                self.store.values[slot.sid] = v
        elif cls is _Step:
            return self._number_or_reject(key, v)
        elif cls is _Counter:
            v = self._number_or_reject(key, v)
            if v is not None:
                if v < 0 or v != v:
                    self._rejected["negative_counter" if v < 0 else "nonfinite_counter"] += 1
                else:
                    self.store.values[slot.sid] = v
        elif cls is _State:
            if v is None:
                return None
            if isinstance(v, str):
                self.store.set_state(slot.metric, v, slot.labels)
            else:
                self._rejected["state_not_string"] += 1
        elif cls is _Fallback:
            self._unknown += 1
            v = self._number_or_reject(key, v)
            if v is not None:
                if v - v != 0.0:
                    self.store.nonfinite["rl_unmapped_value"] += 1
                self.store.values[slot.sid] = v
        elif cls is _Drop:
            if slot.reason == "ignored":
                self._ignored += 1
            elif slot.reason == "fallback_cap":
                self._unknown += 1
                self._fallback_dropped += 1
            else:
                self._rejected[slot.reason] += 1
        return None

    def _slot_for(self, key):
        """Resolve a key once and cache what to do with it."""
        if not isinstance(key, str):
            key = str(key)
        r = self.catalog.resolve(key, self.framework)
        if r.step:
            slot = _STEP
        elif r.ignored or (not self.expert_series and r.metric is not None
                                and "expert" in r.metric.labels):
            slot = _Drop("ignored")
        elif r.fallback:
            if self._fallback_keys >= self.fallback_limit:
                slot = _Drop("fallback_cap")
                if self._fallback_dropped == 0:
                    log.warning("rl-exporter: more than %d unknown keys; further unknown keys are "
                                "counted, not exported (rl_exporter_fallback_keys_dropped_total)",
                                self.fallback_limit)
            else:
                self._fallback_keys += 1  # reserved now so the cap holds even before values
                slot = _New(r)
        elif r.metric.kind == STATE:
            slot = _State(r.metric, r.labels)
        else:
            slot = _New(r)
        if len(self._slots) < _KEY_CACHE_LIMIT:
            self._slots[key] = slot
        return slot

    def _materialise(self, key, r):
        """First valid value of a resolved key: create its series and cache the fast slot."""
        sid = self.store.series_id(r.metric, r.labels)
        if sid is None:
            slot = _Drop("series_limit")
        elif r.fallback:
            slot = _Fallback(sid)
        elif r.metric.kind == COUNTER:
            slot = _Counter(sid)
        elif r.scale != 1.0:
            slot = _Scaled(sid, r.scale)
        else:
            slot = sid
        if key in self._slots:
            self._slots[key] = slot
        return slot

    def _number_or_reject(self, key, v, count: bool = True):
        """A float, or None (rejections counted unless count=False)."""
        tv = v.__class__
        if tv is float:
            return v
        if tv is int or tv is bool:
            try:
                return float(v)
            except OverflowError:
                if count:
                    self._rejected["overflow"] += 1
                return None
        return self._coerce(key, v, count)

    def _coerce(self, key, v, count: bool = True):
        """Anything but float/int/bool: numbers, numpy, tensors; else a counted rejection."""
        if v is None:
            return None  # absent, by contract
        try:
            if isinstance(v, Pending):
                v = v.result()
                if v is None:
                    if count:
                        self._rejected["device_timeout"] += 1
                    return None
                return float(v)
            if isinstance(v, str):
                reason = "string"
            elif isinstance(v, (numbers.Real, decimal.Decimal)):
                return float(v)
            elif getattr(v, "shape", None) == () and hasattr(v, "item"):
                return float(v.item())  # numpy 0-d arrays
            else:
                reason = "type"
        except (OverflowError, ValueError, TypeError):
            reason = "overflow"
        if count:
            self._rejected[reason] += 1
            kind = f"reject:{reason}"
            if kind not in self._logged_kinds:
                self._logged_kinds.add(kind)
                log.warning("rl-exporter: key %r has a %s value (%s); not exported (counted in "
                            "rl_exporter_values_rejected_total{reason=%r})", key, type(v).__name__,
                            reason, reason)
        return None

    # ================================================================ observability
    def _error(self, kind: str, exc, message: str | None = None) -> None:
        self._errors[kind] += 1
        if kind not in self._logged_kinds:
            self._logged_kinds.add(kind)
            log.error("rl-exporter: %s", message or f"{kind} failed: {exc!r}",
                      exc_info=exc if (exc is not None and message is None) else None)

    def self_metrics(self):
        """(store, metric, labels, value) of the exporter's own series (frames, drops,
        rejections, errors, queue): rendered by the collector and mirrored to OTel."""
        s = self.store
        yield s, "rl_exporter_frames_received_total", {}, self._received
        yield s, "rl_exporter_frames_processed_total", {}, self._processed
        for reason in ("queue_full", "closed", "not_a_mapping"):
            yield s, "rl_exporter_frames_dropped_total", {"reason": reason}, self._dropped[reason]
        rejected = collections.Counter(self._rejected)
        rejected.update(s.rejected)
        for reason in sorted(set(rejected) | {"string", "type"}):
            yield s, "rl_exporter_values_rejected_total", {"reason": reason}, rejected[reason]
        for metric, n in sorted(s.nonfinite.items()):
            yield s, "rl_exporter_nonfinite_values_total", {"metric": metric}, n
        yield s, "rl_exporter_unknown_keys_total", {}, self._unknown
        yield s, "rl_exporter_ignored_keys_total", {}, self._ignored
        yield s, "rl_exporter_fallback_keys_dropped_total", {}, self._fallback_dropped
        for kind, n in sorted(self._errors.items()):
            yield s, "rl_exporter_errors_total", {"kind": kind}, n
        yield s, "rl_exporter_queue_frames", {}, len(self._queue)
        yield s, "rl_exporter_last_frame_timestamp_seconds", {}, self._last_frame_ts

    def health(self) -> dict:
        return {"status": "ok" if self._worker.is_alive() else "error", "run": self.run,
                "frames_processed": self._processed, "last_step": self._last_step,
                "queue": len(self._queue)}

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
