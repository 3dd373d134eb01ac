"""Phases in progress, GPU time by phase and the rollout engines.

Engine series (vllm:*, sglang:*) are named in exporter/catalog/engines.py, copied from the
engines' source; they reach Prometheus with the run's `run` label through the PodMonitor
relabelling (docs/rollout-engines.md). Each alert's thresholds are its own; engine_window and
pause_phases are shared (exporter/alerts/config.py). The plain cadence rows below edit the simulated
run's phase timeline and engine series (exporter/alerts/sim/).
"""
from __future__ import annotations

import math

from ..config import Dur
from ..exprs import RUN_FINISHED, RUN_PAUSED
from ..model import Alert, Case, Threshold
from ..series import GPU0, LATENCY_HEALTHY, LATENCY_TAIL, MEDIAN, START, VLLM, hist, life, s
from ..sim.healthy import ENGINE, ENGINE_UP, latency_counts, uniform
from ..sim.pathology import Pathology

_ROLLOUT = '{{phase=~"{rollout_phases}"}}'


def _tail(metric: str) -> str:
    q = "histogram_quantile({q}, sum by (run, le) (rate(" + metric + "_bucket[{{engine_window}}])))"
    return q.format(q="0.99") + "\n/ " + q.format(q="0.5") + "\n> {long_tail_ratio}"


_RUNNING = f"%vllm:num_requests_running{{{ENGINE}}}"
_WAITING = f"%vllm:num_requests_waiting{{{ENGINE}}}"
_BUSY = '%hw_gpu_phase_busy_seconds_total{gpu="0", rank="0"}'
_IDLE = '%hw_gpu_phase_idle_seconds_total{gpu="0", rank="0"}'
_OUTCOME = '+vllm:request_success_total{%s, finished_reason="%s"}'


def _hung_gen(v, i, rng):
    """gen opens and never closes; the GPUs sit at 0 % and the engine runs nothing."""
    v["=phases"] = [("gen", math.inf)]
    v[_BUSY] = {"gen": 0.0, "update_actor": 0.92}
    v[_IDLE] = {"gen": 1.0, "update_actor": 0.08}
    v[_RUNNING] = v[_WAITING] = {"": 0}


def _idle_rollout(v, i, rng):
    """gen waits on something else (a reward or tool server): GPUs 2-8 % busy, engine empty."""
    busy = uniform(rng, 0.02, 0.08)
    v[_BUSY] = {"gen": busy, "update_actor": 0.92}
    v[_IDLE] = {"gen": 1 - busy, "update_actor": 0.08}
    v[_RUNNING] = v[_WAITING] = {"": 0}


def _aborts(v, i, rng):
    n = v["=requests"]
    aborted = round(n * uniform(rng, 0.09, 0.11))
    length = round((n - aborted) * v["rl_response_truncated_ratio"])
    v[_OUTCOME % (ENGINE, "abort")], v[_OUTCOME % (ENGINE, "length")] = aborted, length
    v[_OUTCOME % (ENGINE, "stop")] = n - aborted - length


def _kv_thrash(v, i, rng):
    v[f"vllm:kv_cache_usage_perc{{{ENGINE}}}"] = uniform(rng, 0.96, 0.99)
    v[f"+vllm:num_preemptions_total{{{ENGINE}}}"] = round(v["rl_step_duration_seconds"] / 60 * uniform(rng, 2, 4))


def _long_tail(v, i, rng):
    """4 % of requests straggle at ~12x the median latency: histogram p99/p50 ~ 9-13."""
    v.update(latency_counts(v["=step_s"], v["=requests"], v["=latency_median"], tail=0.04))


def _engine_down(v, i, rng):
    """The engine dies as the step starts: its target is down, its series are gone, and the
    trainer waits in gen (still exporting)."""
    _hung_gen(v, i, rng)
    for key in list(v):
        if "vllm:" in key:
            v[key] = None
    v["%" + ENGINE_UP] = 0


_PHASES = ("phases and GPU time by phase come from the simulated run's step timeline (exporter/alerts/sim/run.py) ('=phases', '%' keys); "
           "the demo writes them as side series (exporter/demo/scenarios.py phase_series)")
_ENGINE = ("the rollout engine's own series: the demo's engine scenarios serve the stand-in engine "
           "beside the trainer (exporter/demo/engine.py, exporter/demo/beside.py)")


ALERTS: list[Alert] = [
    # A warning, not a page: "6x the phase's own median" is a statistical judgement (a longer
    # response batch or a pause of the whole run also stretches an open phase). RLRunStalled
    # pages once no step advanced at all.
    Alert(
        name="RLPhaseHung", severity="warning", for_=Dur(120),
        expr="(time() - max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds"
             '{{phase!~"{pause_phases}"}}))\n'
             "> on (run, instance, phase) (\n"
             "  clamp_min({phase_hung_factor} * max by (run, instance, phase) "
             "(rl_phase_recent_median_duration_seconds), {phase_hung_floor_seconds})\n"
             "  or on (run, instance, phase)\n"
             "  (0 * max by (run, instance, phase) (rl_phase_in_progress_start_timestamp_seconds) "
             "+ {phase_hung_no_history_seconds})\n)\n"
             # a pause of the whole run (the run's state paused, or a heat-guard phase open)
             # holds every open phase: not a hang
             "unless on (run) " + RUN_PAUSED,
        thresholds={
            "phase_hung_factor": Threshold(
                6,
                "A phase is hung when open longer than max(floor, this factor x its median over its "
                "last 20 occurrences). Miles' advisory uses 6x and 30 min."),
            "phase_hung_floor_seconds": Threshold(
                Dur(600),
                "The floor is 10 min, so a hang inside gen pages before RLRunStalled (max(30 min, 5 "
                "x longest step) + 5 min) on the usual 1-5 min steps."),
            "phase_hung_no_history_seconds": Threshold(
                Dur(3600),
                "A phase with no closed occurrence yet (the first step) waits this long: first steps "
                "compile and warm up."),
        },
        summary="A training phase has been open far longer than it usually takes: hung inside a step?",
        description="Run {{ $labels.run }}: phase {{ $labels.phase }} has been open for {{ $value | "
                    "humanizeDuration }}, over {phase_hung_factor}x its recent median and the floor.",
        meaning="a `timer(phase)` has been open longer than max({phase_hung_floor_seconds}, "
                "{phase_hung_factor} x the phase's median over its last 20 occurrences), or "
                "{phase_hung_no_history_seconds} for a phase that never closed before, held {for}. A "
                "pause of the whole run (its state paused, remembered {lifecycle_window}, or a phase "
                "named {pause_phases} open) holds every phase and does not count. A warning: RLRunStalled pages once no step advances.",
        impact="if it is a hang, the step cannot finish: GPUs are held and nothing trains. A ticket, "
               "not a page: 6x a median is a judgement (a batch of much longer responses stretches "
               "`gen` too). It fires before RLRunStalled, which pages once no step advances.",
        diagnosis="first which phase (`gen`: the rollout engine or a reward call; "
                  "`update_actor`/`old_log_prob`: a collective) and the per-phase GPU time of every "
                  "rank (`hw_gpu_phase_busy_seconds_total`): all ranks idle in `gen` = waiting on "
                  "the engine (see RLRolloutEngineDown, the engine dashboard row); one rank busy and "
                  "the rest idle = the straggler the collective waits for. Next `py-spy dump` the "
                  "trainer.",
        mitigation="kill and resume from the last checkpoint; set NCCL and rollout request timeouts "
                   "so a hang becomes an error; if a phase is legitimately slower now (longer "
                   "responses), raise `phase_hung_factor`.",
        time_to_fire="max(10 min, 6 x median) + 2 min, well before RLRunStalled (step-times per "
                     "cadence: the cadence matrix in docs/alerts.md). A checkpoint save is a phase "
                     "too (`save_checkpoint`); its first occurrence waits the 1 h no-history limit. "
                     "A heat-guard pause reported as a phase (`exporter.timer(\"heat_guard\")`) "
                     "holds it silent.",
        cases=[
            Case(
                # gen usually takes 2 min; it opened at t=10m and never closed: 6 x 2 min = 12 min
                fire=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen")],
                at="35m", labels={"phase": "gen"},
                desc="Run r: phase gen has been open for 25m 0s, over 6x its recent median and the floor.",
                # a 5-minute phase open for 20 min: over the floor but under 6x its median
                silent=[s(START, "_x9 600x30", phase="update_actor"), s(MEDIAN, "300x40", phase="update_actor"),
                        # a phase that closed (NaN) after a long run is not open
                        s(START, "_x2 120x20 " + " ".join(["NaN"] * 10), phase="gen"), s(MEDIAN, "60x33", phase="gen")],
                silent_at="30m"),
            Case(
                title="no closed occurrence yet: the no-history limit",
                # no closed occurrence yet: the no-history limit (1 h) applies
                fire=[s(START, "0x80", phase="gen")], at="70m", labels={"phase": "gen"},
                desc="Run r: phase gen has been open for 1h 10m 0s, over 6x its recent median and the floor.",
                silent=[s(START, "0x50", phase="gen")], silent_at="50m"),
            # a pause of the whole run (the Miles lab's heat guard, timed as a phase) holds gen open
            Case(
                title="a heat-guard pause is not a hang",
                fire=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen")],
                at="35m", labels={"phase": "gen"},
                desc="Run r: phase gen has been open for 25m 0s, over 6x its recent median and the floor.",
                silent=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen"),
                        s(START, "_x9 " + " ".join(["NaN"] * 15) + " 1500x20", phase="heat_guard")],
                silent_at="35m"),
            # a pause the run declares through its lifecycle (rl_run_state paused)
            Case(
                title="a declared pause is not a hang",
                fire=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen"),
                      *life([("running", 50, 0)])],
                at="35m", labels={"phase": "gen"},
                desc="Run r: phase gen has been open for 25m 0s, over 6x its recent median and the floor.",
                silent=[s(START, "_x9 600x40", phase="gen"), s(MEDIAN, "120x50", phase="gen"),
                        *life([("running", 25, 0), ("paused", 25, 1500)])],
                silent_at="35m"),
        ],
        # Phases and rollout engines: engine series and NVML time are wall-clock windows (10 min,
        # abort window 30 min) and `for:` 2-15 min, so at short steps they take more steps to fire.
        cadence=Pathology(_hung_gen, {"30s": 30, "2m": 9, "10m": 6}, stop=True,
                          note="step-times since the hung step began (a floor of 10 min + for 2 min)",
                          why=_PHASES),
    ),
    Alert(
        name="RLRolloutGPUIdle", severity="warning", for_=Dur(600),
        expr="(\n"
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
        thresholds={
            "rollout_phases": Threshold(
                "gen|generate|generation|rollout|generate_sequences",
                "Phase names that mean \"generating rollouts\" (veRL gen, slime/Miles rollout, AReaL "
                "rollout, TRL generate)."),
            "rollout_gpu_idle_ratio": Threshold(
                0.8,
                "Idle fraction of NVML-sampled GPU time during rollout phases. 0.8 is this project's "
                "heuristic for \"waiting, not generating\" (a tuned rollout runs 50-90 % busy)."),
            "rollout_engine_idle_seconds": Threshold(
                Dur(300),
                "... or a rollout phase open this long while every engine of the run runs 0 requests."),
        },
        summary="Rollout GPUs sit idle while the run waits for rollouts.",
        description="Run {{ $labels.run }}: {{ $value | humanizePercentage }} of rollout GPU time is "
                    "idle while a rollout phase is in progress (NVML per-phase time, or engines "
                    "running no request).",
        meaning="during rollout phases ({rollout_phases}) more than {rollout_gpu_idle_ratio} of the "
                "NVML-sampled GPU time over {engine_window} was idle, or a rollout phase has been "
                "open {rollout_engine_idle_seconds} while every vLLM/SGLang engine of the run runs "
                "no request. Held {for}.",
        impact="the run waits for rollouts that nobody is generating: throughput falls or the step "
               "hangs.",
        diagnosis="first the engine row of the GPU dashboard: running requests 0 with waiting > 0 = "
                  "the engine is stuck; both 0 = requests never arrive (router, reward server, "
                  "dataloader); running high but GPU idle = the engine runs on other GPUs than the "
                  "ones sampled (disaggregated setup: read the engine's own series). Next the long "
                  "tail (RLRolloutLongTail): a few long requests keep the batch small.",
        mitigation="restart the stuck engine; raise concurrency or use partial rollouts / "
                   "over-sampling for long tails.",
        time_to_fire="10 min window + 10 min `for` (step counts per cadence: the cadence matrix in "
                     "docs/alerts.md).",
        cases=[
            Case(
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
            Case(
                title="every engine of the run runs no request",
                # disaggregated rollout: the trainer is in gen since t=0, the engines run nothing
                fire=[s(START, "0x40", phase="gen"), s("vllm:num_requests_running", "200x5 0x35", **VLLM)],
                at="30m", desc="Run r: 100% of rollout GPU time is idle while a rollout phase is in progress "
                               "(NVML per-phase time, or engines running no request).",
                silent=[s(START, "0x40", phase="gen"), s("vllm:num_requests_running", "200x40", **VLLM)],
                silent_at="30m"),
        ],
        cadence=Pathology(_idle_rollout, {"30s": 32, "2m": 12, "10m": 3},
                          note="steps; wall clock: 10 min window + for 10 min", why=_PHASES),
    ),
    Alert(
        name="RLRolloutAbortsHigh", severity="warning", for_=Dur(300),
        expr="(\n"
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
        thresholds={
            "abort_window": Threshold(
                Dur(1800),
                "Miles' advisory: aborts > 5 % over 30 min with >= 100 requests."),
            "engine_abort_ratio": Threshold(
                0.05,
                "Miles' advisory: more than 5 % of requests aborted ..."),
            "engine_abort_min_requests": Threshold(
                100,
                "... with at least 100 requests in the window (Miles' advisory)."),
        },
        summary="The rollout engines abort a large share of requests.",
        description="Run {{ $labels.run }}: {{ $value | humanizePercentage }} of rollout requests "
                    "were aborted over the abort window.",
        meaning="over {abort_window} more than {engine_abort_ratio} of the run's rollout requests "
                "ended aborted, with at least {engine_abort_min_requests} requests. Held {for}.",
        impact="aborted samples are wasted generation, and a biased batch when aborts hit the long "
               "responses first.",
        diagnosis="first client timeouts in the trainer's rollout code (an abort is the client "
                  "giving up) and engine restarts; next KV-cache pressure (RLRolloutKVCacheThrash) "
                  "and request latency p99.",
        mitigation="raise the client timeout, lower concurrency, or fix the crashing engine.",
        time_to_fire="30 min window + 5 min `for` (step counts per cadence: the cadence matrix in "
                     "docs/alerts.md).",
        cases=[
            Case(
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
            Case(
                title="SGLang",
                fire=[s("sglang:num_requests_total", "0+90x50", model_name="m"),
                      s("sglang:num_aborted_requests_total", "0+10x50", model_name="m")],
                at="45m", desc="Run r: 10% of rollout requests were aborted over the abort window.",
                silent=[s("sglang:num_requests_total", "0+99x50", model_name="m"),
                        s("sglang:num_aborted_requests_total", "0+1x50", model_name="m")],
                silent_at="45m"),
        ],
        cadence=Pathology(_aborts, {"30s": 34, "2m": 14, "10m": 5},
                          note="steps; wall clock: 30 min window + for 5 min", why=_ENGINE),
    ),
    Alert(
        name="RLRolloutKVCacheThrash", severity="warning", for_=Dur(600),
        expr="(\n"
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
        thresholds={
            "kv_cache_high_ratio": Threshold(
                0.9,
                "Miles flags KV > 90 % with concurrency < 50 % of the cap; the cap (max_num_seqs) is "
                "not in the engines' exposition ..."),
            "kv_thrash_preemptions": Threshold(
                10,
                "... so preemptions (vLLM) / retractions (SGLang) in the window stand in for \"the "
                "cache, not the cap, limits concurrency\"."),
        },
        summary="A rollout engine's KV cache is full and it keeps preempting requests.",
        description="Run {{ $labels.run }}: engine {{ $labels.instance }} KV cache is {{ $value | "
                    "humanizePercentage }} full while it keeps preempting (recomputing) requests.",
        meaning="an engine's KV cache averaged over {kv_cache_high_ratio} for {engine_window} while "
                "it preempted more than {kv_thrash_preemptions} requests in that window. Held {for}.",
        impact="preempted requests are recomputed: generation throughput drops and latency grows.",
        diagnosis="first running vs. waiting requests (many waiting, few running = memory-bound); "
                  "next response lengths (longer responses need more KV) and "
                  "`gpu_memory_utilization`.",
        mitigation="lower `max_num_seqs` / concurrency, raise `gpu_memory_utilization`, shard wider "
                   "(tensor parallel), or cap response length.",
        time_to_fire="10 min window + 10 min `for` (step counts per cadence: the cadence matrix in "
                     "docs/alerts.md).",
        cases=[
            Case(
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
        ],
        cadence=Pathology(_kv_thrash, {"30s": 34, "2m": 13, "10m": 5},
                          note="steps; wall clock: 10 min window + for 10 min", why=_ENGINE),
    ),
    Alert(
        name="RLRolloutLongTail", severity="warning", for_=Dur(900),
        expr="(\n" + _tail("vllm:e2e_request_latency_seconds") + "\n)\nor\n(\n" +
             _tail("sglang:e2e_request_latency_seconds") + "\n)",
        thresholds={
            "long_tail_ratio": Threshold(
                5,
                "p99 over p50 of end-to-end request latency. No source gives a bound; a lognormal "
                "healthy rollout measures 2-3 in the stand-in engine, 5 means stragglers hold the "
                "step."),
        },
        summary="A few very long rollout requests hold up every step (p99 far above p50).",
        description="Run {{ $labels.run }}: rollout request latency p99 is {{ printf \"%.1f\" $value "
                    "}}x the median.",
        meaning="end-to-end request latency p99 over {engine_window} is more than {long_tail_ratio} "
                "x its p50, held {for}.",
        impact="a synchronous step waits for its slowest request: GPUs idle at the end of every "
               "rollout.",
        diagnosis="first the finish reasons (`length` share = responses running to the limit) and "
                  "the response-length distribution; next whether the tail is queueing "
                  "(`vllm:request_queue_time_seconds`) or generation.",
        mitigation="cap response length, use partial rollouts or over-sampling with early cut-off, "
                   "or asynchronous rollout.",
        time_to_fire="10 min window + 15 min `for` (step counts per cadence: the cadence matrix in "
                     "docs/alerts.md). A healthy lognormal rollout (true p99/p50 2.5) reads 2.2-3.6 "
                     "through vLLM's coarse buckets.",
        cases=[
            Case(
                fire=hist("vllm:e2e_request_latency_seconds", LATENCY_TAIL, 40, **VLLM),
                at="35m", desc="Run r: rollout request latency p99 is 42.0x the median.",
                silent=hist("vllm:e2e_request_latency_seconds", LATENCY_HEALTHY, 40, **VLLM), silent_at="35m"),
        ],
        cadence=Pathology(_long_tail, {"30s": 33, "2m": 13, "10m": 5},
                          note="steps; wall clock: 10 min window + for 15 min", why=_ENGINE),
    ),
    # Every engine target of the run down: one engine of several down while the others serve
    # slows the rollout (RLThroughputDrop, RLRolloutGPUIdle) but is not fatal, so it does not page.
    Alert(
        name="RLRolloutEngineDown", severity="critical", for_=Dur(300),
        expr="count by (run) (up{{{engine_job_selector}}} == 0)\n"
             "unless on (run) max by (run) (up{{{engine_job_selector}}} == 1)\n"
             "and on (run)\ncount by (run) (rl_run_info)\n"
             # a finished run's sidecar keeps serving after its engines went away
             "unless on (run)\n" + RUN_FINISHED,
        summary="Every rollout engine of a run is down while its trainer is still running.",
        description="Run {{ $labels.run }}: all {{ $value }} rollout engine targets are down while "
                    "the trainer still exports.",
        why_critical="Certain: every scrape of every engine target of the run that discovery still "
                     "lists failed. What else could take every engine down: the run ended (trainer and "
                     "engines gone together: no `rl_run_info`; or a sidecar still serving a run whose "
                     "last state is finished) does not page; an engine restart (a weight reload, a "
                     "crash the engine manager heals) is shorter than 5 minutes; a pause that stops the "
                     "engines keeps them down for its length and pages if longer than 5 minutes, which "
                     "no pause the sources describe does (the heat guard pauses the run, its engines "
                     "stay up). Persistent: 5 minutes, as RLExporterDown. Fatal: the trainer waits on "
                     "rollouts that no engine will produce. One engine of several down while the "
                     "others serve does not page.",
        meaning="every rollout-engine target of a run (a job matching `engine_job_selector`) failed "
                "every scrape {for} while the run's trainer still exports (`rl_run_info` present) and "
                "the run has not finished (its last known state, remembered {lifecycle_window}, or its last step at the configured "
                "total). One engine of several down while the others serve does not page.",
        impact="the trainer will wait on generation that cannot come. Paging. One engine of several "
               "down while the others serve does not page: rollouts slow down (RLThroughputDrop, "
               "RLRolloutGPUIdle); find the dead engine in the engine row of the GPU dashboard.",
        diagnosis="first the engine pod or process (OOM kill, CUDA error, NCCL weight-sync failure); "
                  "next the scrape path (port, PodMonitor selector) if the engine is alive.",
        mitigation="restart the engine (the trainer may need a restart too if it holds dead "
                   "connections); set request timeouts in the rollout client.",
        time_to_fire="5 min `for` (step-times per cadence: the cadence matrix in docs/alerts.md).",
        cases=[
            Case(
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
            Case(
                title="one engine of several",
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
            # the run finished; its sidecar keeps serving the last values, the engines are gone
            Case(
                title="a finished run whose exporter keeps serving",
                fire=[{"series": 'up{job="rl-rollout-engine", instance="e:8000", run="r"}', "values": "1x10 0x20"},
                      {"series": 'rl_run_info{job="rl-exporter", instance="t:9464", run="r", framework="verl"}',
                       "values": "1x30"}, *life([("running", 31, 0)])],
                at="25m", desc="Run r: all 1 rollout engine targets are down while the trainer still exports.",
                silent=[{"series": 'up{job="rl-rollout-engine", instance="e:8000", run="r"}', "values": "1x10 0x20"},
                        {"series": 'rl_run_info{job="rl-exporter", instance="t:9464", run="r", framework="verl"}',
                         "values": "1x30"}, *life([("running", 10, 0), ("finished", 21, 600)])],
                silent_at="25m"),
        ],
        cadence=Pathology(_engine_down, {"30s": 14, "2m": 6, "10m": 4}, stop=True,
                          note="step-times since the engine went down (for 5 min)", why=_ENGINE),
    ),
]
