"""NVML sampler: per-GPU counters for the run's own GPUs, on a background thread.

    Exporter(run="r", gpu="auto", gpu_interval=5.0)   # default: on when NVML is present

`gpu` is "auto" (on when NVML initialises; one INFO line when there is no driver),
True/"on" (the same, but a WARNING when it cannot start), "local" (only the
visible GPU number LOCAL_RANK: one exporter per rank without 8x duplicate GPU
series), or False/"off".

nvidia-ml-py (`pynvml`) is imported only when the sampler starts. Every NVML
function in it is a ctypes `CDLL` call, which releases the GIL for the duration
of the C call, so the training thread runs while the sampler waits on the driver;
between calls the sampler holds the GIL only for its own few microseconds of
Python (benchmarks/bench_gpu.py measures both).

Failures are isolated: each query on each GPU is tried on its own and counted in
rl_exporter_gpu_query_errors_total{gpu,query,error}. A query that answers
NotSupported is counted once and not asked again on that GPU. A GPU that answers
GpuIsLost turns hw_gpu_status{state="failed"} to 1 and its gauges to NaN; it is
probed once per pass so a recovery shows. Other GPUs are unaffected.

Which GPUs: those CUDA would give this process (exporter/gpu_devices.py; see the
CUDA_DEVICE_ORDER note in _visible).
"""
from __future__ import annotations

import importlib
import logging
import math
import os
import threading
import time

from .catalog import sanitize_label_value
from .gpu_devices import (CLOCK_EVENT_REASONS, ERROR_NAMES, FIELD_IDS, FIELDS, GPU_IS_LOST, NOT_SUPPORTED,
                          SETTING_REASONS, VALUE_ATTR, Device, NVMLUnavailable, error_name, nvml_text,
                          parse_visible)

log = logging.getLogger("rl_exporter")

# Read once at start; they stay when a GPU is lost (its per-sample gauges turn NaN).
_STATIC = frozenset({"hw_gpu_clock_max_hertz", "hw_gpu_temperature_limit_celsius"})

_logged: set[str] = set()


def _log_once(key: str, level: int, msg: str, *args) -> None:
    if key not in _logged:
        _logged.add(key)
        log.log(level, msg, *args)


class GPUSampler:
    """Samples NVML every `interval` seconds into an exporter's store."""

    def __init__(self, store, *, interval: float = 5.0, rank: int | None = None,
                 mode: str = "all", nvml=None, pids: set[int] | None = None,
                 env: dict | None = None):
        self.store = store
        self.interval = max(0.05, float(interval))
        self.mode = mode
        self.rank = rank
        self.pids = pids if pids is not None else {os.getpid()}
        self._env = os.environ if env is None else env
        self._nvml_arg = nvml
        self.nv = None
        self.devices: list[Device] = []
        self.samples = 0
        self.last_duration = math.nan
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._metrics = store.catalog.metrics
        self._started = False
        # Anything with current() -> phase name and started(phase) -> occurrence key (phases.py
        # LivePhases); set by start_store_sampler. None: no per-phase attribution.
        self.phases = None

    # ------------------------------------------------------------ lifecycle
    def start(self, thread: bool = True) -> "GPUSampler":
        """Initialise NVML and discover GPUs (raises NVMLUnavailable), then sample on a thread."""
        nv = self._nvml_arg
        if nv is None:
            try:
                nv = importlib.import_module("pynvml")
            except ImportError as e:
                raise NVMLUnavailable("not_installed", f"nvidia-ml-py is not installed ({e}); "
                                      "pip install 'rl-exporter[gpu]'") from None
        try:
            nv.nvmlInit()
        except nv.NVMLError as e:
            raise NVMLUnavailable(error_name(e), f"NVML did not initialise: {e}") from None
        self.nv = nv
        self._started = True
        try:
            self.devices = self._discover()
        except Exception:
            self._shutdown_nvml()
            raise
        self.store.set("rl_exporter_gpu_devices", len(self.devices))
        self.store.set("rl_exporter_gpu_samples_total", 0)
        if thread:
            self._thread = threading.Thread(target=self._run, name="rl-exporter-gpu", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._shutdown_nvml()

    def _shutdown_nvml(self) -> None:
        if self._started:
            self._started = False
            try:
                self.nv.nvmlShutdown()
            except Exception:
                pass

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                self.sample()
            except Exception as e:  # a bug here must not kill the thread silently
                self._count("all", "sample", type(e).__name__.lower())
                _log_once("gpu-sample-bug", logging.ERROR, "rl-exporter: GPU sampling failed: %r", e)
            self._stop.wait(max(0.0, self.interval - (time.perf_counter() - t0)))

    @property
    def models(self) -> list[str]:
        return [d.name for d in self.devices]

    # ------------------------------------------------------------ discovery
    def _discover(self) -> list[Device]:
        nv = self.nv
        count = nv.nvmlDeviceGetCount()
        all_devs = []
        for i in range(count):
            try:
                h = nv.nvmlDeviceGetHandleByIndex(i)
                all_devs.append(Device(i, h, nvml_text(nv.nvmlDeviceGetUUID(h)),
                                       nvml_text(nv.nvmlDeviceGetName(h))))
            except nv.NVMLError as e:
                # Cannot identify it, so cannot label or select it: counted, logged, skipped.
                self._count(str(i), "discover", error_name(e))
                _log_once(f"gpu-discover-{i}", logging.WARNING,
                          "rl-exporter: NVML GPU %d cannot be identified (%s); not sampled", i, e)
                all_devs.append(None)
        env = self._env.get("CUDA_VISIBLE_DEVICES")
        known = [d for d in all_devs if d is not None]
        if env is not None:
            # Index entries must address NVML's numbering even when a device failed above.
            padded = [d if d is not None else Device(i, None, "", "") for i, d in enumerate(all_devs)]
            visible, notes = parse_visible(env, padded)
            visible = [d for d in visible if d.handle is not None]
            for n in notes:
                _log_once("gpu-cvd-" + n, logging.WARNING, "rl-exporter: %s", n)
            if (any(p.strip().isdigit() for p in env.split(","))
                    and self._env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
                    and len({d.name for d in known}) > 1):
                _log_once("gpu-order", logging.WARNING,
                          "rl-exporter: CUDA_VISIBLE_DEVICES uses indices on a host with mixed GPU "
                          "models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA may number GPUs "
                          "differently from NVML; set CUDA_DEVICE_ORDER=PCI_BUS_ID or use UUIDs")
        else:
            visible = known
        if self.mode == "local":
            lr = self._env.get("LOCAL_RANK", "")
            if lr.isdigit() and int(lr) < len(visible):
                visible = [visible[int(lr)]]
            else:
                _log_once("gpu-local", logging.WARNING,
                          "rl-exporter: gpu='local' but LOCAL_RANK=%r does not name a visible GPU; "
                          "sampling all %d visible GPUs", lr, len(visible))
        for d in visible:
            self._prepare(d)
        return visible

    def _prepare(self, d: Device) -> None:
        """Labels, series ids, and the static reads (limits, max clocks, supported reasons)."""
        nv = self.nv
        labels = [("gpu", str(d.index)), ("uuid", d.uuid), ("gpu_model", d.name)]
        if self.rank is not None:
            labels.append(("rank", str(self.rank)))
        d.labels = tuple(labels)
        d.state_labels = tuple(sorted(d.labels))
        self.store.set_state("hw_gpu_status", "ok", d.state_labels)
        for spec in FIELDS:
            fid = getattr(nv, spec[2], FIELD_IDS[spec[2]])
            d.fields.append((fid if spec[3] is None else (fid, spec[3]),) + spec)

        def static(query, fn):
            try:
                fn()
            except (nv.NVMLError, AttributeError) as e:
                self._count(str(d.index), query, error_name(e))

        def max_clocks():
            for clock, const in (("sm", "NVML_CLOCK_SM"), ("memory", "NVML_CLOCK_MEM")):
                mhz = nv.nvmlDeviceGetMaxClockInfo(d.handle, getattr(nv, const))
                self._set(d, "hw_gpu_clock_max_hertz", (("clock", clock),), mhz * 1e6)

        def thresholds():
            for limit, const in (("slowdown", "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN"),
                                 ("shutdown", "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN")):
                c = nv.nvmlDeviceGetTemperatureThreshold(d.handle, getattr(nv, const))
                self._set(d, "hw_gpu_temperature_limit_celsius", (("limit", limit),), c)

        def reasons():
            fn = getattr(nv, "nvmlDeviceGetSupportedClocksEventReasons", None) or \
                nv.nvmlDeviceGetSupportedClocksThrottleReasons
            mask = fn(d.handle)
            settings = self._env.get("RL_EXPORTER_GPU_SETTING_REASONS", "").lower() in ("1", "true", "yes")
            for name, const, bit in CLOCK_EVENT_REASONS:
                bit = getattr(nv, const, bit)
                if mask & bit and (settings or name not in SETTING_REASONS):
                    d.reasons.append((bit, self._sid(d, "hw_gpu_clock_event_active",
                                                     (("reason", name),))))

        static("max_clocks", max_clocks)
        static("temperature_thresholds", thresholds)
        static("clock_events", reasons)

    # ------------------------------------------------------------ writes
    def _sid(self, d: Device, metric: str, extra: tuple = ()) -> int | None:
        key = (metric, extra)
        sid = d.sids.get(key)
        if sid is None and key not in d.sids:
            m = self._metrics[metric]
            sid = self.store.series_id(m, tuple(sorted(d.labels + extra)))
            d.sids[key] = sid
            if sid is not None and m.kind == "gauge" and metric not in _STATIC:
                d.gauge_sids.add(sid)
        return sid

    def _set(self, d: Device, metric: str, extra: tuple, value: float) -> None:
        sid = d.sids.get((metric, extra))
        if sid is None:
            sid = self._sid(d, metric, extra)
            if sid is None:
                return
        self.store.values[sid] = float(value)

    def _count(self, gpu: str, query: str, error: str) -> None:
        self.store.inc("rl_exporter_gpu_query_errors_total",
                       {"gpu": gpu, "query": query, "error": error})

    # ------------------------------------------------------------ sampling
    def sample(self) -> None:
        """One pass over every GPU (the thread calls this; tests and benchmarks may too)."""
        t0 = time.perf_counter()
        phase = None
        if self.phases is not None:
            try:
                phase = self.phases.current()
            except Exception as e:
                self._count("all", "phase", type(e).__name__.lower())
        for d in self.devices:
            if d.lost:
                if not self._probe(d):
                    continue
            d.degraded = False
            for query, fn in self._QUERIES:
                if query in d.skip:
                    continue
                try:
                    fn(self, d)
                except (self.nv.NVMLError, AttributeError) as e:
                    if self._failed(d, query, e):
                        break
            if not d.lost:
                self.store.set_state("hw_gpu_status", "degraded" if d.degraded else "ok",
                                     d.state_labels)
                if phase is not None:
                    self._attribute(d, phase, time.monotonic())
        self.samples += 1
        self.last_duration = time.perf_counter() - t0
        self.store.set("rl_exporter_gpu_samples_total", self.samples)
        self.store.set("rl_exporter_gpu_sample_duration_seconds", self.last_duration)

    def _failed(self, d: Device, query: str, e: BaseException) -> bool:
        """Count a failed query; True when the GPU is lost (stop asking it this pass)."""
        err = error_name(e)
        self._count(str(d.index), query, err)
        code = getattr(e, "value", None)
        if code == NOT_SUPPORTED or isinstance(e, AttributeError):
            d.skip.add(query)
            return False
        if code == GPU_IS_LOST:
            d.lost = True
            _log_once(f"gpu-lost-{d.uuid}", logging.ERROR,
                      "rl-exporter: GPU %d (%s, %s) is lost (NVML GpuIsLost): hw_gpu_status "
                      "failed", d.index, d.name, d.uuid)
            self.store.set_state("hw_gpu_status", "failed", d.state_labels)
            for sid in d.gauge_sids:
                self.store.values[sid] = math.nan
            return True
        d.degraded = True
        _log_once(f"gpu-err-{query}-{err}", logging.WARNING,
                  "rl-exporter: NVML %s failed on GPU %d: %s (counted in "
                  "rl_exporter_gpu_query_errors_total)", query, d.index, e)
        return False

    def _probe(self, d: Device) -> bool:
        """One cheap call on a lost GPU: does it answer again?"""
        try:
            self.nv.nvmlDeviceGetMemoryInfo(d.handle)
        except self.nv.NVMLError as e:
            if getattr(e, "value", None) == GPU_IS_LOST:
                return False
        d.lost = False
        log.warning("rl-exporter: GPU %d (%s) answers again", d.index, d.uuid)
        return True

    # Each query: one NVML call (two for clocks and violations), its own failure domain.
    def _q_utilization(self, d):
        u = self.nv.nvmlDeviceGetUtilizationRates(d.handle)
        self._set(d, "hw_gpu_utilization_ratio", (("task", "general"),), u.gpu / 100.0)
        self._set(d, "hw_gpu_utilization_ratio", (("task", "memory_copy"),), u.memory / 100.0)

    def _q_memory(self, d):
        m = self.nv.nvmlDeviceGetMemoryInfo(d.handle)
        self._set(d, "hw_gpu_memory_usage_bytes", (), m.used)
        self._set(d, "hw_gpu_memory_limit_bytes", (), m.total)
        self._set(d, "hw_gpu_memory_free_bytes", (), m.free)
        self._set(d, "hw_gpu_memory_utilization_ratio", (), m.used / m.total if m.total else math.nan)

    def _q_power(self, d):
        self._set(d, "hw_gpu_power_watts", (), self.nv.nvmlDeviceGetPowerUsage(d.handle) / 1000.0)

    def _q_power_limit(self, d):
        self._set(d, "hw_gpu_power_limit_watts", (),
                  self.nv.nvmlDeviceGetEnforcedPowerLimit(d.handle) / 1000.0)

    def _q_energy(self, d):
        self._set(d, "hw_gpu_energy_joules_total", (),
                  self.nv.nvmlDeviceGetTotalEnergyConsumption(d.handle) / 1000.0)

    def _q_temperature(self, d):
        self._set(d, "hw_gpu_temperature_celsius", (),
                  self.nv.nvmlDeviceGetTemperature(d.handle, self.nv.NVML_TEMPERATURE_GPU))

    def _q_clocks(self, d):
        nv = self.nv
        self._set(d, "hw_gpu_clock_hertz", (("clock", "sm"),),
                  nv.nvmlDeviceGetClockInfo(d.handle, nv.NVML_CLOCK_SM) * 1e6)
        self._set(d, "hw_gpu_clock_hertz", (("clock", "memory"),),
                  nv.nvmlDeviceGetClockInfo(d.handle, nv.NVML_CLOCK_MEM) * 1e6)

    def _q_clock_events(self, d):
        if not d.reasons:
            return
        nv = self.nv
        fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = fn(d.handle)
        values = self.store.values
        for bit, sid in d.reasons:
            if sid is not None:
                values[sid] = 1.0 if mask & bit else 0.0

    def _q_violations(self, d):
        nv = self.nv
        for reason, const, fallback in (("power", "NVML_PERF_POLICY_POWER", 0),
                                        ("thermal", "NVML_PERF_POLICY_THERMAL", 1)):
            v = nv.nvmlDeviceGetViolationStatus(d.handle, getattr(nv, const, fallback))
            self._set(d, "hw_gpu_clock_event_seconds_total", (("reason", reason),),
                      v.violationTime * 1e-9)  # ns

    def _q_fields(self, d):
        if not d.fields:
            return
        values = self.nv.nvmlDeviceGetFieldValues(d.handle, [f[0] for f in d.fields])
        keep = []
        for spec, fv in zip(d.fields, values):
            _, metric, labels, const, _scope, scale, wraps = spec
            ret = fv.nvmlReturn
            if ret != 0:
                self._count(str(d.index), "field:" + const[len("NVML_FI_DEV_"):].lower(),
                            ERROR_NAMES.get(ret, f"nvml_{ret}"))
                if ret != NOT_SUPPORTED:
                    d.degraded = True
                    keep.append(spec)
                continue
            keep.append(spec)
            raw = getattr(fv.value, VALUE_ATTR.get(fv.valueType, "ullVal"))
            if wraps:
                acc = d.acc.get(const)
                if acc is None:
                    d.acc[const] = acc = [raw, 0.0]
                delta = raw - acc[0]
                if delta < 0:  # a 32-bit value wrapped; a 64-bit one was reset: count from 0
                    delta = raw + (1 << 32) - acc[0] if fv.valueType == 1 else raw
                acc[0] = raw
                acc[1] += delta
                raw = acc[1]
            self._set(d, metric, labels, raw * scale)
        if len(keep) != len(d.fields):
            d.fields = keep

    def _q_process_memory(self, d):
        procs = self.nv.nvmlDeviceGetComputeRunningProcesses(d.handle)
        used = None
        for p in procs:
            if p.pid in self.pids and p.usedGpuMemory is not None:
                used = (used or 0) + p.usedGpuMemory
        if used is not None:
            self._set(d, "hw_gpu_process_memory_usage_bytes", (), used)
        elif ("hw_gpu_process_memory_usage_bytes", ()) in d.sids:
            self._set(d, "hw_gpu_process_memory_usage_bytes", (), math.nan)

    # ------------------------------------------------------------ per-phase attribution
    def _attribute(self, d: Device, phase: str, now: float) -> None:
        """Charge the time since this GPU's previous sample to `phase` (the phase in progress
        now), split busy/idle by utilization.gpu; track the phase's memory peak. A sampling
        estimate: over many samples each phase gets its share of wall time, to within one
        sampling interval per phase boundary."""
        last, d.last_sample = d.last_sample, now
        values = self.store.values
        label = (("phase", sanitize_label_value(phase)),)
        sid = d.sids.get(("hw_gpu_utilization_ratio", (("task", "general"),)))
        util = values[sid] if sid is not None else math.nan
        if last is not None and util == util:
            dt = now - last
            util = min(1.0, max(0.0, util))
            busy = self._sid(d, "hw_gpu_phase_busy_seconds_total", label)
            idle = self._sid(d, "hw_gpu_phase_idle_seconds_total", label)
            if busy is not None and idle is not None:
                values[busy] += dt * util
                values[idle] += dt * (1.0 - util)
        sid = d.sids.get(("hw_gpu_memory_usage_bytes", ()))
        used = values[sid] if sid is not None else math.nan
        if used == used:
            started = self.phases.started(phase) if phase != "none" else None
            peak = self._sid(d, "hw_gpu_phase_memory_peak_bytes", label)
            if peak is not None:
                if d.peak_of.get(phase, ()) != started or values[peak] != values[peak]:
                    d.peak_of[phase] = started  # a new occurrence of the phase: a new peak
                    values[peak] = used
                elif used > values[peak]:
                    values[peak] = used

    _QUERIES = (("utilization", _q_utilization), ("memory", _q_memory), ("power", _q_power),
                ("power_limit", _q_power_limit), ("energy", _q_energy),
                ("temperature", _q_temperature), ("clocks", _q_clocks),
                ("clock_events", _q_clock_events), ("violations", _q_violations),
                ("fields", _q_fields), ("process_memory", _q_process_memory))


# ============================================================ exporter wiring
_OFF = (False, None, "off", "false", "0", "no", "none")


def start_sampler(run, gpu="auto", interval: float = 5.0, nvml=None) -> GPUSampler | None:
    """A served run's sampler (Exporter.__init__; core/run.py): its store and rank, GPU samples
    charged to its live phases, failures counted in its loss registry. None when off."""
    if _mode(gpu, say=False) is None:  # off: no live phases made for it
        return None
    return start_store_sampler(run.store, gpu, interval, rank=run.rank, phases=run.live_phases,
                               on_error=run.counts.error, nvml=nvml)


def start_store_sampler(store, gpu="auto", interval: float = 5.0, *, rank=None, phases=None,
                        on_error=None, nvml=None) -> GPUSampler | None:
    """The sampler writing `store` (serve samples its host's GPUs once, into a store of its
    own), or None (one log line says why). `phases`: what the open phase is (phases.py);
    `on_error(kind, exc, message)`: where a discovery failure is counted (else logged)."""
    mode = _mode(gpu)
    if mode is None:
        return None
    mode, explicit = mode
    sampler = GPUSampler(store, interval=interval, rank=rank, mode=mode, nvml=nvml)
    sampler.phases = phases  # per-phase GPU time: the timers' view of which phase is open
    try:
        sampler.start()
    except NVMLUnavailable as e:
        quiet = not explicit and (e.reason == "library_not_found" or
                                  (e.reason == "not_installed" and not _has_nvidia_device()))
        _log_once(f"gpu-off-{e.reason}-{explicit}", logging.INFO if quiet else logging.WARNING,
                  "rl-exporter: GPU sampler off: %s", e)
        return None
    except Exception as e:
        message = f"GPU sampler off: NVML discovery failed: {e!r}"
        if on_error is not None:
            on_error("gpu", e, message)
        else:
            log.error("rl-exporter: %s", message)
        return None
    # a simulated NVML (the demo's fleet, `catalog --budget`) is no GPU of this machine: it
    # is not announced as one (a 512-target fleet restarts samplers every few steps)
    log.log(logging.INFO if nvml is None else logging.DEBUG,
            "rl-exporter: GPU sampler on: %d GPU(s) every %.3gs (%s)", len(sampler.devices),
            sampler.interval, ", ".join(f"{d.index}:{d.name}" for d in sampler.devices) or "none")
    return sampler


def _mode(gpu, say: bool = True):
    """(mode, explicit) of a `gpu=` setting; None when off."""
    if isinstance(gpu, str):
        gpu = gpu.strip().lower()
    if gpu in _OFF:
        return None
    if gpu in (True, "on", "true", "1", "yes", "all"):
        return "all", True
    if gpu == "local":
        return "local", True
    if gpu != "auto" and say:
        log.error("rl-exporter: gpu=%r is not one of auto|on|off|local; using auto", gpu)
    return "all", False


def _has_nvidia_device() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.exists("/proc/driver/nvidia")
