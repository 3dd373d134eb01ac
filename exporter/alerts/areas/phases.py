"""Phases in progress, GPU time by phase and the rollout engines.

Engine series (vllm:*, sglang:*) are named in exporter/catalog/engines.py, copied from the
engines' source; they reach Prometheus with the run's `run` label through the PodMonitor
relabelling (docs/rollout-engines.md). Thresholds: the phases block of exporter/alerts/config.py.
"""
from __future__ import annotations

from ..config import Dur
from ..exprs import PAUSE_OPEN, R
from ..model import Alert

_ROLLOUT = '{{phase=~"{rollout_phases}"}}'


def _tail(metric: str) -> str:
    q = "histogram_quantile({q}, sum by (run, le) (rate(" + metric + "_bucket[{{engine_window}}])))"
    return q.format(q="0.99") + "\n/ " + q.format(q="0.5") + "\n> {long_tail_ratio}"


ALERTS: list[Alert] = [
    # A warning, not a page: "6x the phase's own median" is a statistical judgement (a longer
    # response batch or a pause of the whole run also stretches an open phase). RLRunStalled
    # pages once no step advanced at all.
    Alert("RLPhaseHung", "warning",
          "(time() - max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds"
          '{{phase!~"{pause_phases}"}}))\n'
          "> on (run, instance, phase) (\n"
          "  clamp_min({phase_hung_factor} * max by (run, instance, phase) "
          "(rl_phase_recent_median_duration_seconds), {phase_hung_floor_seconds})\n"
          "  or on (run, instance, phase)\n"
          "  (0 * max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds) "
          "+ {phase_hung_no_history_seconds})\n)\n"
          # a pause of the whole run (heat guard) holds every open phase: not a hang
          "unless on (run) max by (run) (" + PAUSE_OPEN + " > 0)",
          Dur(120), "A training phase has been open far longer than it usually takes: hung inside a step?",
          f"Run {R}: phase {{{{ $labels.phase }}}} has been open for {{{{ $value | humanizeDuration }}}}, "
          "over [[phase_hung_factor]]x its recent median and the floor."),
    Alert("RLRolloutGPUIdle", "warning",
          "(\n"
          f"  sum by (run) (rate(hw_gpu_phase_idle_seconds_total{_ROLLOUT}[{{engine_window}}]))\n"
          f"  / (sum by (run) (rate(hw_gpu_phase_idle_seconds_total{_ROLLOUT}[{{engine_window}}]))\n"
          f"     + sum by (run) (rate(hw_gpu_phase_busy_seconds_total{_ROLLOUT}[{{engine_window}}])))\n"
          "  > {rollout_gpu_idle_ratio}\n)\n"
          "or\n(\n"
          "  1 - clamp_max(sum by (run) (\n"
          "    max_over_time(vllm:num_requests_running[{engine_window}])\n"
          "    or max_over_time(sglang:num_running_reqs[{engine_window}])), 1) == 1\n"
          "  and on (run)\n"
          f"  max by (run) (time() - rl_phase_in_progress_start_timestamp_seconds{_ROLLOUT})"
          " > {rollout_engine_idle_seconds}\n)",
          Dur(600), "Rollout GPUs sit idle while the run waits for rollouts.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of rollout GPU time is idle while a rollout "
          "phase is in progress (NVML per-phase time, or engines running no request)."),
    Alert("RLRolloutAbortsHigh", "warning",
          "(\n"
          '  sum by (run) (increase(vllm:request_success_total{{finished_reason="abort"}}[{abort_window}]))\n'
          "  / sum by (run) (increase(vllm:request_success_total[{abort_window}])) > {engine_abort_ratio}\n"
          "  and on (run) sum by (run) (increase(vllm:request_success_total[{abort_window}]))"
          " >= {engine_abort_min_requests}\n)\nor\n(\n"
          "  sum by (run) (increase(sglang:num_aborted_requests_total[{abort_window}]))\n"
          "  / (sum by (run) (increase(sglang:num_requests_total[{abort_window}]))\n"
          "     + sum by (run) (increase(sglang:num_aborted_requests_total[{abort_window}])))"
          " > {engine_abort_ratio}\n"
          "  and on (run) (sum by (run) (increase(sglang:num_requests_total[{abort_window}]))\n"
          "     + sum by (run) (increase(sglang:num_aborted_requests_total[{abort_window}])))"
          " >= {engine_abort_min_requests}\n)",
          Dur(300), "The rollout engines abort a large share of requests.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of rollout requests were aborted over the "
          "abort window."),
    Alert("RLRolloutKVCacheThrash", "warning",
          "(\n"
          "  max by (run, instance) (avg_over_time(vllm:kv_cache_usage_perc[{engine_window}]))"
          " > {kv_cache_high_ratio}\n"
          "  and on (run, instance)\n"
          "  sum by (run, instance) (increase(vllm:num_preemptions_total[{engine_window}]))"
          " > {kv_thrash_preemptions}\n)\nor\n(\n"
          "  max by (run, instance) (avg_over_time(sglang:token_usage[{engine_window}]))"
          " > {kv_cache_high_ratio}\n"
          "  and on (run, instance)\n"
          "  sum by (run, instance) (increase(sglang:num_retracted_requests_total[{engine_window}]))"
          " > {kv_thrash_preemptions}\n)",
          Dur(600), "A rollout engine's KV cache is full and it keeps preempting requests.",
          f"Run {R}: engine {{{{ $labels.instance }}}} KV cache is {{{{ $value | humanizePercentage }}}} "
          "full while it keeps preempting (recomputing) requests."),
    Alert("RLRolloutLongTail", "warning",
          "(\n" + _tail("vllm:e2e_request_latency_seconds") + "\n)\nor\n(\n" +
          _tail("sglang:e2e_request_latency_seconds") + "\n)",
          Dur(900), "A few very long rollout requests hold up every step (p99 far above p50).",
          f"Run {R}: rollout request latency p99 is {{{{ printf \"%.1f\" $value }}}}x the median."),
    # Every engine target of the run down: one engine of several down while the others serve
    # slows the rollout (RLThroughputDrop, RLRolloutGPUIdle) but is not fatal, so it does not page.
    Alert("RLRolloutEngineDown", "critical",
          "count by (run) (up{{{engine_job_selector}}} == 0)\n"
          "unless on (run) max by (run) (up{{{engine_job_selector}}} == 1)\n"
          "and on (run)\ncount by (run) (rl_run_info)",
          Dur(300), "Every rollout engine of a run is down while its trainer is still running.",
          f"Run {R}: all {{{{ $value }}}} rollout engine targets are down while the trainer still exports.",
          why_critical="Certain: every scrape of every engine target of the run that discovery still "
                       "lists failed. Persistent: 5 minutes, as RLExporterDown. Fatal: the trainer "
                       "waits on rollouts that no engine will produce. One engine of several down "
                       "while the others serve does not page."),
]
