"""GPU and efficiency: per-GPU NVML series (OTel hw.gpu.* names, see names.py), next to
MFU, tokens/s per GPU and each phase's share of the step."""
from __future__ import annotations

from . import names as n
from .common import GPU, RATE, bars, mean, q, qi, sel, timeline, ts
from .model import Dashboard, Row

G = "{{run}} gpu{{gpu}}"

STEP_SHARE = (f"{sel('rl_phase_duration_seconds')} / ignoring(phase) group_left "
              f"{mean('rl_step_duration_seconds')}")

ROWS = [
    Row("Per-GPU utilization and memory", [
        ts("GPU utilization", "NVML utilization per GPU.",
           "high in generation and update; long dips are GPUs idle during the rollout tail or "
           "weight sync (this project's heuristic: below 0.3 for minutes is idle).",
           q(sel(n.GPU_UTILIZATION), G), unit="percentunit", min=0, max=1, gate=GPU, width=12,
           thresholds=[(None, "red"), (0.3, "yellow"), (0.6, "green")]),
        ts("GPU memory used", "NVML memory in use per GPU, with the limit dashed.",
           "below the limit with headroom; a climb to the limit precedes OOM.",
           q(sel(n.GPU_MEMORY_USAGE), G),
           q(f"max by (run) ({sel(n.GPU_MEMORY_LIMIT)})", "{{run}} limit"),
           unit="bytes", min=0, gate=GPU, width=12),
    ]),
    Row("Power, temperature, clocks and throttling", [
        ts("Power", "Power draw per GPU, and the energy counter's rate as a cross-check.",
           "near the power limit under load; steady.",
           q(sel(n.GPU_POWER), G),
           q(f"sum by (run) (rate({sel(n.GPU_ENERGY)}[{RATE}]))", "{{run}} total (from energy)"),
           unit="watt", min=0, gate=GPU),
        ts("Temperature", "GPU temperature.",
           "below about 83 C (this project's heuristic for data-centre GPUs; slowdown thresholds are per model).",
           q(sel(n.GPU_TEMPERATURE), G), unit="celsius", min=0, gate=GPU,
           thresholds=[(None, "green"), (83, "yellow"), (90, "red")]),
        ts("Clocks", "SM and memory clocks per GPU.",
           "SM clock steady near its boost clock under load; drops line up with throttle reasons.",
           q(sel(n.GPU_CLOCK), "{{run}} gpu{{gpu}} {{clock}}"), unit="hertz", min=0, gate=GPU),
        timeline("Throttle reasons", "Clock-event (throttle) reasons active per GPU.",
                 "only gpu_idle between phases; power cap or thermal slowdowns under load cost "
                 "throughput.",
                 q(f"{sel(n.GPU_CLOCK_EVENT)} > 0", "{{run}} gpu{{gpu}} {{reason}}"),
                 unit="none", gate=GPU, width=24,
                 mappings=[{"type": "value", "options": {"1": {"text": "active", "color": "orange"}}}],
                 thresholds=[(None, "orange")]),
    ]),
    Row("Efficiency", [
        ts("MFU: train vs rollout", "Model FLOPs utilisation by role and phase.",
           "train above 0.3 (seed 004 section 11.1, heuristic), 0.5-0.6 typical (seed 001 "
           "section 10); rollout lower.",
           q(sel("rl_mfu_ratio"), "{{run}} {{role}} {{phase}} ({{source}})"),
           unit="percentunit", min=0, max=1, thresholds=[(None, "red"), (0.3, "green")]),
        ts("Tokens/s per GPU", "Tokens per second per GPU.",
           "steady; below 50 for a 7B model is slow (seed 004 section 11.2, heuristic).",
           q(mean("rl_gpu_throughput_tokens_per_second")), unit="short", min=0),
        bars("Phase share of step time", "Each phase's share of the last step's wall time.",
             "gen below 0.5 and update_actor below 0.4 (seed 004 section 11.2, heuristic).",
             qi(STEP_SHARE, "{{run}} {{phase}}"), unit="percentunit", min=0, max=1,
             thresholds=[(None, "green"), (0.4, "yellow"), (0.5, "red")]),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-gpu", title="RL GPU and efficiency",
    description="Per-GPU NVML utilization, memory, power, temperature, clocks and throttle reasons "
                "beside MFU, tokens/s per GPU and the phase share of the step.",
    rows=ROWS, tags=["rl-exporter", "gpu"])
