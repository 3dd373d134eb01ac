"""GPU and efficiency: per-GPU NVML series (OTel hw.gpu.* names, see names.py), next to
MFU, tokens/s per GPU and each phase's share of the step."""
from __future__ import annotations

from . import names as n
from .common import GPU, RATE, TIMER, bars, mean, q, qi, sel, timeline, ts
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
           "train above 0.3 (the veRL metrics guide, section 11.1, heuristic), 0.5-0.6 typical (the RL metrics dictionary "
           "section 10); rollout lower.",
           q(sel("rl_mfu_ratio"), "{{run}} {{role}} {{phase}} ({{source}})"),
           unit="percentunit", min=0, max=1, thresholds=[(None, "red"), (0.3, "green")]),
        ts("Tokens/s per GPU", "Tokens per second per GPU.",
           "steady; below 50 for a 7B model is slow (the veRL metrics guide, section 11.2, heuristic).",
           q(mean("rl_gpu_throughput_tokens_per_second")), unit="short", min=0),
        bars("Phase share of step time", "Each phase's share of the last step's wall time.",
             "the longest bar is the bottleneck; no share is unhealthy by itself (Miles' train phase, "
             "with the scoring, is 0.66 of a healthy step; the veRL metrics guide: gen 30-40 %, "
             "update_actor 25-35 % typical).",
             qi(STEP_SHARE, "{{run}} {{phase}}"), unit="percentunit", min=0, max=1,
             thresholds=[(None, "blue")]),
    ]),
]

# ------------------------------------------------------------------ GPU time by phase, rollout engines
# Per-phase GPU seconds come from the NVML sampler charging each sample to the open timer; the
# engine panels read vLLM's and SGLang's own series (names: exporter/catalog/engines.py), which
# carry `run` through the scrape's relabelling but not our `job`, so they are scoped without it.
E = 'namespace=~"$namespace", run=~"$run"'
ENGINE = ("Prometheus scrapes the rollout engines' /metrics with the run label "
          "(docs/rollout-engines.md)")
ROLLOUT = 'phase=~"gen|generate|generation|rollout|generate_sequences"'


def _phase_rate(metric: str, extra: str = "") -> str:
    return f"sum by (run, phase) (rate({sel(metric, extra)}[{RATE}]))"


def _quantile(q_: float, metric: str) -> str:
    return f"histogram_quantile({q_}, sum by (run, le) (rate({metric}_bucket{{{E}}}[{RATE}])))"


IDLE_BY_PHASE = (f"{_phase_rate(n.GPU_PHASE_IDLE)}\n/ ({_phase_rate(n.GPU_PHASE_IDLE)}"
                 f" + {_phase_rate(n.GPU_PHASE_BUSY)})")

ROWS += [
    Row("GPU time by phase", [
        ts("Idle GPU fraction by phase", "Share of each phase's NVML-sampled GPU time in which no "
           "kernel ran (idle / (idle + busy) seconds per phase).",
           "low in update phases; in gen it depends on the engine (this project's heuristic: "
           "above 0.8 for 10 min is RLRolloutGPUIdle).",
           q(IDLE_BY_PHASE, "{{run}} {{phase}}"), unit="percentunit", min=0, max=1, gate=GPU,
           thresholds=[(None, "green"), (0.5, "yellow"), (0.8, "red")]),
        bars("GPU seconds by phase, last hour", "Busy and idle GPU seconds per phase over the last "
             "hour, all GPUs of the run.",
             "most seconds in gen and update_actor, mostly busy; large idle bars are waiting.",
             qi(f"sum by (run, phase) (increase({sel(n.GPU_PHASE_BUSY)}[1h]))",
                "{{run}} {{phase}} busy"),
             qi(f"sum by (run, phase) (increase({sel(n.GPU_PHASE_IDLE)}[1h]))",
                "{{run}} {{phase}} idle"), unit="s", min=0, gate=GPU),
        ts("Phases in progress vs their median", "How long each open phase has been open, next to "
           "the median of its recent occurrences.",
           "open time stays under a few medians; a line climbing past 6x the median and 10 min is "
           "a hang (RLPhaseHung).",
           q(f"time() - {sel('rl_phase_in_progress_start_timestamp_seconds')}", "{{run}} {{phase}} open",
             gate=TIMER),
           q(sel("rl_phase_recent_median_duration_seconds"), "{{run}} {{phase}} median"),
           unit="s", min=0),
        ts("GPU memory peak by phase", "Highest device memory in use sampled during the latest "
           "occurrence of each phase.",
           "below the limit with headroom; the phase that peaks is the one to shrink.",
           q(f"max by (run, phase) ({sel(n.GPU_PHASE_MEMORY_PEAK)})", "{{run}} {{phase}}"),
           unit="bytes", min=0, gate=GPU),
    ]),
    Row("Rollout engines (vLLM / SGLang)", [
        timeline("Training phase in progress", "Which timer phase the trainer has open, on the "
                 "same time axis as the engine panels below.",
                 "gen and update phases alternate; one phase that never ends is a hang.",
                 q(f"count by (run, phase) ({sel('rl_phase_in_progress_start_timestamp_seconds')} > 0)",
                   "{{run}} {{phase}}"),
                 unit="none", gate=TIMER, width=24,
                 mappings=[{"type": "value", "options": {"1": {"text": "open", "color": "blue"}}}],
                 thresholds=[(None, "blue")]),
        ts("Running and waiting requests", "Requests in the engines' batches and in their queues "
           "(vLLM num_requests_running/waiting, SGLang num_running_reqs/num_queue_reqs).",
           "running near the concurrency cap during gen, 0 between rollouts; a growing queue with "
           "few running is KV-cache pressure.",
           q(f"sum by (run) (vllm:num_requests_running{{{E}}})", "{{run}} vLLM running"),
           q(f"sum by (run) (vllm:num_requests_waiting{{{E}}})", "{{run}} vLLM waiting"),
           q(f"sum by (run) (sglang:num_running_reqs{{{E}}})", "{{run}} SGLang running"),
           q(f"sum by (run) (sglang:num_queue_reqs{{{E}}})", "{{run}} SGLang waiting"),
           unit="short", min=0, gate=ENGINE),
        ts("KV-cache usage", "KV-cache blocks in use per engine (vLLM kv_cache_usage_perc, "
           "SGLang token_usage).",
           "high during gen is by design; above 0.9 together with preemptions is thrash "
           "(Miles' advisory: KV > 90 % with concurrency under half the cap).",
           q(f"max by (run, instance) (vllm:kv_cache_usage_perc{{{E}}})", "{{run}} {{instance}}"),
           q(f"max by (run, instance) (sglang:token_usage{{{E}}})", "{{run}} {{instance}}"),
           unit="percentunit", min=0, max=1, gate=ENGINE,
           thresholds=[(None, "green"), (0.9, "red")]),
        ts("Preemptions per second", "Requests preempted (vLLM num_preemptions) or retracted "
           "(SGLang num_retracted_requests) per second: their KV is dropped and recomputed.",
           "0; a steady rate means the cache is too small for the concurrency.",
           q(f"sum by (run) (rate(vllm:num_preemptions_total{{{E}}}[{RATE}]))", "{{run}} vLLM"),
           q(f"sum by (run) (rate(sglang:num_retracted_requests_total{{{E}}}[{RATE}]))", "{{run}} SGLang"),
           unit="reqps", min=0, gate=ENGINE),
        ts("Generation tokens/s", "Output tokens generated per second, all engines of the run.",
           "steady during gen, 0 between rollouts; a drop at constant running requests is slower "
           "decoding.",
           q(f"sum by (run) (rate(vllm:generation_tokens_total{{{E}}}[{RATE}]))", "{{run}} vLLM"),
           q(f"sum by (run) (rate(sglang:generation_tokens_total{{{E}}}[{RATE}]))", "{{run}} SGLang"),
           unit="short", min=0, gate=ENGINE),
        ts("Finish reasons", "Requests finished per second by reason: stop (EOS or stop string), "
           "length (hit max_tokens: the engine's view of truncation), abort.",
           "mostly stop; length tracks rl_response_truncated_ratio; abort under 5 % (Miles' advisory).",
           q(f"sum by (run, finished_reason) (rate(vllm:request_success_total{{{E}}}[{RATE}]))",
             "{{run}} {{finished_reason}}"),
           q(f"sum by (run) (rate(sglang:num_aborted_requests_total{{{E}}}[{RATE}]))", "{{run}} abort (SGLang)"),
           unit="reqps", min=0, stack=True, gate=ENGINE),
        ts("End-to-end latency p50 vs p99", "Request latency quantiles from the engines' "
           "e2e_request_latency_seconds histograms: the gap is the long tail that holds each step.",
           "p99 within a few times p50 (this project's heuristic: over 5x for 15 min is "
           "RLRolloutLongTail).",
           q(_quantile(0.5, "vllm:e2e_request_latency_seconds"), "{{run}} vLLM p50"),
           q(_quantile(0.99, "vllm:e2e_request_latency_seconds"), "{{run}} vLLM p99"),
           q(_quantile(0.5, "sglang:e2e_request_latency_seconds"), "{{run}} SGLang p50"),
           q(_quantile(0.99, "sglang:e2e_request_latency_seconds"), "{{run}} SGLang p99"),
           unit="s", min=0, gate=ENGINE, width=16),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-gpu", title="RL GPU and efficiency",
    description="Per-GPU NVML utilization, memory, power, temperature, clocks and throttle reasons "
                "beside MFU, tokens/s per GPU and the phase share of the step.",
    rows=ROWS, tags=["rl-exporter", "gpu"])
