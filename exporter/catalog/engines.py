"""Rollout engines' own series: vLLM and SGLang serve these on their /metrics.

They are not ours (the engines name them, with a colon), so they are not catalog metrics; they
are listed here so alerts and dashboards that read them are checked against the engines' own
definitions, like every other name. Names, kinds, label names and buckets are copied from:

    vLLM    vllm/v1/metrics/loggers.py (PrometheusStatLogger), commit 005a810bc40f
    SGLang  python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector,
            TokenizerMetricsCollector), commit 00ae9c1590d2; scheduler labels from
            scheduler_metrics_mixin (model_name, engine_type, tp_rank, pp_rank, moe_ep_rank)

Only the series the alerts, dashboards and docs use are listed. prometheus_client appends
`_total` to a counter's name (vllm:num_preemptions is scraped as vllm:num_preemptions_total;
SGLang's counters already end in _total) and `_bucket/_sum/_count` to histograms.
The `run` label is not theirs: the PodMonitor (or scrape config) attaches it.
"""
from __future__ import annotations

from dataclasses import dataclass

VLLM_LABELS = ("model_name", "engine")
SGLANG_SCHEDULER_LABELS = ("model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank")
SGLANG_TOKENIZER_LABELS = ("model_name",)

# vLLM's build_1_2_5_buckets(max_model_len) for max_model_len=4096, and its latency buckets.
_VLLM_LEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)
_VLLM_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                         60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
_VLLM_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                      7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_VLLM_TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
                      7.5, 10.0, 20.0, 40.0, 80.0)
_SGLANG_E2E_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400,
                       600, 1200, 1800, 2400)
_SGLANG_TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
# vLLM's FinishReason strings at that commit (later versions add error, repetition).
VLLM_FINISH_REASONS = ("stop", "length", "abort")


@dataclass(frozen=True)
class EngineMetric:
    engine: str            # vllm | sglang
    name: str              # as declared in the engine's source
    kind: str              # gauge | counter | histogram
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()

    @property
    def exposed(self) -> tuple[str, ...]:
        """Sample names a scrape returns (prometheus_client's suffix rules)."""
        if self.kind == "counter":
            base = self.name[:-6] if self.name.endswith("_total") else self.name
            return (base + "_total",)
        if self.kind == "histogram":
            return tuple(self.name + s for s in ("_bucket", "_sum", "_count"))
        return (self.name,)


def _v(name, kind, help, extra=(), buckets=()):
    return EngineMetric("vllm", name, kind, help, VLLM_LABELS + tuple(extra), tuple(buckets))


def _s(name, kind, help, labels=SGLANG_SCHEDULER_LABELS, buckets=()):
    return EngineMetric("sglang", name, kind, help, labels, tuple(buckets))


VLLM: list[EngineMetric] = [
    _v("vllm:num_requests_running", "gauge", "Number of requests in model execution batches."),
    _v("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed."),
    _v("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage."),
    _v("vllm:gpu_cache_usage_perc", "gauge",
       "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead."),
    _v("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine."),
    _v("vllm:prompt_tokens", "counter", "Number of prefill tokens processed."),
    _v("vllm:generation_tokens", "counter", "Number of generation tokens processed."),
    _v("vllm:request_success", "counter", "Count of successfully processed requests.",
       extra=("finished_reason",)),
    _v("vllm:request_generation_tokens", "histogram", "Number of generation tokens processed.",
       buckets=_VLLM_LEN_BUCKETS),
    _v("vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.",
       buckets=_VLLM_TTFT_BUCKETS),
    _v("vllm:time_per_output_token_seconds", "histogram",
       "Histogram of time per output token in seconds.", buckets=_VLLM_TPOT_BUCKETS),
    _v("vllm:e2e_request_latency_seconds", "histogram", "Histogram of e2e request latency in seconds.",
       buckets=_VLLM_LATENCY_BUCKETS),
    _v("vllm:request_queue_time_seconds", "histogram",
       "Histogram of time spent in WAITING phase for request.", buckets=_VLLM_LATENCY_BUCKETS),
]

SGLANG: list[EngineMetric] = [
    _s("sglang:num_running_reqs", "gauge", "The number of running requests."),
    _s("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue."),
    _s("sglang:token_usage", "gauge", "The token usage."),
    _s("sglang:gen_throughput", "gauge", "The generation throughput (token/s)."),
    _s("sglang:max_total_num_tokens", "gauge", "Maximum total number of tokens in the KV cache pool."),
    _s("sglang:num_retracted_requests_total", "counter", "Total number of retracted requests."),
    _s("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
       SGLANG_TOKENIZER_LABELS),
    _s("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
       SGLANG_TOKENIZER_LABELS),
    _s("sglang:num_requests_total", "counter", "Number of requests processed.", SGLANG_TOKENIZER_LABELS),
    _s("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.",
       SGLANG_TOKENIZER_LABELS),
    _s("sglang:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.",
       SGLANG_TOKENIZER_LABELS, _SGLANG_TTFT_BUCKETS),
    _s("sglang:e2e_request_latency_seconds", "histogram",
       "Histogram of End-to-end request latency in seconds", SGLANG_TOKENIZER_LABELS, _SGLANG_E2E_BUCKETS),
]

ENGINE_METRICS: dict[str, EngineMetric] = {m.name: m for m in VLLM + SGLANG}
NAMES: frozenset[str] = frozenset(n for m in ENGINE_METRICS.values() for n in m.exposed)
