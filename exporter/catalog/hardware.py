"""GPU counters (NVML sampler, exporter/gpu.py) and MFU (exporter/mfu.py).

GPU names follow the OpenTelemetry `hw.gpu.*` / `hw.*` semantic conventions as
translated to Prometheus (dots -> `_`, base unit appended, unit `1` -> `_ratio`,
monotonic sums -> `_total`): fractions not percent, bytes not MiB, joules not
mJ, hertz not MHz. docs/gpu.md maps every name to OTel and dcgm-exporter.

Every GPU series carries `gpu` (NVML index, as nvidia-smi and dcgm-exporter
number them), `uuid`, `model` (NVML device name) and the exporter's `run`, plus
`rank` when the exporter knows its rank, so a dashboard can select "this run's
GPUs" without pod mapping.
"""
from __future__ import annotations

from .model import COUNTER, GAUGE, LAST, MAX, STATE, SUM, Metric

GPU = ("gpu", "uuid", "gpu_model", "rank")  # identity labels on every per-GPU series


def _g(name, unit, help, *labels, agg=LAST):
    return Metric(name, GAUGE, unit, help, GPU + labels, agg, group="gpu")


def _c(name, unit, help, *labels):
    return Metric(name, COUNTER, unit, help, GPU + labels, SUM, group="gpu")


METRICS: list[Metric] = [
    # ---------------------------------------------------------------- utilisation
    _g("hw_gpu_utilization_ratio", "1",
       "Fraction of the last sample period a kernel ran (task=general, NVML utilization.gpu, "
       "dcgm DCGM_FI_DEV_GPU_UTIL/100) or device memory was read/written (task=memory_copy, "
       "DCGM_FI_DEV_MEM_COPY_UTIL/100). Busy, not efficient: a 100 % GPU can run at 5 % MFU.",
       "task"),
    # ---------------------------------------------------------------- memory
    _g("hw_gpu_memory_usage_bytes", "By",
       "Device memory in use, all processes (OTel hw.gpu.memory.usage, dcgm DCGM_FI_DEV_FB_USED).",
       agg=SUM),
    _g("hw_gpu_memory_limit_bytes", "By",
       "Device memory size (OTel hw.gpu.memory.limit, dcgm FB_USED+FB_FREE+FB_RESERVED).", agg=SUM),
    _g("hw_gpu_memory_free_bytes", "By", "Device memory free (dcgm DCGM_FI_DEV_FB_FREE).", agg=SUM),
    _g("hw_gpu_memory_utilization_ratio", "1",
       "Memory in use / memory size (OTel hw.gpu.memory.utilization).", agg=MAX),
    _g("hw_gpu_process_memory_usage_bytes", "By",
       "Device memory used by this exporter's process (NVML compute processes, matched by PID). "
       "Absent when the PID is not in NVML's list (another PID namespace, or no CUDA context yet).",
       agg=SUM),
    # ---------------------------------------------------------------- power, energy, heat
    _g("hw_gpu_power_watts", "W", "Power draw (OTel hw.power with hw.type=gpu, "
       "dcgm DCGM_FI_DEV_POWER_USAGE).", agg=SUM),
    _g("hw_gpu_power_limit_watts", "W",
       "Enforced power limit (OTel hw.power.limit semantics; dcgm DCGM_FI_DEV_ENFORCED_POWER_LIMIT). "
       "Draw at the limit with software_power_cap active: power-capped clocks."),
    _c("hw_gpu_energy_joules_total", "J",
       "Energy since the driver loaded (OTel hw.energy, dcgm DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION/1000). "
       "rate() gives average watts over any window, unlike the sampled hw_gpu_power_watts."),
    _g("hw_gpu_temperature_celsius", "Cel", "GPU die temperature (OTel hw.temperature, "
       "dcgm DCGM_FI_DEV_GPU_TEMP).", agg=MAX),
    _g("hw_gpu_temperature_limit_celsius", "Cel",
       "Temperature thresholds read at start: limit=slowdown (clocks drop) | shutdown (OTel "
       "hw.temperature.limit; dcgm DCGM_FI_DEV_SLOWDOWN_TEMP/SHUTDOWN_TEMP).", "limit"),
    # ---------------------------------------------------------------- clocks and clock events
    _g("hw_gpu_clock_hertz", "Hz",
       "Current clock: clock=sm|memory (dcgm DCGM_FI_DEV_SM_CLOCK / MEM_CLOCK, in MHz there).",
       "clock"),
    _g("hw_gpu_clock_max_hertz", "Hz", "Maximum clock, read at start: clock=sm|memory "
       "(dcgm DCGM_FI_DEV_MAX_SM_CLOCK / MAX_MEM_CLOCK). SM clock well below it while busy: throttled.",
       "clock"),
    _g("hw_gpu_clock_event_active", "1",
       "1 while NVML reports this clock event (throttle) reason at sample time, else 0: reason="
       "gpu_idle|applications_clocks_setting|software_power_cap|hardware_slowdown|sync_boost|"
       "software_thermal_slowdown|hardware_thermal_slowdown|hardware_power_brake_slowdown|"
       "display_clock_setting (NVML's SwPowerCap, HwSlowdown, ... in snake case). "
       "Only reasons the GPU supports get a series. A state sampled every interval misses short "
       "events; hw_gpu_clock_event_seconds_total counts all of them.", "reason", agg=MAX),
    _c("hw_gpu_clock_event_seconds_total", "s",
       "Time clocks were held down by a policy since the driver loaded: reason=power|thermal "
       "(NVML perf-policy violation time; dcgm DCGM_FI_DEV_POWER_VIOLATION / THERMAL_VIOLATION, "
       "in ns there). rate() is the fraction of time throttled.", "reason"),
    # ---------------------------------------------------------------- errors, io, status
    _c("hw_gpu_errors_total", "{error}",
       "Errors since the driver loaded (OTel hw.errors with hw.type=gpu): error_type=corrected|"
       "uncorrected (volatile ECC totals, dcgm DCGM_FI_DEV_ECC_SBE_VOL_TOTAL/DBE_VOL_TOTAL) | "
       "pcie_replay (DCGM_FI_DEV_PCIE_REPLAY_COUNTER).", "error_type"),
    _c("hw_gpu_io_bytes_total", "By",
       "Bytes moved (OTel hw.gpu.io): direction=receive|transmit, link=pcie (NVML's PCIe byte "
       "counters wrap, so this one counts from the sampler's start) | nvlink (all links, data "
       "payload, since the driver loaded). rate() is "
       "bandwidth (dcgm DCGM_FI_PROF_PCIE_RX/TX_BYTES, DCGM_FI_PROF_NVLINK_RX/TX_BYTES are rates).",
       "direction", "link"),
    Metric("hw_gpu_status", STATE, "1",
           "GPU health as the sampler sees it (OTel hw.status, hw.type=gpu): state=ok | failed "
           "(NVML reports the GPU lost: fallen off the bus; its gauges turn NaN) | degraded (some "
           "queries fail with errors other than 'not supported').",
           GPU + ("state",), LAST, states=("ok", "degraded", "failed"), group="gpu"),
    # ---------------------------------------------------------------- MFU (exporter/mfu.py)
    Metric("rl_model_flops_per_token", GAUGE, "FLOP/{token}",
           "Model FLOPs per token the exporter's MFU uses: 2 x active matmul parameters plus the "
           "causal attention term, x3 for phase=train (forward+backward), x1 for phase=inference. "
           "MoE models count active experts only.", ("role", "phase"), LAST, group="throughput"),
    Metric("rl_gpu_peak_flops_per_second", GAUGE, "FLOP/s",
           "Peak dense FLOP/s per GPU the exporter's MFU divides by (device model and dtype; "
           "from the built-in table or the user's override).", ("gpu_model", "dtype"), LAST,
           group="throughput"),
    # ---------------------------------------------------------------- self-metrics
    Metric("rl_exporter_gpu_devices", GAUGE, "{gpu}",
           "GPUs the NVML sampler watches (after CUDA_VISIBLE_DEVICES). 0 with the sampler on: "
           "nothing visible.", (), LAST, group="exporter"),
    Metric("rl_exporter_gpu_samples_total", COUNTER, "{sample}",
           "NVML sampling passes completed (all GPUs each).", (), SUM, group="exporter"),
    Metric("rl_exporter_gpu_sample_duration_seconds", GAUGE, "s",
           "Wall time of the last sampling pass over all GPUs.", (), LAST, group="exporter"),
    Metric("rl_exporter_gpu_query_errors_total", COUNTER, "{error}",
           "NVML queries that failed, per GPU, query and error (not_supported is counted once, "
           "then that query is no longer asked on that GPU; gpu_is_lost marks hw_gpu_status "
           "failed).", ("gpu", "query", "error"), SUM, group="exporter"),
    Metric("rl_exporter_mfu_skipped_total", COUNTER, "{value}",
           "MFU values not computed, by reason: unknown_gpu (no peak for the device model: never "
           "guessed), no_peak_for_dtype, bad_input (non-positive tokens, seconds or world size), "
           "no_gpu (no device name known), mixed_gpus (several models sampled; pass gpu=).", ("reason",), SUM, group="exporter"),
]
