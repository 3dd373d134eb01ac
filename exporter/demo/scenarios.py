"""The demo's scenarios: the pathologies (exporter/demo/pathologies.py, one entry each, edits in
catalog series that the demo applies to its frames) plus what a deployment gets from outside the
trainer's dict: side series (NVML, run configuration, phases in progress) and the hang's
blocking trainer."""
from __future__ import annotations

from .pathologies import CRASH_EVERY, PATHOLOGIES  # noqa: F401  (CRASH_EVERY: the crash-loop test)

SCENARIOS = {p.name: p for p in PATHOLOGIES if p.demo}

GIB = 2.0 ** 30


def run_settings(scenario: str) -> dict[str, float]:
    """The run's settings, as a sidecar reads them from the start-up config print (config/{name},
    exporter/catalog/config_echo.py): veRL's synchronous trainer on the hybrid engine, the
    settings its integration reports (docs/integrations.md, "Settings that change a rule's
    meaning"); n_mini is posttrain's mini-batches per step."""
    return {"n_mini": 1.0 if scenario == "on-policy-clip" else 4.0, "max_grad_norm": 5.0,
            "async_training": 0.0, "colocated": 1.0, "pi_old_from_rollout": 0.0,
            "kl_loss_coef": 0.001, "kl_reward_coef": 0.0}


def side_series(scenario: str, step: int, onset: int) -> list[tuple[str, float, dict]]:
    """Series a real deployment gets from outside the trainer's dict: the NVML sampler (GPU
    memory, clock-event reasons; exporter/gpu.py names) and the run configuration (posttrain's
    n_mini, mini-batches per step). (metric, value, labels) triples written straight into the
    exporter's store."""
    on = step >= onset
    out = [("rl_config_value", v, {"parameter": p}) for p, v in run_settings(scenario).items()]
    for gpu in ("0", "1"):
        ident = {"gpu": gpu, "uuid": f"GPU-demo-{gpu}", "gpu_model": "NVIDIA H100 80GB HBM3"}
        used = 54.0 if not (on and scenario == "gpu-memory-full") else 78.6
        out.append(("hw_gpu_memory_usage_bytes", used * GIB, ident))
        out.append(("hw_gpu_memory_limit_bytes", 80.0 * GIB, ident))
        hot = on and scenario == "gpu-throttle" and gpu == "1"
        out.append(("hw_gpu_clock_event_active", 1.0 if hot else 0.0,
                    {**ident, "reason": "hardware_thermal_slowdown"}))
        # at its power limit under full load: normal, not throttling
        out.append(("hw_gpu_clock_event_active", 1.0, {**ident, "reason": "software_power_cap"}))
    return out


# ------------------------------------------------------------------ phases in progress and GPU time
# by phase. The NVML sampler charges each sample to the phase a timer has open (exporter/gpu.py),
# and open timers publish their start (exporter/timers.py LivePhases); the demo writes the same
# series from a simulated schedule: each step's wall time goes 50 % to gen (85 % busy), 30 % to
# update_actor (97 % busy), 20 % outside any timer (5 % busy).
_PHASE_SPLIT = {  # scenario state -> [(phase, share of wall time, busy fraction)]
    "normal": [("gen", 0.5, 0.85), ("update_actor", 0.3, 0.97), ("none", 0.2, 0.05)],
    "hang": [("gen", 1.0, 0.0)],
    "long-tail": [("gen", 0.6, 0.15), ("update_actor", 0.25, 0.97), ("none", 0.15, 0.05)],
}
_phase_state: dict[str, dict] = {}
_side_series_before_phases = side_series


def phase_series(scenario: str, step: int, onset: int, now: float | None = None) -> list:
    """Per-phase GPU seconds, phase medians and (gen-hang) the open gen phase, in wall time."""
    import time as _time
    now = _time.time() if now is None else now
    st = _phase_state.get(scenario)
    if st is None or step <= st["step"]:
        st = _phase_state[scenario] = {"step": step, "last": now, "dts": [], "acc": {},
                                       "hang_start": None}
    dt = max(0.0, now - st["last"])
    st["step"], st["last"] = step, now
    if dt:
        st["dts"] = (st["dts"] + [dt])[-20:]
    on = step >= onset
    mode = "normal"
    if on and scenario == "gen-hang":
        mode = "hang"
        if st["hang_start"] is None:
            st["hang_start"] = now
    elif on and scenario == "rollout-long-tail":
        mode = "long-tail"
    out = []
    step_s = sorted(st["dts"])[len(st["dts"]) // 2] if st["dts"] else 0.0
    if mode != "hang":
        for phase, share, _ in _PHASE_SPLIT[mode][:2]:
            out.append(("rl_phase_recent_median_duration_seconds", share * step_s, {"phase": phase}))
    if st["hang_start"] is not None:
        out.append(("rl_phase_in_progress_start_timestamp_seconds", st["hang_start"], {"phase": "gen"}))
    util = 0.0 if mode == "hang" else sum(sh * b for _, sh, b in _PHASE_SPLIT[mode])
    for gpu in ("0", "1"):
        ident = {"gpu": gpu, "uuid": f"GPU-demo-{gpu}", "gpu_model": "NVIDIA H100 80GB HBM3"}
        out.append(("hw_gpu_utilization_ratio", util, {**ident, "task": "general"}))
        for phase, share, busy in _PHASE_SPLIT[mode]:
            acc = st["acc"].setdefault((gpu, phase), [0.0, 0.0])
            acc[0] += dt * share * busy
            acc[1] += dt * share * (1 - busy)
        for (g, phase), (b, i) in st["acc"].items():
            if g == gpu:
                out.append(("hw_gpu_phase_busy_seconds_total", b, {**ident, "phase": phase}))
                out.append(("hw_gpu_phase_idle_seconds_total", i, {**ident, "phase": phase}))
    return out


def side_series(scenario: str, step: int, onset: int) -> list[tuple[str, float, dict]]:  # noqa: F811
    return _side_series_before_phases(scenario, step, onset) + phase_series(scenario, step, onset)


# ------------------------------------------------------------------ hang forensics and restarts
# (exporter/stacks.py, exporter/core/goodput.py). `hang`: from the onset the trainer is stuck inside
# timer("update_actor") in a collective that never completes; the exporter's hang watch
# captures every thread's stack (GET /debug/stacks). `crash-loop`: the run saves a checkpoint
# at the onset step, then crashes every CRASH_EVERY steps and resumes from that checkpoint, so
# it never gets past it; the goodput's restart bucket grows while every step looks healthy.
def all_reduce_that_one_rank_never_joins(event):
    event.wait()  # stands in for a collective a dead peer never enters


def hang_block(exporter, interval: float) -> None:
    """The hang scenario's trainer from its onset: stuck in update_actor for good. The hang
    watch's thresholds are scaled to the demo's step interval so the stacks come in seconds."""
    import threading

    from ..core.thresholds import HangThresholds
    wait = max(10 * interval, 5.0)
    exporter.hang_watch.thresholds = HangThresholds(phase_floor_s=wait, phase_no_history_s=wait,
                                                    stall_floor_s=2 * wait)
    if exporter.url:
        print(f"stuck inside update_actor: stacks in about {wait:.0f} s at "
              f"{exporter.url[:-len('/metrics')]}/debug/stacks", flush=True)
    with exporter.timer("update_actor"):
        all_reduce_that_one_rank_never_joins(threading.Event())


BLOCKING = {"hang": hang_block}  # scenario -> what the demo loop runs instead of a frame
