"""A healthy on-policy GRPO run, one step at a time: the values it logs (the Miles lab ranges,
the posttrain metrics reference and the veRL metrics guide where the lab has none), its phases,
NVML time by phase and one colocated vLLM engine.

healthy(step, rng) returns one step's values. Keys are series with their labels less `run`; a
key starting with '+' is a per-step counter increment, '~' a rate (per second) integrated into a
counter, '@' a value sampled per scrape (hardware), '%' a value that depends on the phase open at
the scrape, '=' no series but facts the run generator and pathologies read (exporter/alerts/sim/run.py
says how each becomes scrape samples).
"""
from __future__ import annotations

import math
import random

HEALTHY_STEPS = 200
GIB = 2.0 ** 30
LIMIT = 80 * GIB
ENGINE = 'model_name="Qwen/Qwen2.5-7B-Instruct", engine="0"'          # vLLM's own labels
ENGINE_UP = 'up{job="rl-rollout-engine", instance="engine-0:8000"}'       # its scrape target
# vLLM's e2e latency buckets (exporter/catalog/engines.py); a run keeps those around its latencies
VLLM_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
LATENCY_SIGMA = math.log(2.5) / 2.326    # lognormal: true p99/p50 = 2.5
RANKS = 4                      # every rank exports (one scrape target each); rank 0 is the run's target


def uniform(rng, lo, hi):
    return rng.uniform(lo, hi)


def log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def healthy(k: int, rng: random.Random, span: int = HEALTHY_STEPS, step_s: int = 120) -> dict:
    """Values a healthy on-policy GRPO run logs at step k (1-based). Keys are series with their
    labels less `run`; a key starting with '+' is a per-step counter increment, '~' a rate
    (per second) integrated into a counter, '@' a value sampled per scrape (hardware), '%' a value
    that depends on the phase open at the scrape (module docstring). `step_s`: the nominal step."""
    p = k / span
    reward = min(0.87, max(0.53, 0.6 + 0.2 * p + uniform(rng, -0.08, 0.08)))   # the Miles lab ranges: 0.53-0.87
    kl = 0.015 + 0.04 * p + uniform(rng, 0, 0.003)  # the RL metrics dictionary: KL grows slowly and steadily, 0.01-0.1
    v = {
        "rl_training_step": k,
        "rl_step_duration_seconds": 0,  # filled by the generator
        "rl_reward": reward,
        "rl_score": reward,
        'rl_score{stat="max"}': 1.0,
        'rl_score{stat="min"}': 0.0,
        "rl_entropy": 0.9 - 0.3 * p + uniform(rng, -0.05, 0.05),
        "rl_grad_norm": log_uniform(rng, 0.35, 4.95),                              # the Miles lab ranges
        "rl_loss": uniform(rng, -0.02, 0.02),
        "rl_policy_loss": uniform(rng, -0.02, 0.02),
        "rl_policy_kl": uniform(rng, 0.001, 0.01),                                # the veRL metrics guide healthy
        "rl_reference_kl": kl,
        # the per-token KL tail is heavy: kl_max/kl_mean over 100 on most steps
        'rl_reference_kl{stat="max"}': kl * log_uniform(rng, 20, 400),
        "rl_policy_clip_ratio": 0.0,                                         # the Miles lab ranges: 0 at every step
        'rl_config_value{parameter="n_mini"}': 1,
        'rl_config_value{parameter="max_grad_norm"}': 1.0,
        'rl_config_value{parameter="max_response_length"}': 1024,
        "rl_response_length_tokens": uniform(rng, 396, 787),                      # the Miles lab ranges
        "rl_response_truncated_ratio": uniform(rng, 0.02, 0.43),                  # the Miles lab ranges
        'rl_groups{outcome="informative"}': rng.randint(14, 28),
        'rl_groups{outcome="total"}': 32,
        "rl_group_zero_std_ratio": uniform(rng, 0.1, 0.55),
        "rl_train_inference_logprob_abs_diff": uniform(rng, 0.0136, 0.0164),      # the Miles lab ranges
        "rl_train_inference_kl": uniform(rng, 0.00063, 0.00076),                  # the Miles lab ranges
        "rl_sample_staleness_steps": uniform(rng, 0, 2),
        'rl_dp_rank_tokens{stat="balanced_max"}': 124000 + uniform(rng, 0, 8000),
        'rl_dp_rank_tokens{stat="balanced_min"}': 118000 + uniform(rng, 0, 8000),
        # before balancing the split is far worse; only the balanced partition matters
        'rl_dp_rank_tokens{stat="max"}': 260000 + uniform(rng, 0, 20000),
        'rl_dp_rank_tokens{stat="min"}': 60000 + uniform(rng, 0, 8000),
        'rl_mfu_ratio{role="actor", phase="train"}': uniform(rng, 0.33, 0.45),
        "rl_gpu_throughput_tokens_per_second": uniform(rng, 900, 1300),
        'rl_gpu_memory_peak_bytes{kind="allocated"}': 0.7 * LIMIT + uniform(rng, 0, 0.03) * LIMIT,
        'rl_turns{stat="max"}': rng.randint(5, 9),
        "rl_turns": uniform(rng, 2.5, 3.5),
        "rl_value_explained_variance": min(0.8, -0.5 + 0.03 * k) + uniform(rng, -0.05, 0.05),
        "rl_preference_accuracy_ratio": min(0.92, 0.6 + 0.4 * p) + uniform(rng, -0.03, 0.03),
        "rl_preference_reward_margin": 0.5 + 1.5 * p + uniform(rng, -0.1, 0.1),
        "rl_validation_loss": 0.8 - 0.4 * p + uniform(rng, -0.001, 0.001),
        "rl_optimizer_consecutive_nonfinite_skips": 0,
        "+rl_optimizer_nonfinite_skips_total": 0,
        # the posttrain metrics reference: zero-gradient skips are expected in GRPO when every group of a batch ties
        "+rl_optimizer_zero_grad_skips_total": 1 if rng.random() < 0.08 else 0,
        '~hw_gpu_clock_event_seconds_total{reason="thermal"}': uniform(rng, 0, 0.03),
        '~hw_gpu_clock_event_seconds_total{reason="power"}': uniform(rng, 0.3, 0.9),  # at its cap: normal
        # the rollout engine pre-allocates its KV cache: NVML usage ~96 % all run long
        "@hw_gpu_memory_usage_bytes": 0.96 * LIMIT,
        "@hw_gpu_memory_limit_bytes": LIMIT,
        '@hw_gpu_clock_event_active{reason="software_power_cap"}': 1,
        '@hw_gpu_clock_event_active{reason="hardware_thermal_slowdown"}': 0,
    }
    for layer, level in (("0", 2.2), ("1", 3.1), ("2", 2.6), ("3", 3.8)):    # 64-128 experts
        v[f'rl_moe_load_imbalance_ratio{{layer="{layer}"}}'] = level * uniform(rng, 0.9, 1.1)
    if k % 20 == 0:                                                          # validation every 20 steps
        v['rl_validation_score{data_source="gsm8k", tier="core"}'] = 0.3 + 0.4 * p + uniform(rng, -0.02, 0.02)
    # a lone non-finite loss and grad norm that the guard skipped: must not page
    if k % 1000 == 150:
        v["rl_policy_loss"] = math.nan
        v["rl_grad_norm"] = math.inf
        v["+rl_optimizer_nonfinite_skips_total"] = 1
        v["rl_optimizer_consecutive_nonfinite_skips"] = 1
    v.update(_healthy_phases_and_engine(rng, step_s, v["rl_response_truncated_ratio"]))
    # drawn last, so adding them left every value above as it was
    v["rl_value_clip_ratio"] = uniform(rng, 0.0, 0.2)          # veRL metrics guide: usually < 0.2
    v["rl_policy_sequence_clip_ratio"] = 0.0               # on-policy: nothing clips
    v['rl_policy_clip_ratio{bound="dual"}'] = 0.0
    v["rl_train_inference_nonfinite_ratio"] = 0.0
    v["rl_learning_rate"] = 1e-6 * (0.55 + 0.45 * math.cos(math.pi * p))   # cosine, floor 0.1
    # the run's lifecycle (a state set): running since it began
    for state in ("starting", "running", "paused", "finished", "crashed", "restarting"):
        v[f'rl_run_state{{state="{state}"}}'] = int(state == "running")
    v["rl_run_state_change_timestamp_seconds"] = 0.0
    # posttrain PPO: policy and critic optimizers advance by the same minibatches per step
    v['+rl_optimizer_steps_total{role="policy"}'] = 4
    v['+rl_optimizer_steps_total{role="critic"}'] = 4
    # per-rank speed of each phase (each rank exports: _rank_durations), from a generator of
    # its own so the values above stay as they were: uneven sequence lengths after balancing
    rr = random.Random(rng.random())
    v["=ranks"] = [{"gen": uniform(rr, 0.85, 1.15), "update_actor": uniform(rr, 0.9, 1.1)} for _ in range(RANKS)]
    return v




def _latency_buckets(step_s: int) -> list[float]:
    """vLLM's buckets around a run's request latencies (median ~0.175 step): fewer series."""
    m = 0.175 * step_s
    return [b for b in VLLM_LATENCY_BUCKETS if m / 4 <= b <= 16 * m] + [math.inf]


def latency_counts(step_s: int, n: int, median: float, tail: float = 0.0, tail_x: float = 12.0) -> dict:
    """Cumulative bucket increments for n requests: lognormal around `median` (p99/p50 = 2.5),
    a share `tail` of them stragglers at about tail_x times the median."""
    def cdf(le):
        if le == math.inf:
            return 1.0
        body = 0.5 * (1 + math.erf(math.log(le / median) / LATENCY_SIGMA / math.sqrt(2)))
        slow = 0.5 * (1 + math.erf(math.log(le / (tail_x * median)) / 0.2 / math.sqrt(2)))
        return (1 - tail) * body + tail * slow
    le_text = lambda le: "+Inf" if le == math.inf else f"{le:g}"
    return {f'+vllm:e2e_request_latency_seconds_bucket{{{ENGINE}, le="{le_text(le)}"}}': round(n * cdf(le))
            for le in _latency_buckets(step_s)}


def _healthy_phases_and_engine(rng: random.Random, step_s: int, truncated: float) -> dict:
    """Phases, NVML time by phase and one colocated vLLM engine (drawn after every other value,
    so adding them left the other series as they were)."""
    gen = uniform(rng, 0.4, 0.6)
    busy = uniform(rng, 0.5, 0.9)                      # NVML busy share in gen (a tuned rollout: 50-90 %)
    requests = 256                                # 32 prompts x 8 samples per step
    aborted = sum(rng.random() < 0.01 for _ in range(requests))            # ~1 % aborts
    length = round((requests - aborted) * truncated)
    v = {
        "=phases": [("gen", gen), ("update_actor", 1 - gen)],
        '%hw_gpu_phase_busy_seconds_total{gpu="0", rank="0"}': {"gen": busy, "update_actor": 0.92},
        '%hw_gpu_phase_idle_seconds_total{gpu="0", rank="0"}': {"gen": 1 - busy, "update_actor": 0.08},
        "%" + ENGINE_UP: 1,
        # colocated engine: it generates during gen and sleeps (frees its batch) otherwise
        f"%vllm:num_requests_running{{{ENGINE}}}": {"gen": rng.randint(20, 60), "": 0},
        f"%vllm:num_requests_waiting{{{ENGINE}}}": {"gen": rng.randint(0, 10), "": 0},
        f"vllm:kv_cache_usage_perc{{{ENGINE}}}": uniform(rng, 0.5, 0.85),
        # a couple of preemptions per hour
        f"+vllm:num_preemptions_total{{{ENGINE}}}": 1 if rng.random() < step_s / 1800 else 0,
        f'+vllm:request_success_total{{{ENGINE}, finished_reason="stop"}}': requests - aborted - length,
        f'+vllm:request_success_total{{{ENGINE}, finished_reason="length"}}': length,
        f'+vllm:request_success_total{{{ENGINE}, finished_reason="abort"}}': aborted,
    }
    median = uniform(rng, 0.15, 0.2) * step_s         # request latency; true p99/p50 = 2.5
    v.update({"=step_s": step_s, "=latency_median": median, "=requests": requests})
    v.update(latency_counts(step_s, requests, median))
    return v
