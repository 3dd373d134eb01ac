"""A fake `pynvml` (nvidia-ml-py) for tests and benchmarks without a GPU.

It implements the functions exporter/gpu.py calls, with nvidia-ml-py's names,
constants, return shapes and exception classes (NVMLError with `.value`, and the
NVMLError_<Name> subclasses), plus the failure modes worth testing:

    nv = FakeNVML(gpus=2, unsupported={0: {"nvmlDeviceGetTotalEnergyConsumption"}},
                  unsupported_fields={1: {FakeNVML.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX}},
                  lost={1})                       # GPU 1 answers GpuIsLost to every query
    FakeNVML(library_missing=True).nvmlInit()    # raises NVMLError_LibraryNotFound

`call_delay` makes every device query block in C (libc usleep through ctypes);
`gate=fd` makes each wait in C until a byte can be read from that descriptor (or 30 s
pass), so a test can prove that another Python thread runs while a query waits: it is
the one that writes the byte;
with `hold_gil=True` it goes through ctypes.PyDLL, which keeps the GIL held like a
C extension that never releases it would: benchmarks/bench_gpu.py uses the pair
to show that a GIL hold across a call is visible, and that real NVML calls
(ctypes.CDLL, like the fake's default) are not one.
"""
from __future__ import annotations

import ctypes
import threading
from types import SimpleNamespace

_libc = ctypes.CDLL(None)        # calls release the GIL
_libc_gil = ctypes.PyDLL(None)   # calls keep the GIL


class _PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]


_POLLIN = 0x001


class NVMLError(Exception):
    value = 999

    def __init__(self, value=None):
        if value is not None:
            self.value = value
        super().__init__(self.value)

    def __str__(self):
        return _STRINGS.get(self.value, f"NVML error {self.value}")


def _err(name, code):
    return type("NVMLError_" + name, (NVMLError,), {"value": code})


NVMLError_NotSupported = _err("NotSupported", 3)
NVMLError_NoPermission = _err("NoPermission", 4)
NVMLError_DriverNotLoaded = _err("DriverNotLoaded", 9)
NVMLError_Timeout = _err("Timeout", 10)
NVMLError_LibraryNotFound = _err("LibraryNotFound", 12)
NVMLError_GpuIsLost = _err("GpuIsLost", 15)
NVMLError_Unknown = _err("Unknown", 999)
_STRINGS = {3: "Not Supported", 4: "Insufficient Permissions", 9: "Driver Not Loaded",
            10: "Timeout", 12: "NVML Shared Library Not Found", 15: "GPU is lost",
            999: "Unknown Error"}


def default_gpu(i: int, name: str = "NVIDIA H100 80GB HBM3") -> dict:
    return {
        "name": name, "uuid": f"GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}",
        "util_gpu": 87, "util_mem": 41,
        "mem_total": 85_520_809_984, "mem_used": 60_000_000_000 + i,
        "power_mw": 612_345, "power_limit_mw": 700_000, "energy_mj": 123_456_789,
        "temp": 71, "temp_slowdown": 87, "temp_shutdown": 92,
        "clock_sm": 1980, "clock_mem": 2619, "max_clock_sm": 1980, "max_clock_mem": 2619,
        "reasons_supported": 0x1FF, "reasons": 0x4 | 0x20,   # sw power cap + sw thermal
        "viol_power_ns": 2_500_000_000, "viol_thermal_ns": 500_000_000,
        "fields": {3: 2, 4: 0, 94: 7, 197: 4_000_000_000, 198: 1_000_000, 138: 1024, 139: 2048},
        "processes": [],
    }


class FakeNVML:
    """Instances stand in for the `pynvml` module."""

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_NoPermission = NVMLError_NoPermission
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_Timeout = NVMLError_Timeout
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_GpuIsLost = NVMLError_GpuIsLost
    NVMLError_Unknown = NVMLError_Unknown
    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_LIBRARY_NOT_FOUND = 12
    NVML_ERROR_GPU_IS_LOST = 15
    NVML_TEMPERATURE_GPU = 0
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
    NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2
    NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL = 0, 1
    NVML_FI_DEV_ECC_SBE_VOL_TOTAL = 3
    NVML_FI_DEV_ECC_DBE_VOL_TOTAL = 4
    NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94
    NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197
    NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
    nvmlClocksEventReasonGpuIdle = 0x1
    nvmlClocksEventReasonApplicationsClocksSetting = 0x2
    nvmlClocksEventReasonSwPowerCap = 0x4
    nvmlClocksEventReasonHwSlowdown = 0x8
    nvmlClocksEventReasonSyncBoost = 0x10
    nvmlClocksEventReasonSwThermalSlowdown = 0x20
    nvmlClocksEventReasonHwThermalSlowdown = 0x40
    nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80
    nvmlClocksEventReasonDisplayClockSetting = 0x100

    def __init__(self, gpus=2, *, names=None, library_missing=False, lost=(), unsupported=None,
                 unsupported_fields=None, failing=None, field_types=None, call_delay: float = 0.0,
                 hold_gil: bool = False, gate: int | None = None):
        n = gpus if isinstance(gpus, int) else len(gpus)
        self.gpus = [default_gpu(i, (names or {}).get(i, "NVIDIA H100 80GB HBM3")) for i in range(n)] \
            if isinstance(gpus, int) else [dict(g) for g in gpus]
        self.library_missing = library_missing
        self.lost = set(lost)
        self.unsupported = {k: set(v) for k, v in (unsupported or {}).items()}
        self.unsupported_fields = {k: set(v) for k, v in (unsupported_fields or {}).items()}
        self.failing = {k: dict(v) for k, v in (failing or {}).items()}  # gpu -> {fn: error class}
        self.field_types = dict(field_types or {})  # field id -> NVML value type (1: 32-bit uint)
        self.call_delay_us = int(call_delay * 1e6)
        self._sleep = (_libc_gil if hold_gil else _libc).usleep
        self._c = _libc_gil if hold_gil else _libc
        self.gate = gate
        self.gated = 0  # queries released by a byte on the gate (not by its 30 s timeout)
        self.calls: dict[str, int] = {}
        self.initialised = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------ plumbing
    def _call(self, fn: str, h=None):
        self.calls[fn] = self.calls.get(fn, 0) + 1
        if self.call_delay_us:
            self._sleep(self.call_delay_us)
        if self.gate is not None and h is not None:
            pfd = _PollFd(self.gate, _POLLIN, 0)
            if self._c.poll(ctypes.byref(pfd), 1, 30_000) == 1:  # waits in C
                self._c.read(self.gate, ctypes.create_string_buffer(1), 1)
                self.gated += 1
        if h is None:
            return None
        if h in self.lost:
            raise NVMLError_GpuIsLost()
        if fn in self.unsupported.get(h, ()):
            raise NVMLError_NotSupported()
        err = self.failing.get(h, {}).get(fn)
        if err is not None:
            raise err()
        return self.gpus[h]

    # ------------------------------------------------------------ init
    def nvmlInit(self):
        self._call("nvmlInit")
        if self.library_missing:
            raise NVMLError_LibraryNotFound()
        self.initialised += 1

    def nvmlShutdown(self):
        self._call("nvmlShutdown")
        self.initialised -= 1

    def nvmlDeviceGetCount(self):
        self._call("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        self._call("nvmlDeviceGetHandleByIndex")
        if not 0 <= i < len(self.gpus):
            raise NVMLError(2)
        return i

    def nvmlDeviceGetUUID(self, h):
        self.calls["nvmlDeviceGetUUID"] = self.calls.get("nvmlDeviceGetUUID", 0) + 1
        return self.gpus[h]["uuid"]  # static: answers even on a lost GPU

    def nvmlDeviceGetName(self, h):
        self.calls["nvmlDeviceGetName"] = self.calls.get("nvmlDeviceGetName", 0) + 1
        return self.gpus[h]["name"]

    # ------------------------------------------------------------ static reads
    def nvmlDeviceGetMaxClockInfo(self, h, clock):
        g = self._call("nvmlDeviceGetMaxClockInfo", h)
        return g["max_clock_sm"] if clock == self.NVML_CLOCK_SM else g["max_clock_mem"]

    def nvmlDeviceGetTemperatureThreshold(self, h, which):
        g = self._call("nvmlDeviceGetTemperatureThreshold", h)
        return g["temp_slowdown"] if which == self.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN \
            else g["temp_shutdown"]

    def nvmlDeviceGetSupportedClocksEventReasons(self, h):
        return self._call("nvmlDeviceGetSupportedClocksEventReasons", h)["reasons_supported"]

    # ------------------------------------------------------------ per-sample queries
    def nvmlDeviceGetUtilizationRates(self, h):
        g = self._call("nvmlDeviceGetUtilizationRates", h)
        return SimpleNamespace(gpu=g["util_gpu"], memory=g["util_mem"])

    def nvmlDeviceGetMemoryInfo(self, h, version=None):
        g = self._call("nvmlDeviceGetMemoryInfo", h)
        return SimpleNamespace(total=g["mem_total"], used=g["mem_used"],
                               free=g["mem_total"] - g["mem_used"])

    def nvmlDeviceGetPowerUsage(self, h):
        return self._call("nvmlDeviceGetPowerUsage", h)["power_mw"]

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return self._call("nvmlDeviceGetEnforcedPowerLimit", h)["power_limit_mw"]

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return self._call("nvmlDeviceGetTotalEnergyConsumption", h)["energy_mj"]

    def nvmlDeviceGetTemperature(self, h, sensor):
        return self._call("nvmlDeviceGetTemperature", h)["temp"]

    def nvmlDeviceGetClockInfo(self, h, clock):
        g = self._call("nvmlDeviceGetClockInfo", h)
        return g["clock_sm"] if clock == self.NVML_CLOCK_SM else g["clock_mem"]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._call("nvmlDeviceGetCurrentClocksEventReasons", h)["reasons"]

    def nvmlDeviceGetViolationStatus(self, h, policy):
        g = self._call("nvmlDeviceGetViolationStatus", h)
        ns = g["viol_power_ns"] if policy == self.NVML_PERF_POLICY_POWER else g["viol_thermal_ns"]
        return SimpleNamespace(referenceTime=0, violationTime=ns)

    def nvmlDeviceGetFieldValues(self, h, field_ids):
        g = self._call("nvmlDeviceGetFieldValues", h)
        out = []
        for f in field_ids:
            fid, scope = f if isinstance(f, tuple) else (f, 0)
            ret = 3 if (fid in self.unsupported_fields.get(h, ()) or fid not in g["fields"]) else 0
            vt = self.field_types.get(fid, 3)
            v = g["fields"].get(fid, 0)
            out.append(SimpleNamespace(fieldId=fid, scopeId=scope, timestamp=0, latencyUsec=0,
                                       valueType=vt, nvmlReturn=ret,
                                       value=SimpleNamespace(ullVal=v, uiVal=v & 0xFFFFFFFF)))
        return out

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        g = self._call("nvmlDeviceGetComputeRunningProcesses", h)
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, mem in g["processes"]]
