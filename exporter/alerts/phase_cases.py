"""promtool cases for the phase, GPU-time-by-phase and rollout-engine alerts (same format as
exporter/alerts/testcases.py CASES, which merges them): a series that fires each alert, and healthy or
near-miss series that must stay silent. Engine series carry the label names vLLM/SGLang set
(exporter/catalog/engines.py) plus the `run` label the scrape attaches."""
from __future__ import annotations


def s(name: str, values: str, run: str = "r", **labels) -> dict:
    lab = ", ".join([f'run="{run}"'] + [f'{k}="{v}"' for k, v in labels.items()])
    return {"series": f"{name}{{{lab}}}", "values": values}


START = "rl_phase_in_progress_start_timestamp_seconds"
MEDIAN = "rl_phase_recent_median_duration_seconds"
VLLM = {"model_name": "Qwen/Qwen2.5-7B-Instruct", "engine": "0"}
GPU0 = {"gpu": "0", "uuid": "GPU-0", "gpu_model": "NVIDIA H100 80GB HBM3", "rank": "0"}


def _hist(metric: str, per_min: dict, n: int, **labels) -> list[dict]:
    """Cumulative histogram buckets growing by per_min[le] every minute."""
    return [s(f"{metric}_bucket", f"0+{c}x{n}", le=le, **labels) for le, c in per_min.items()]


# per minute: 100 requests; healthy p50 5 s, p99 19 s; tail: 4 % run 2-4 min (p99 210 s)
_HEALTHY = {"5": 50, "10": 90, "20": 100, "120": 100, "240": 100, "+Inf": 100}
_TAIL = {"5": 50, "10": 94, "20": 95, "120": 96, "240": 100, "+Inf": 100}

PHASE_CASES: dict[str, dict] = {
    "RLPhaseHung": dict(
        # gen usually takes 2 min; it opened at t=10m and never closed: 6 x 2 min = 12 min
        fire=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen")],
        at="35m", labels={"phase": "gen"},
        desc="Run r: phase gen has been open for 25m 0s, over 6x its recent median and the floor.",
        # a 5-minute phase open for 20 min: over the floor but under 6x its median
        silent=[s(START, "_x9 600x30", phase="update_actor"), s(MEDIAN, "300x40", phase="update_actor"),
                # a phase that closed (NaN) after a long run is not open
                s(START, "_x2 120x20 " + " ".join(["NaN"] * 10), phase="gen"), s(MEDIAN, "60x33", phase="gen")],
        silent_at="30m"),
    "RLPhaseHungFirstOccurrence": dict(
        alert="RLPhaseHung",
        # no closed occurrence yet: the no-history limit (1 h) applies
        fire=[s(START, "0x80", phase="gen")], at="70m", labels={"phase": "gen"},
        desc="Run r: phase gen has been open for 1h 10m 0s, over 6x its recent median and the floor.",
        silent=[s(START, "0x50", phase="gen")], silent_at="50m"),
    "RLRolloutGPUIdle": dict(
        # 90 % of the GPU time sampled during gen is idle
        fire=[s("hw_gpu_phase_idle_seconds_total", "0+54x40", phase="gen", **GPU0),
              s("hw_gpu_phase_busy_seconds_total", "0+6x40", phase="gen", **GPU0)],
        at="30m", desc="Run r: 90% of rollout GPU time is idle while a rollout phase is in progress "
                       "(NVML per-phase time, or engines running no request).",
        # 15 % idle in gen; an idle GPU in another phase (weight sync) does not count
        silent=[s("hw_gpu_phase_idle_seconds_total", "0+9x40", phase="gen", **GPU0),
                s("hw_gpu_phase_busy_seconds_total", "0+51x40", phase="gen", **GPU0),
                s("hw_gpu_phase_idle_seconds_total", "0+60x40", phase="update_weights", **GPU0),
                s("hw_gpu_phase_busy_seconds_total", "0x40", phase="update_weights", **GPU0)],
        silent_at="30m"),
    "RLRolloutGPUIdleEnginesEmpty": dict(
        alert="RLRolloutGPUIdle",
        # disaggregated rollout: the trainer is in gen since t=0, the engines run nothing
        fire=[s(START, "0x40", phase="gen"), s("vllm:num_requests_running", "200x5 0x35", **VLLM)],
        at="30m", desc="Run r: 100% of rollout GPU time is idle while a rollout phase is in progress "
                       "(NVML per-phase time, or engines running no request).",
        silent=[s(START, "0x40", phase="gen"), s("vllm:num_requests_running", "200x40", **VLLM)],
        silent_at="30m"),
    "RLRolloutAbortsHigh": dict(
        # 10 aborts per 100 finished: 9.1 %
        fire=[s("vllm:request_success_total", "0+100x50", finished_reason="stop", **VLLM),
              s("vllm:request_success_total", "0+10x50", finished_reason="abort", **VLLM)],
        at="45m", desc="Run r: 9.091% of rollout requests were aborted over the abort window.",
        # 1 % aborted; and 50 % aborted but only 60 requests in 30 min (under the minimum)
        silent=[s("vllm:request_success_total", "0+100x50", finished_reason="stop", **VLLM),
                s("vllm:request_success_total", "0+1x50", finished_reason="abort", **VLLM),
                s("vllm:request_success_total", "0+1x50", run="low", finished_reason="stop", **VLLM),
                s("vllm:request_success_total", "0+1x50", run="low", finished_reason="abort", **VLLM)],
        silent_at="45m"),
    "RLRolloutAbortsHighSGLang": dict(
        alert="RLRolloutAbortsHigh",
        fire=[s("sglang:num_requests_total", "0+90x50", model_name="m"),
              s("sglang:num_aborted_requests_total", "0+10x50", model_name="m")],
        at="45m", desc="Run r: 10% of rollout requests were aborted over the abort window.",
        silent=[s("sglang:num_requests_total", "0+99x50", model_name="m"),
                s("sglang:num_aborted_requests_total", "0+1x50", model_name="m")],
        silent_at="45m"),
    "RLRolloutKVCacheThrash": dict(
        fire=[s("vllm:kv_cache_usage_perc", "0.97x40", **VLLM),
              s("vllm:num_preemptions_total", "0+5x40", **VLLM)],
        at="30m", desc="Run r: engine  KV cache is 97% full while it keeps preempting (recomputing) "
                       "requests.",
        # vLLM fills its KV cache by design: full without preemptions is healthy
        silent=[s("vllm:kv_cache_usage_perc", "0.97x40", **VLLM),
                s("vllm:num_preemptions_total", "3x40", **VLLM),
                s("vllm:kv_cache_usage_perc", "0.6x40", run="q", **VLLM),
                s("vllm:num_preemptions_total", "0+5x40", run="q", **VLLM)],
        silent_at="30m"),
    "RLRolloutLongTail": dict(
        fire=_hist("vllm:e2e_request_latency_seconds", _TAIL, 40, **VLLM),
        at="35m", desc="Run r: rollout request latency p99 is 42.0x the median.",
        silent=_hist("vllm:e2e_request_latency_seconds", _HEALTHY, 40, **VLLM), silent_at="35m"),
    "RLRolloutEngineDown": dict(
        fire=[{"series": 'up{job="rl-rollout-engine", instance="e:8000", run="r"}', "values": "1x10 0x20"},
              {"series": 'rl_run_info{job="rl-exporter", instance="t:9464", run="r", framework="verl"}',
               "values": "1x30"}],
        at="25m", desc="Run r: all 1 rollout engine targets are down while the trainer still exports.",
        # the whole run ended: trainer and engine gone together
        silent=[{"series": 'up{job="rl-rollout-engine", instance="e:8000", run="r"}', "values": "1x10 0x20"},
                {"series": 'rl_run_info{job="rl-exporter", instance="t:9464", run="r"}',
                 "values": "1x10 _x20"}],
        silent_at="25m"),
    # one engine of two down while the other serves: slower rollouts, not a page
    "RLRolloutEngineDown (one engine of several)": dict(
        alert="RLRolloutEngineDown",
        fire=[{"series": 'up{job="rl-rollout-engine", instance="e0:8000", run="r"}', "values": "1x10 0x20"},
              {"series": 'up{job="rl-rollout-engine", instance="e1:8000", run="r"}', "values": "1x12 0x18"},
              {"series": 'rl_run_info{job="rl-exporter", instance="t:9464", run="r", framework="verl"}',
               "values": "1x30"}],
        at="25m", desc="Run r: all 2 rollout engine targets are down while the trainer still exports.",
        silent=[{"series": 'up{job="rl-rollout-engine", instance="e0:8000", run="r"}', "values": "1x10 0x20"},
                {"series": 'up{job="rl-rollout-engine", instance="e1:8000", run="r"}', "values": "1x30"},
                {"series": 'rl_run_info{job="rl-exporter", instance="t:9464", run="r", framework="verl"}',
                 "values": "1x30"}],
        silent_at="25m"),
    # a pause of the whole run (the Miles lab's heat guard, timed as a phase) holds gen open
    "RLPhaseHung (a heat-guard pause is not a hang)": dict(
        alert="RLPhaseHung",
        fire=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen")],
        at="35m", labels={"phase": "gen"},
        desc="Run r: phase gen has been open for 25m 0s, over 6x its recent median and the floor.",
        silent=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen"),
                s(START, "_x9 " + " ".join(["NaN"] * 15) + " 1500x20", phase="heat_guard")],
        silent_at="35m"),
}
