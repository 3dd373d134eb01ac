"""NVML as the GPU sampler reads it: the tables of fields, clock-event reasons and error
codes, and which devices are this process's (CUDA_VISIBLE_DEVICES applied to NVML's list).

Which GPUs: those CUDA would give this process. CUDA_VISIBLE_DEVICES entries are NVML indices
(see the CUDA_DEVICE_ORDER note in exporter/gpu.py) or UUIDs/UUID prefixes (GPU-8932f937);
parsing stops at the first invalid entry, as CUDA's does; MIG instances (MIG-...) are skipped
with a log line, because whole-GPU counters would charge other tenants' work to this run.
"""
from __future__ import annotations


# (label value, pynvml constant, numeric fallback) for clock event (throttle) reasons.
CLOCK_EVENT_REASONS = (
    ("gpu_idle", "nvmlClocksEventReasonGpuIdle", 0x1),
    ("applications_clocks_setting", "nvmlClocksEventReasonApplicationsClocksSetting", 0x2),
    ("software_power_cap", "nvmlClocksEventReasonSwPowerCap", 0x4),
    ("hardware_slowdown", "nvmlClocksEventReasonHwSlowdown", 0x8),
    ("sync_boost", "nvmlClocksEventReasonSyncBoost", 0x10),
    ("software_thermal_slowdown", "nvmlClocksEventReasonSwThermalSlowdown", 0x20),
    ("hardware_thermal_slowdown", "nvmlClocksEventReasonHwThermalSlowdown", 0x40),
    ("hardware_power_brake_slowdown", "nvmlClocksEventReasonHwPowerBrakeSlowdown", 0x80),
    ("display_clock_setting", "nvmlClocksEventReasonDisplayClockSetting", 0x100),
)

# Reasons that are settings, not throttling (application clocks, sync boost, a display clock):
# left out by default, 3 series per GPU that keep a rank within its series budget
# (`rl-exporter catalog --budget`); RL_EXPORTER_GPU_SETTING_REASONS=1 exports them too.
SETTING_REASONS = frozenset({"applications_clocks_setting", "sync_boost", "display_clock_setting"})

# Counters read in ONE nvmlDeviceGetFieldValues call: (metric, labels, field constant, scope,
# scale, wraps). `wraps`: NVML says the value can wrap, so the sampler accumulates deltas.
UINT_MAX = 0xFFFFFFFF  # scopeId: all NVLink links summed
FIELDS = (
    ("hw_gpu_errors_total", (("error_type", "corrected"),), "NVML_FI_DEV_ECC_SBE_VOL_TOTAL", None, 1.0, False),
    ("hw_gpu_errors_total", (("error_type", "uncorrected"),), "NVML_FI_DEV_ECC_DBE_VOL_TOTAL", None, 1.0, False),
    ("hw_gpu_errors_total", (("error_type", "pcie_replay"),), "NVML_FI_DEV_PCIE_REPLAY_COUNTER", None, 1.0, False),
    ("hw_gpu_io_bytes_total", (("direction", "transmit"), ("link", "pcie")),
     "NVML_FI_DEV_PCIE_COUNT_TX_BYTES", None, 1.0, True),
    ("hw_gpu_io_bytes_total", (("direction", "receive"), ("link", "pcie")),
     "NVML_FI_DEV_PCIE_COUNT_RX_BYTES", None, 1.0, True),
    ("hw_gpu_io_bytes_total", (("direction", "transmit"), ("link", "nvlink")),
     "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX", UINT_MAX, 1024.0, False),  # KiB
    ("hw_gpu_io_bytes_total", (("direction", "receive"), ("link", "nvlink")),
     "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX", UINT_MAX, 1024.0, False),
)
FIELD_IDS = {"NVML_FI_DEV_ECC_SBE_VOL_TOTAL": 3, "NVML_FI_DEV_ECC_DBE_VOL_TOTAL": 4,
              "NVML_FI_DEV_PCIE_REPLAY_COUNTER": 94, "NVML_FI_DEV_PCIE_COUNT_TX_BYTES": 197,
              "NVML_FI_DEV_PCIE_COUNT_RX_BYTES": 198, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX": 138,
              "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX": 139}
VALUE_ATTR = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}

ERROR_NAMES = {1: "uninitialized", 2: "invalid_argument", 3: "not_supported", 4: "no_permission",
                6: "not_found", 9: "driver_not_loaded", 10: "timeout", 12: "library_not_found",
                13: "function_not_found", 14: "corrupted_inforom", 15: "gpu_is_lost",
                16: "reset_required", 17: "operating_system", 18: "lib_rm_version_mismatch",
                20: "memory", 21: "no_data", 27: "not_ready", 28: "gpu_not_found", 999: "unknown"}
NOT_SUPPORTED, GPU_IS_LOST, LIBRARY_NOT_FOUND = 3, 15, 12

def error_name(e: BaseException) -> str:
    code = getattr(e, "value", None)
    if isinstance(code, int):
        return ERROR_NAMES.get(code, f"nvml_{code}")
    if isinstance(e, AttributeError):
        return "function_not_found"  # an older nvidia-ml-py without this function
    return type(e).__name__.lower()


def nvml_text(v) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


class NVMLUnavailable(Exception):
    """NVML could not start; `reason` is a short snake_case word for logs/tests."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


class Device:
    """One NVML device as the sampler sees it; series ids are cached here."""

    def __init__(self, index: int, handle, uuid: str, name: str):
        self.index, self.handle, self.uuid, self.name = index, handle, uuid, name
        self.skip: set[str] = set()       # queries answered NotSupported
        self.fields: list = []            # field specs still asked
        self.lost = False
        self.degraded = False
        self.reasons: list[tuple[int, int]] = []   # (bit, series id) for supported reasons
        self.sids: dict = {}
        self.gauge_sids: set[int] = set()
        self.acc: dict = {}               # wrap-accumulated counters: key -> [last raw, total]
        self.labels: tuple = ()
        self.state_labels: tuple = ()
        self.last_sample: float | None = None  # monotonic time of the previous pass (per-phase split)
        self.peak_of: dict = {}               # phase -> occurrence start the memory peak belongs to


def parse_visible(env: str | None, devices: list[Device]) -> tuple[list[Device], list[str]]:
    """Apply CUDA_VISIBLE_DEVICES to NVML's device list. Returns (visible, notes)."""
    if env is None:
        return list(devices), []
    notes: list[str] = []
    out: list[Device] = []
    for raw in env.split(","):
        e = raw.strip()
        dev = None
        if e.startswith("MIG-"):
            notes.append(f"MIG instance {e} not sampled (whole-GPU counters would include "
                         "other tenants)")
            continue
        if e.lstrip("-").isdigit():
            i = int(e)
            if 0 <= i < len(devices):
                dev = devices[i]
        elif e.startswith("GPU-"):
            matches = [d for d in devices if d.uuid.startswith(e)]
            if len(matches) == 1:
                dev = matches[0]
            elif len(matches) > 1:
                notes.append(f"CUDA_VISIBLE_DEVICES entry {e!r} matches {len(matches)} GPUs")
        if dev is None:
            if e:
                notes.append(f"CUDA_VISIBLE_DEVICES entry {e!r} names no GPU; it and the "
                             "entries after it are ignored (as CUDA does)")
            break
        if dev not in out:
            out.append(dev)
    return out, notes
