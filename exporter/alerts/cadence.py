"""The cadence matrix: every warning/critical alert against a healthy run and its pathology at
30 s, 2 min and 10 min steps, as promtool unit tests (exporter/alerts/tests/cadence-*.test.yaml).

A run is data: HEALTHY(step, rng) gives the values a healthy GRPO run logs at a step (seed 002's
lab ranges, seed 000/004 where 002 has none), and PATHOLOGIES[alert] edits them from the onset
step on: mostly read (from_entry) from the one description of each pathology that the demo
reads too (exporter/demo/pathologies.py); a plain row edits this file's series and says why. The generator turns steps into scrape samples (two per step), with per-step jitter and
a checkpoint pause every CHECKPOINT_EVERY steps; counters accumulate, rates integrate over time.

Values that depend on where in the step a scrape falls come from the step's phase timeline:
- "=phases" (a '=' key is no series: it carries facts the generator and pathologies read) is
  the step's [(phase, share)]: each phase in turn for its share of the step's
  working time (its duration less a checkpoint pause; the pause is a `save_checkpoint` phase the
  generator adds). A share of math.inf never closes: the trainer hangs inside that phase (use
  with stop=True; the hung step is then the one in progress forever). From the timeline the
  generator derives, per scrape, what the exporter shows: rl_phase_in_progress_start_timestamp_seconds
  {phase} (the open phase's start, NaN once closed) and rl_phase_recent_median_duration_seconds
  {phase} (median of its last 20 closed occurrences).
- a key starting with '%' is read at each scrape from the step in progress (not the last completed
  one). Its value is a number, or a dict {phase: value, "": value while no phase is open}. A '%'
  counter (name ending in _total) holds {phase: rate per second while that phase is open}: it is
  integrated exactly over the timeline into one series per phase, labelled phase="..." (NVML
  busy/idle seconds attributed to the phase in progress).

Every run has RANKS ranks, each its own scrape target with rl_run_info{rank}: "=ranks" holds each
rank's speed per phase, and the generator turns it into per-rank rl_phase_duration_seconds{phase}
and rl_step_duration_seconds (a synchronous run: update_actor waits for the slowest rank's gen).

Each cadence file holds:
- one healthy run of HEALTHY_STEPS steps: no alert of any severity fires at any evaluation;
- per alert, the healthy run with the pathology from ONSET on: the alert fires, and the number
  of pathological steps it took (MEASURED, written by `python -m exporter.alerts cadence --measure`) is
  asserted exactly and must be within the alert's stated budget.

To add an alert's rows: add from_entry(...) or a Pathology to PATHOLOGIES (and any series it
reads to HEALTHY),
run `python -m exporter.alerts cadence --measure`, then `python -m exporter.alerts test-file`.
"""
from __future__ import annotations

import bisect
import json
import math
import random
import re
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from exporter import rules as shipped
from exporter.demo import pathologies as shared
from .rules import ALERTS
from .recordings import alert_metrics
from .render import yaml_text
from .paths import RULES_FROM_TESTS

HERE = Path(__file__).resolve().parent
MEASURED_FILE = HERE / "tests" / "cadence-steps.json"
CADENCES = {"30s": 30, "2m": 120, "10m": 600}
HEALTHY_STEPS = 200
ONSET = 60                     # first pathological step: past warm-up, baseline filled
CHECKPOINT_EVERY = 40          # a checkpoint pause every 40 steps ...
CHECKPOINT_PAUSE = (3, 300)    # ... of max(3 steps, 300 s)
# One ordinary restart: the trainer dies after step 125 and resumes from the checkpoint at step
# 120 (down for a checkpoint pause's time), redoes 121-125 and moves on. A restart is the step
# going back, and a new process: the exporter's counters start again.
HEALTHY_RESTART = (125, 120)
CRASH_EVERY = 4                # a crash loop (RLRestartWithoutProgress): dies every 4 steps
FRAMES = "rl_exporter_frames_received_total"
SAMPLES_PER_STEP = {"30s": 1, "2m": 2, "10m": 2}   # a 30 s, 1 min, 5 min scrape
GIB = 2.0 ** 30
LIMIT = 80 * GIB
ENGINE = 'model_name="Qwen/Qwen2.5-7B-Instruct", engine="0"'          # vLLM's own labels
ENGINE_UP = 'up{job="rl-rollout-engine", instance="engine-0:8000"}'       # its scrape target
# vLLM's e2e latency buckets (exporter/catalog/engines.py); a run keeps those around its latencies
VLLM_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
LATENCY_SIGMA = math.log(2.5) / 2.326    # lognormal: true p99/p50 = 2.5
RANKS = 4                      # every rank exports (one scrape target each); rank 0 is the run's target
ALWAYS = {"rl_training_step", "rl_training_step_timestamp_seconds", "rl_step_duration_seconds", "up",
          "rl_run_info"}


def _u(rng, lo, hi):
    return rng.uniform(lo, hi)


def _logu(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def healthy(k: int, rng: random.Random, span: int = HEALTHY_STEPS, step_s: int = 120) -> dict:
    """Values a healthy on-policy GRPO run logs at step k (1-based). Keys are series with their
    labels less `run`; a key starting with '+' is a per-step counter increment, '~' a rate
    (per second) integrated into a counter, '@' a value sampled per scrape (hardware), '%' a value
    that depends on the phase open at the scrape (module docstring). `step_s`: the nominal step."""
    p = k / span
    reward = min(0.87, max(0.53, 0.6 + 0.2 * p + _u(rng, -0.08, 0.08)))   # seed 002: 0.53-0.87
    kl = 0.015 + 0.04 * p + _u(rng, 0, 0.003)  # seed 001: KL grows slowly and steadily, 0.01-0.1
    v = {
        "rl_training_step": k,
        "rl_step_duration_seconds": 0,  # filled by the generator
        "rl_reward": reward,
        "rl_score": reward,
        'rl_score{stat="max"}': 1.0,
        'rl_score{stat="min"}': 0.0,
        "rl_entropy": 0.9 - 0.3 * p + _u(rng, -0.05, 0.05),
        "rl_grad_norm": _logu(rng, 0.35, 4.95),                              # seed 002
        "rl_loss": _u(rng, -0.02, 0.02),
        "rl_policy_loss": _u(rng, -0.02, 0.02),
        "rl_policy_kl": _u(rng, 0.001, 0.01),                                # seed 004 healthy
        "rl_reference_kl": kl,
        # the per-token KL tail is heavy: kl_max/kl_mean over 100 on most steps
        'rl_reference_kl{stat="max"}': kl * _logu(rng, 20, 400),
        "rl_policy_clip_ratio": 0.0,                                         # seed 002: 0 at every step
        'rl_config_value{parameter="n_mini"}': 1,
        'rl_config_value{parameter="max_grad_norm"}': 1.0,
        'rl_config_value{parameter="max_response_length"}': 1024,
        "rl_response_length_tokens": _u(rng, 396, 787),                      # seed 002
        "rl_response_truncated_ratio": _u(rng, 0.02, 0.43),                  # seed 002
        'rl_groups{outcome="informative"}': rng.randint(14, 28),
        'rl_groups{outcome="total"}': 32,
        "rl_group_zero_std_ratio": _u(rng, 0.1, 0.55),
        "rl_train_inference_logprob_abs_diff": _u(rng, 0.0136, 0.0164),      # seed 002
        "rl_train_inference_kl": _u(rng, 0.00063, 0.00076),                  # seed 002
        "rl_sample_staleness_steps": _u(rng, 0, 2),
        'rl_dp_rank_tokens{stat="balanced_max"}': 124000 + _u(rng, 0, 8000),
        'rl_dp_rank_tokens{stat="balanced_min"}': 118000 + _u(rng, 0, 8000),
        # before balancing the split is far worse; only the balanced partition matters
        'rl_dp_rank_tokens{stat="max"}': 260000 + _u(rng, 0, 20000),
        'rl_dp_rank_tokens{stat="min"}': 60000 + _u(rng, 0, 8000),
        'rl_mfu_ratio{role="actor", phase="train"}': _u(rng, 0.33, 0.45),
        "rl_gpu_throughput_tokens_per_second": _u(rng, 900, 1300),
        'rl_gpu_memory_peak_bytes{kind="allocated"}': 0.7 * LIMIT + _u(rng, 0, 0.03) * LIMIT,
        'rl_turns{stat="max"}': rng.randint(5, 9),
        "rl_turns": _u(rng, 2.5, 3.5),
        "rl_value_explained_variance": min(0.8, -0.5 + 0.03 * k) + _u(rng, -0.05, 0.05),
        "rl_preference_accuracy_ratio": min(0.92, 0.6 + 0.4 * p) + _u(rng, -0.03, 0.03),
        "rl_preference_reward_margin": 0.5 + 1.5 * p + _u(rng, -0.1, 0.1),
        "rl_validation_loss": 0.8 - 0.4 * p + _u(rng, -0.001, 0.001),
        "rl_optimizer_consecutive_nonfinite_skips": 0,
        "+rl_optimizer_nonfinite_skips_total": 0,
        # seed 000: zero-gradient skips are expected in GRPO when every group of a batch ties
        "+rl_optimizer_zero_grad_skips_total": 1 if rng.random() < 0.08 else 0,
        '~hw_gpu_clock_event_seconds_total{reason="thermal"}': _u(rng, 0, 0.03),
        '~hw_gpu_clock_event_seconds_total{reason="power"}': _u(rng, 0.3, 0.9),  # at its cap: normal
        # the rollout engine pre-allocates its KV cache: NVML usage ~96 % all run long
        "@hw_gpu_memory_usage_bytes": 0.96 * LIMIT,
        "@hw_gpu_memory_limit_bytes": LIMIT,
        '@hw_gpu_clock_event_active{reason="software_power_cap"}': 1,
        '@hw_gpu_clock_event_active{reason="hardware_thermal_slowdown"}': 0,
    }
    for layer, level in (("0", 2.2), ("1", 3.1), ("2", 2.6), ("3", 3.8)):    # 64-128 experts
        v[f'rl_moe_load_imbalance_ratio{{layer="{layer}"}}'] = level * _u(rng, 0.9, 1.1)
    if k % 20 == 0:                                                          # validation every 20 steps
        v['rl_validation_score{data_source="gsm8k", tier="core"}'] = 0.3 + 0.4 * p + _u(rng, -0.02, 0.02)
    # a lone non-finite loss and grad norm that the guard skipped: must not page
    if k % 1000 == 150:
        v["rl_policy_loss"] = math.nan
        v["rl_grad_norm"] = math.inf
        v["+rl_optimizer_nonfinite_skips_total"] = 1
        v["rl_optimizer_consecutive_nonfinite_skips"] = 1
    v.update(_healthy_phases_and_engine(rng, step_s, v["rl_response_truncated_ratio"]))
    # drawn last, so adding them left every value above as it was
    v["rl_value_clip_ratio"] = _u(rng, 0.0, 0.2)          # veRL metrics guide: usually < 0.2
    v["rl_policy_sequence_clip_ratio"] = 0.0               # on-policy: nothing clips
    v['rl_policy_clip_ratio{bound="dual"}'] = 0.0
    v["rl_train_inference_nonfinite_ratio"] = 0.0
    v["rl_learning_rate"] = 1e-6 * (0.55 + 0.45 * math.cos(math.pi * p))   # cosine, floor 0.1
    # posttrain PPO: policy and critic optimizers advance by the same minibatches per step
    v['+rl_optimizer_steps_total{role="policy"}'] = 4
    v['+rl_optimizer_steps_total{role="critic"}'] = 4
    # per-rank speed of each phase (each rank exports: _rank_durations), from a generator of
    # its own so the values above stay as they were: uneven sequence lengths after balancing
    rr = random.Random(rng.random())
    v["=ranks"] = [{"gen": _u(rr, 0.85, 1.15), "update_actor": _u(rr, 0.9, 1.1)} for _ in range(RANKS)]
    return v


def _rank_durations(v: dict, work: float, step: float) -> dict:
    """Each rank's phase durations and step duration for a step of `work` seconds (the "=phases"
    shares) in a synchronous run: a rank's gen takes its own time, and the gradient all-reduce
    in update_actor waits for the slowest rank's gen, so the faster ranks' wait lands there."""
    shares = dict(v.get("=phases") or [])
    if any(math.isinf(x) for x in shares.values()) or "=ranks" not in v:
        return {}
    gen = [shares.get("gen", 0) * work * r["gen"] for r in v["=ranks"]]
    out = {}
    for i, r in enumerate(v["=ranks"]):
        rank = f'instance="rank{i}"'
        out[f'rl_phase_duration_seconds{{{rank}, phase="gen"}}'] = gen[i]
        out[f'rl_phase_duration_seconds{{{rank}, phase="update_actor"}}'] = (
            shares.get("update_actor", 0) * work * r["update_actor"] + max(gen) - gen[i])
        out[f'rl_step_duration_seconds{{{rank}}}'] = step
    return out


def _latency_buckets(step_s: int) -> list[float]:
    """vLLM's buckets around a run's request latencies (median ~0.175 step): fewer series."""
    m = 0.175 * step_s
    return [b for b in VLLM_LATENCY_BUCKETS if m / 4 <= b <= 16 * m] + [math.inf]


def _latency_counts(step_s: int, n: int, median: float, tail: float = 0.0, tail_x: float = 12.0) -> dict:
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
    gen = _u(rng, 0.4, 0.6)
    busy = _u(rng, 0.5, 0.9)                      # NVML busy share in gen (a tuned rollout: 50-90 %)
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
        f"vllm:kv_cache_usage_perc{{{ENGINE}}}": _u(rng, 0.5, 0.85),
        # a couple of preemptions per hour
        f"+vllm:num_preemptions_total{{{ENGINE}}}": 1 if rng.random() < step_s / 1800 else 0,
        f'+vllm:request_success_total{{{ENGINE}, finished_reason="stop"}}': requests - aborted - length,
        f'+vllm:request_success_total{{{ENGINE}, finished_reason="length"}}': length,
        f'+vllm:request_success_total{{{ENGINE}, finished_reason="abort"}}': aborted,
    }
    median = _u(rng, 0.15, 0.2) * step_s         # request latency; true p99/p50 = 2.5
    v.update({"=step_s": step_s, "=latency_median": median, "=requests": requests})
    v.update(_latency_counts(step_s, requests, median))
    return v


@dataclass
class Pathology:
    """Edits a healthy step from the onset (i = 0, 1, ...). `budget`: the most pathological
    steps (or, with stop/down, step-times) the alert may take to fire, per cadence.
    A row is read from a shared pathology (`entry`, built by from_entry) or is a plain edit of
    this file's series; a plain row says `why` no shared entry describes it."""
    edit: Callable[[dict, int, random.Random], None] | None
    budget: dict[str, int]
    stop: bool = False        # the trainer stops stepping (the exporter stays up)
    down: bool = False        # the exporter's target goes down
    note: str = ""
    before: Callable[[dict, int, random.Random], None] | None = None   # every step k (k, not i)
    entry: str = ""           # the exporter/demo/pathologies.py entry it is read from
    why: str = ""
    loop: bool = False        # the logged step loops (budget in step-times, as stop/down)

    @property
    def timed(self) -> bool:
        return self.stop or self.down or self.loop


class SeriesView:
    """A healthy step's values seen in catalog series, for the shared pathologies' edits. A
    series this run does not carry is left out (the healthy run must carry what an alert reads);
    a counter's edit sets its per-step increment."""

    def __init__(self, v: dict):
        self.v = v

    def find(self, sel: str, create: bool = True) -> list[str]:
        name, labels = shared.parse(sel)
        out = []
        for key in self.v:
            if key[0] == "=":
                continue
            n, lab = _key(key)
            if n == name and (labels is None or shared.parse(f"{n}{{{lab}}}")[1] == labels):
                out.append(key)
        return out

    def value(self, key: str):
        return self.v.get(key)

    def put(self, key: str, value) -> None:
        if not isinstance(value, str):      # state series (strings) are not in these runs
            self.v[key] = value

    def bump(self, key: str, n) -> None:
        self.v[key] = n if key.startswith("+") else (self.v.get(key) or 0) + n

    def get(self, sel: str):
        keys = self.find(sel)
        return self.v[keys[0]] if keys else None

    def set(self, sel: str, value) -> None:
        for key in self.find(sel):
            self.put(key, value)


def from_entry(name: str, budget: dict[str, int], note: str = "") -> Pathology:
    """A row read from the shared pathology `name` (exporter/demo/pathologies.py): its edits from
    the onset, its baseline edits on every step, and whether the trainer stops or goes down."""
    p = shared.BY_NAME[name]

    def edit(v, i, rng):
        view = SeriesView(v)
        shared.apply(p.edits, view, i, rng)
        if p.call is not None:
            p.call(view, i, rng)

    def before(v, k, rng):
        shared.apply(p.before, SeriesView(v), k, rng)

    return Pathology(edit if (p.edits or p.call) else None, budget, stop=p.stop, down=p.down, note=note,
                     before=before if p.before else None, entry=name)


def _set(**kw):
    def edit(v, i, rng):
        for k, f in kw.items():
            key = k.replace("__", "")
            v[_KEYS.get(k, key)] = f(v, i, rng) if callable(f) else f
    return edit


_KEYS = {"kl_max": 'rl_reference_kl{stat="max"}', "layer2": 'rl_moe_load_imbalance_ratio{layer="2"}',
         "thermal": '~hw_gpu_clock_event_seconds_total{reason="thermal"}'}


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
    busy = _u(rng, 0.02, 0.08)
    v[_BUSY] = {"gen": busy, "update_actor": 0.92}
    v[_IDLE] = {"gen": 1 - busy, "update_actor": 0.08}
    v[_RUNNING] = v[_WAITING] = {"": 0}


def _aborts(v, i, rng):
    n = v["=requests"]
    aborted = round(n * _u(rng, 0.09, 0.11))
    length = round((n - aborted) * v["rl_response_truncated_ratio"])
    v[_OUTCOME % (ENGINE, "abort")], v[_OUTCOME % (ENGINE, "length")] = aborted, length
    v[_OUTCOME % (ENGINE, "stop")] = n - aborted - length


def _kv_thrash(v, i, rng):
    v[f"vllm:kv_cache_usage_perc{{{ENGINE}}}"] = _u(rng, 0.96, 0.99)
    v[f"+vllm:num_preemptions_total{{{ENGINE}}}"] = round(v["rl_step_duration_seconds"] / 60 * _u(rng, 2, 4))


def _long_tail(v, i, rng):
    """4 % of requests straggle at ~12x the median latency: histogram p99/p50 ~ 9-13."""
    v.update(_latency_counts(v["=step_s"], v["=requests"], v["=latency_median"], tail=0.04))


def _engine_down(v, i, rng):
    """The engine dies as the step starts: its target is down, its series are gone, and the
    trainer waits in gen (still exporting)."""
    _hung_gen(v, i, rng)
    for key in list(v):
        if "vllm:" in key:
            v[key] = None
    v["%" + ENGINE_UP] = 0


_PHASES = ("phases and GPU time by phase come from this file's step timeline ('=phases', '%' keys); "
           "the demo writes them as side series (exporter/demo/scenarios.py phase_series)")
_ENGINE = ("the rollout engine's own series: the demo's engine scenarios serve the stand-in engine "
           "beside the trainer (exporter/demo/engine.py, exporter/demo/beside.py)")

def _slow_rank(v, i, rng):
    """Rank 2's GPU runs at half speed (held down by its clocks, a slow host): its gen takes
    about twice the others', and they wait for it in update_actor."""
    v["=ranks"][2]["gen"] *= _u(rng, 1.9, 2.1)


_RANKS = "per-rank phase durations: this file's runs have 4 ranks, the demo's rank-straggler 3 " \
         "(exporter/demo/beside.py; tests/integration/test_straggler_gloo.py proves it on gloo ranks)"

PATHOLOGIES: dict[str, Pathology] = {
    "RLRunStalled": from_entry("stall", {"30s": 93, "2m": 32, "10m": 21}, note="step-times after the last step"),
    # the demo's crash-loop: from the onset every process resumes at the checkpoint before it.
    # A step window must hold 3 restarts and no new highest step for the whole `for:`; a window
    # holding about 3 (5 min at 30 s steps, 20 min at 2 min) flips between 2 and 3, so the next,
    # 4x longer one decides: its length past the first loop, then 10 min.
    "RLRestartWithoutProgress": Pathology(
        _set(rl_training_step=lambda v, i, r: ONSET + i % CRASH_EVERY), {"30s": 80, "2m": 64, "10m": 48},
        loop=True, note="step-times since the loop began (a crash every 4 steps; the window that "
                        "holds 3 restarts for good, then for 10 min)",
        why="the demo's crash-loop restarts whole processes (a new exporter each time); this run "
            "loops the logged step of one series, as a scrape of those processes shows it"),
    "RLExporterDown": from_entry("crash", {"30s": 15, "2m": 6, "10m": 4},
                                 note="step-times after the target went down"),
    "RLNonFiniteLoss": from_entry("nan-loss", {"30s": 17, "2m": 7, "10m": 13}),
    "RLOptimizerNonFiniteSkips": from_entry("nan-loss", {"30s": 10, "2m": 8, "10m": 8}),
    "RLNonFiniteGradSkipped": from_entry("nan-loss", {"30s": 8, "2m": 7, "10m": 7}),
    "RLRewardCollapse": from_entry("no-signal", {"30s": 10, "2m": 9, "10m": 7}),
    # a slow slide, under 1 % of the level a step: the step-to-step baseline follows it down
    "RLRewardDeclining": Pathology(_set(rl_reward=lambda v, i, r: v["rl_reward"] * max(0.3, 1 - 0.008 * i),
                                        rl_score=lambda v, i, r: v["rl_score"] * max(0.3, 1 - 0.008 * i)),
                                   {"30s": 66, "2m": 63, "10m": 62},
                                   why="the demo's reward-decline entry slides from the demo's own level "
                                       "(0.4); this run's healthy reward is 0.53-0.87, so the row slides "
                                       "that level by the same rate"),
    "RLEntropyCollapse": from_entry("entropy-collapse", {"30s": 12, "2m": 12, "10m": 10}),
    "RLPolicyKLSpike": from_entry("kl-spike", {"30s": 11, "2m": 10, "10m": 8}),
    "RLReferenceKLRunaway": from_entry("reference-kl-runaway", {"30s": 10, "2m": 9, "10m": 8}),
    # the heavy tail (kl_max ~100x kl_mean on a healthy step) jumps another ~15x
    "RLKLSingleTokenDominates": Pathology(_set(kl_max=lambda v, i, r: v["rl_reference_kl"] * _u(r, 1500, 2500),
                                               rl_grad_norm=lambda v, i, r: _u(r, 8, 12)),
                                          {"30s": 5, "2m": 4, "10m": 4},
                                          why="the demo's entry sets its own low KL baseline and a 5x grad-norm "
                                              "jump (an absolute one would also fire RLGradNormExplosion there); "
                                              "on this run's heavy-tailed KL it fires after 6-7 steps, budget 4-5"),
    "RLClipFractionHigh": from_entry("kl-spike", {"30s": 13, "2m": 12, "10m": 11}),
    "RLClipFractionNonZeroOnPolicy": from_entry("on-policy-clip", {"30s": 5, "2m": 4, "10m": 4}),
    "RLGradNormExplosion": from_entry("grad-explosion", {"30s": 11, "2m": 10, "10m": 8}),
    "RLGradNormZero": from_entry("no-signal", {"30s": 15, "2m": 13, "10m": 12}),
    "RLGradNormVanishing": from_entry("grad-vanishing", {"30s": 17, "2m": 16, "10m": 13}),
    "RLOptimizerStepsDiverge": from_entry("optimizer-diverge", {"30s": 5, "2m": 4, "10m": 4}),
    "RLValueClipFractionHigh": from_entry("value-clip", {"30s": 13, "2m": 12, "10m": 11}),
    "RLTrainInferenceNonFinite": from_entry("nonfinite-logprob", {"30s": 17, "2m": 16, "10m": 13}),
    "RLLearningRateZero": from_entry("lr-zero", {"30s": 17, "2m": 16, "10m": 13}),
    "RLNoInformativeGroups": from_entry("no-signal", {"30s": 16, "2m": 15, "10m": 12}),
    "RLResponseTruncationHigh": from_entry("length-truncation", {"30s": 10, "2m": 10, "10m": 8}),
    # answers grow 4 % a step into a 4,096-token limit, a third of them cut, the reward flat
    "RLResponseLengthRunaway": Pathology(
        _set(rl_response_length_tokens=lambda v, i, r: v["rl_response_length_tokens"] * (1 + 0.04 * i),
             rl_response_truncated_ratio=lambda v, i, r: _u(r, 0.25, 0.45),
             rl_reward=lambda v, i, r: _u(r, 0.55, 0.65), rl_score=lambda v, i, r: _u(r, 0.55, 0.65),
             **{'rl_config_value{parameter="max_response_length"}': 4096}),
        {"30s": 36, "2m": 40, "10m": 37},
        why="the demo's length-runaway entry grows into the demo's 1,024-token limit from its ~340 "
            "tokens; this run's healthy lengths (396-787) need a longer limit to double under it"),
    "RLLengthFallingRewardRising": from_entry("reward-hacking", {"30s": 8, "2m": 7, "10m": 6}),
    "RLValidationRegressing": from_entry("validation-regression", {"30s": 56, "2m": 55, "10m": 55}),
    "RLCriticNotLearning": from_entry("critic-not-learning", {"30s": 17, "2m": 16, "10m": 13}),
    "RLPreferenceOverfit": from_entry("dpo-overfit", {"30s": 17, "2m": 16, "10m": 13}),
    "RLRewardModelMarginCollapse": from_entry("rm-margin-collapse", {"30s": 16, "2m": 15, "10m": 12}),
    "RLTrainInferenceMismatchRising": from_entry("train-infer-mismatch", {"30s": 8, "2m": 7, "10m": 7}),
    "RLSampleStalenessHigh": from_entry("async-staleness", {"30s": 11, "2m": 11, "10m": 8}),
    "RLMoEExpertImbalance": Pathology(
        _set(layer2=lambda v, i, r: _u(r, 5.5, 6.5)), {"30s": 8, "2m": 8, "10m": 7},
        why="this run's MoE has 4 layers at 2.2-3.8 (64-128 experts); the demo's entry edits its layer 12"),
    "RLThroughputDrop": Pathology(
        _set(rl_gpu_throughput_tokens_per_second=lambda v, i, r: _u(r, 250, 350)), {"30s": 12, "2m": 12, "10m": 11},
        why="the demo's entry derives tokens/s from phase timings and step tokens, which this run does not log"),
    "RLGPUMemoryNearFull": from_entry("gpu-memory-full", {"30s": 5, "2m": 4, "10m": 4}),
    "RLGPUThrottling": Pathology(
        _set(thermal=lambda v, i, r: _u(r, 0.4, 0.6)), {"30s": 25, "2m": 8, "10m": 4},
        why="the thermal clock-event reason is NVML's: a side series in the demo, not an edit of its frames"),
    "RLMultiTurnRunaway": from_entry("multi-turn-runaway", {"30s": 5, "2m": 4, "10m": 4}),
    # Phases and rollout engines: engine series and NVML time are wall-clock windows (10 min,
    # abort window 30 min) and `for:` 2-15 min, so at short steps they take more steps to fire.
    "RLPhaseHung": Pathology(_hung_gen, {"30s": 30, "2m": 9, "10m": 6}, stop=True,
                             note="step-times since the hung step began (a floor of 10 min + for 2 min)",
                             why=_PHASES),
    "RLRolloutGPUIdle": Pathology(_idle_rollout, {"30s": 32, "2m": 12, "10m": 3},
                                  note="steps; wall clock: 10 min window + for 10 min", why=_PHASES),
    "RLRolloutAbortsHigh": Pathology(_aborts, {"30s": 34, "2m": 14, "10m": 5},
                                     note="steps; wall clock: 30 min window + for 5 min", why=_ENGINE),
    "RLRolloutKVCacheThrash": Pathology(_kv_thrash, {"30s": 34, "2m": 13, "10m": 5},
                                        note="steps; wall clock: 10 min window + for 10 min", why=_ENGINE),
    "RLRolloutLongTail": Pathology(_long_tail, {"30s": 33, "2m": 13, "10m": 5},
                                   note="steps; wall clock: 10 min window + for 15 min", why=_ENGINE),
    # the ladder's window must hold only slow steps: 5 steps or more, as many as its tier holds
    "RLRankStraggler": Pathology(_slow_rank, {"30s": 14, "2m": 14, "10m": 12}, why=_RANKS),
    "RLRolloutEngineDown": Pathology(_engine_down, {"30s": 14, "2m": 6, "10m": 4}, stop=True,
                                     note="step-times since the engine went down (for 5 min)", why=_ENGINE),
}


# ------------------------------------------------------------------ series
def _cadence(step_s: int) -> str:
    return next(c for c, s in CADENCES.items() if s == step_s)


def _key(name: str) -> tuple[str, str]:
    """'+rl_x{a="b"}' -> ('rl_x', 'a="b"') (prefix dropped)."""
    m = re.fullmatch(r"[+~@%]?([a-zA-Z_:][\w:]*)(?:\{(.*)\})?", name)
    return m.group(1), m.group(2) or ""


def _fmt(x) -> str:
    if x is None:
        return "_"
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    if isinstance(x, float) and math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return f"{x:.6g}"


PHASE_START = "rl_phase_in_progress_start_timestamp_seconds"
PHASE_MEDIAN = "rl_phase_recent_median_duration_seconds"
MEDIAN_OF = 20       # the exporter's median covers a phase's last 20 closed occurrences


def _timeline(values: list[dict], ends: list[float], work: list[float], last: int) -> "Timeline":
    """The phases of every step as [start, end) intervals: the "=phases" shares of the step's
    working time, then `save_checkpoint` for a checkpoint pause. A step past `last` (a hung one)
    is kept only up to its phase that never closes."""
    out = []
    for i, v in enumerate(values):
        t = ends[i - 1] if i else 0.0
        phases = v.get("=phases") or []
        hung = any(math.isinf(share) for _, share in phases)
        if i >= last and not hung:
            break
        for phase, share in phases:
            out.append((t, t + share * work[i], phase, i))
            t += share * work[i]
            if math.isinf(share):
                break
        if not hung and ends[i] - t > 1e-6:
            out.append((t, ends[i], "save_checkpoint", i))
    return Timeline(out, values)


@dataclass
class Timeline:
    intervals: list            # (start, end, phase, step index), in time order
    values: list               # the steps' values

    def __post_init__(self):
        self.starts = [iv[0] for iv in self.intervals]
        self.closed: dict[str, list] = {}         # phase -> [(end, duration)] in end order
        for t0, t1, phase, _ in self.intervals:
            if math.isfinite(t1):
                self.closed.setdefault(phase, []).append((t1, t1 - t0))
        self.first = {}
        for t0, _, phase, _ in self.intervals:
            self.first.setdefault(phase, t0)
        self.acc: dict[str, float] = {}
        self.prev = 0.0

    def at(self, ts: float):
        i = bisect.bisect_right(self.starts, ts) - 1
        return self.intervals[i] if i >= 0 and ts < self.intervals[i][1] else None

    def scrape(self, ts: float, keys: list[str], gone: bool) -> dict:
        """Every per-scrape series at time ts: phase starts and medians, '%' keys."""
        out: dict = {}
        if not self.intervals:
            return out
        cur = self.at(ts)
        for phase, first in self.first.items():
            if first <= ts:
                out[f'{PHASE_START}{{phase="{phase}"}}'] = cur[0] if cur and cur[2] == phase else math.nan
            done = [d for end, d in self.closed.get(phase, []) if end <= ts][-MEDIAN_OF:]
            if done:
                out[f'{PHASE_MEDIAN}{{phase="{phase}"}}'] = statistics.median(done)
        i = bisect.bisect_right(self.starts, ts) - 1
        step = self.intervals[max(i, 0)][3]        # the step in progress (or the last one)
        phase = cur[2] if cur else ""
        for key in keys:
            name, labels = _key(key)
            if name.endswith("_total"):
                # integrate each phase's rate over (prev, ts]
                first = max(bisect.bisect_right(self.starts, self.prev) - 1, 0)
                for t0, t1, ph, i in self.intervals[first:bisect.bisect_left(self.starts, ts)]:
                    lo, hi = max(t0, self.prev), min(t1, ts)
                    if hi > lo:
                        rate = (self.values[i].get(key) or {}).get(ph)
                        if rate is not None:
                            sk = f'%{name}{{{labels + ", " if labels else ""}phase="{ph}"}}'
                            self.acc[sk] = self.acc.get(sk, 0.0) + rate * (hi - lo)
                for sk, x in self.acc.items():
                    if sk.startswith(f"%{name}{{{labels}"):
                        out[sk] = x
            else:
                x = self.values[max(step, 0)].get(key)
                out[key] = x.get(phase, x.get("")) if isinstance(x, dict) else x
        self.prev = ts
        if gone:
            out = {k: None for k in out}
        return out


@dataclass
class Run:
    step_s: int
    alert: str | None = None
    steps: int = HEALTHY_STEPS
    seed: int = 7
    span: int = HEALTHY_STEPS      # the healthy run's trends (reward up, entropy down) span this
    series: dict[str, list] = field(default_factory=dict)

    def build(self) -> "Run":
        pat = PATHOLOGIES.get(self.alert) if self.alert else None
        last = ONSET - 1 if pat and (pat.stop or pat.down) else self.steps
        ends, t, durations, work = [], 0.0, [], []
        for k in range(1, self.steps + 1):
            d = self.step_s * random.Random(self.seed * 7919 + k).uniform(0.9, 1.1)
            work.append(d)
            if k % CHECKPOINT_EVERY == 0 or k == HEALTHY_RESTART[0] + 1:  # a save, a restart
                d += max(CHECKPOINT_PAUSE[0] * self.step_s, CHECKPOINT_PAUSE[1])
            t += d
            ends.append(t)
            durations.append(d)
        self.ends = ends
        dt = self.step_s / SAMPLES_PER_STEP[_cadence(self.step_s)]
        self.dt = dt
        n = int(ends[-1] / dt) + 2
        values = []
        # a stopped trainer may hang inside the step after its last: that step is in progress forever
        for k in range(1, min(last + (1 if pat and pat.stop else 0), self.steps) + 1):
            rng = random.Random(self.seed * 104729 + k)
            v = healthy(k, rng, self.span, self.step_s)
            v["rl_step_duration_seconds"] = durations[k - 1]
            if pat and pat.before:
                pat.before(v, k, random.Random(self.seed * 7727 + k))
            crashed, resumed = HEALTHY_RESTART
            if k > crashed:
                v["rl_training_step"] = k - (crashed - resumed)
            if pat and pat.edit and k >= ONSET:
                pat.edit(v, k - ONSET, random.Random(self.seed * 15485863 + k))
            v.update(_rank_durations(v, work[k - 1], durations[k - 1]))
            values.append(v)
        started = 1  # the step the exporter's process started at: a step going back is a new one
        for k, v in enumerate(values, 1):
            if k > 1 and v["rl_training_step"] < values[k - 2]["rl_training_step"]:
                started = k
            v[FRAMES] = k - started + 1
        timeline = _timeline(values, ends, work, last)
        per_scrape = sorted({key for v in values for key in v if key.startswith("%")})
        values = values[:last]
        keys = sorted({key for v in values for key in v if key[0] not in "%="})
        cum: dict[str, list[float]] = {}     # counters: running sums per step
        for key in [k_ for k_ in keys if k_.startswith("+")] + ["!rl_grad_norm", "!rl_policy_loss", "!rl_loss"]:
            acc, run_ = 0.0, [0.0]
            for v in values:
                if key.startswith("!"):
                    acc += 0 if math.isfinite(v.get(key[1:], 0.0)) else 1
                else:
                    acc += v.get(key, 0) or 0
                run_.append(acc)
            cum[key] = run_
        series = {key: [] for key in keys}
        series["rl_training_step_timestamp_seconds"] = []
        counters: dict[str, float] = {}
        nonfinite: dict[str, float] = {}
        held: dict[str, float] = {}
        timed: dict[str, None] = {}      # per-scrape series, in order of appearance
        for j in range(n):
            ts = j * dt
            k = min(bisect.bisect_right(ends, ts), last)   # steps completed at this scrape
            gone = pat is not None and pat.down and k >= last and ts >= ends[last - 1]
            for key in keys:
                if k == 0 or gone:
                    series[key].append(None)
                elif key.startswith("~"):
                    counters[key] = counters.get(key, 0.0) + values[k - 1].get(key, 0.0) * dt
                    series[key].append(counters[key])
                elif key.startswith("+"):
                    series[key].append(None if values[k - 1].get(key, 0) is None else cum[key][k])
                else:
                    if key in values[k - 1]:
                        held[key] = values[k - 1][key]
                    series[key].append(held.get(key))
            series["rl_training_step_timestamp_seconds"].append(None if k == 0 or gone else ends[k - 1])
            # the exporter counts NaN/Inf values it receives, per metric; the series appears at the first
            for m in ("rl_grad_norm", "rl_policy_loss", "rl_loss"):
                c = cum["!" + m][k]
                key = f'@rl_exporter_nonfinite_values_total{{metric="{m}"}}'
                if c or key in nonfinite:
                    nonfinite[key] = c
                series.setdefault(key, [None] * j).append(None if gone else nonfinite.get(key))
            series.setdefault("up", []).append(0 if gone else 1)
            series.setdefault("rl_run_info", []).append(None if gone else 1)
            got = timeline.scrape(ts, per_scrape, gone)
            timed.update(dict.fromkeys(got))
            for key in timed:
                series.setdefault(key, [None] * j).append(got.get(key))
        self.series = series
        self.n = n
        return self

    def input_series(self, run: str = "r", only: set | None = None) -> list[dict]:
        """promtool input series; `only`: metric names to keep (a pathology run needs only what its
        alert reads, which keeps promtool fast)."""
        out = []
        job = f'job="rl-exporter", instance="{run}:9464"'

        def target(i: int) -> str:
            return f'job="rl-exporter", instance="{run}:9464"' if i == 0 else \
                f'job="rl-exporter", instance="{run}-rank{i}:9464"'
        for key, vals in self.series.items():
            name, labels = _key(key)
            if name == "up" and not labels:
                sel = f"up{{{job}}}"
            elif name == "rl_run_info":
                out += [{"series": f'rl_run_info{{{target(i)}, run="{run}", framework="verl", rank="{i}"}}',
                         "values": " ".join(_fmt(x) for x in vals)} for i in range(1, RANKS)]
                sel = f'rl_run_info{{{job}, run="{run}", framework="verl", rank="0"}}'
            elif 'instance="rank' in labels:
                i = int(re.search(r'instance="rank(\d+)"', labels).group(1))
                rest = re.sub(r'instance="rank\d+",? ?', "", labels)
                sel = f'{name}{{run="{run}", {target(i)}{", " + rest if rest else ""}}}'
            else:
                sel = f'{name}{{run="{run}"{", " + labels if labels else ""}}}'
            if name == "up" and labels and only is not None and ENGINE_UP not in only:
                continue            # the engine's target: only for alerts that read it
            if all(x is None for x in vals) or (only is not None and name not in only):
                continue
            out.append({"series": sel, "values": " ".join(_fmt(x) for x in vals)})
        return out


# ------------------------------------------------------------------ promtool files
def _dur(seconds: float) -> str:
    from .render import duration
    return duration(seconds)


def alert_names(severities=("critical", "warning")) -> list[str]:
    return [a.name for a in ALERTS if a.severity in severities]


def _measure_expr(alert: str, run: Run, pat: Pathology, end: str, res: str) -> str:
    fired = f'max by (run) (ALERTS{{alertname="{alert}", alertstate="firing", run="{alert}"}})'
    if pat.timed:
        t0 = run.ends[ONSET - 2]
        return f"ceil((min_over_time(timestamp({fired})[{end}:{res}]) - {t0:g}) / {run.step_s})"
    return (f'min_over_time((max by (run) (rl_training_step{{run="{alert}"}}) and on (run) {fired})'
            f"[{end}:{res}]) - {ONSET - 1}")


def _reads(alert: str) -> set[str]:
    """Series names a pathology run keeps: what the alert reads, and ALWAYS."""
    rule = next(a for a in ALERTS if a.name == alert)
    engine_up = {ENGINE_UP} if "{engine_job_selector}" in rule.expr else set()
    return set(alert_metrics(rule)) | ALWAYS | engine_up


def measured() -> dict:
    return json.loads(MEASURED_FILE.read_text()) if MEASURED_FILE.exists() else {}


def render_cadence(cadence: str, got: dict | None = None) -> str:
    step_s = CADENCES[cadence]
    got = measured() if got is None else got
    h = Run(step_s).build()
    end = _dur(h.n * h.dt)
    res = _dur(h.dt)
    healthy_test = {
        "name": f"cadence {cadence}: a healthy run of {HEALTHY_STEPS} steps fires nothing",
        "interval": res, "input_series": h.input_series("healthy"),
        "promql_expr_test": [{
            "expr": f'max by (alertname) (max_over_time(ALERTS{{alertstate="firing"}}[{end}]))',
            "eval_time": end, "exp_samples": []}]}
    # The pathology runs side by side in one group (run labels keep them apart; every rule
    # aggregates by run): promtool evaluates the whole rule file at each tick of each group, so
    # one group costs a fraction of one group per alert.
    runs = {name: Run(step_s, name, steps=ONSET + PATHOLOGIES[name].budget[cadence] + 4).build()
            for name in alert_names()}
    last = max(r.n * r.dt for r in runs.values())
    pend = _dur(last)
    series, checks = [], []
    for name, run in runs.items():
        value = got.get(cadence, {}).get(name, -1)
        reads = _reads(name)
        series += run.input_series(name, reads)
        checks.append({"expr": _measure_expr(name, run, PATHOLOGIES[name], pend, res), "eval_time": pend,
                       "exp_samples": [{"labels": f'{{run="{name}"}}', "value": value}]})
    tests = [healthy_test,
             {"name": f"cadence {cadence}: each pathology fires its alert within its budget of steps",
              "interval": res, "input_series": series, "promql_expr_test": checks}]
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": _dur(step_s),
           "tests": tests}
    return yaml_text(doc).replace("# Generated by `python -m exporter.alerts render` from exporter/alerts/.",
                                  "# Generated by `python -m exporter.alerts test-file` from exporter/alerts/cadence.py.")


def render_long_healthy(cadence: str, steps: int = 1000, seed: int = 11) -> str:
    """One healthy run of `steps` steps (not in CI: about 5x the matrix's healthy group)."""
    h = Run(CADENCES[cadence], steps=steps, seed=seed, span=steps).build()
    end = _dur(h.n * h.dt)
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": _dur(h.step_s),
           "tests": [{"name": f"long healthy run: {steps} steps at {cadence}", "interval": _dur(h.dt),
                      "input_series": h.input_series("healthy"),
                      "promql_expr_test": [{
                          "expr": f'max by (alertname) (max_over_time(ALERTS{{alertstate="firing"}}[{end}]))',
                          "eval_time": end, "exp_samples": []}]}]}
    return yaml_text(doc)


def _scratch(tmp: Path) -> Path:
    """A tests folder under tmp where the files' `rule_files` path (RULES_FROM_TESTS)
    finds a copy of the shipped rules, as it does from exporter/alerts/tests/ in the repository."""
    rules = tmp / "rules"
    rules.mkdir(parents=True)
    (rules / shipped.RULES_FILE.name).write_text(shipped.RULES_FILE.read_text())
    tests = tmp / "alerts" / "tests"
    tests.mkdir(parents=True)
    return tests


def run_long(steps: int, promtool: str = "promtool") -> int:
    import tempfile
    import time
    bad = 0
    for cadence in CADENCES:
        with tempfile.TemporaryDirectory() as tmp:
            f = _scratch(Path(tmp)) / "long.yaml"
            f.write_text(render_long_healthy(cadence, steps))
            t0 = time.monotonic()
            p = subprocess.run([promtool, "test", "rules", str(f)], capture_output=True, text=True)
            fired = sorted(set(re.findall(r'alertname="(\w+)"', p.stdout + p.stderr)))
            print(f"{cadence}: {steps} healthy steps, alerts fired: {fired or 'none'} "
                  f"({time.monotonic() - t0:.0f} s)")
            bad += p.returncode != 0
    return 1 if bad else 0


def cadence_file(cadence: str) -> Path:
    return HERE / "tests" / f"cadence-{cadence}.test.yaml"


def measure(promtool: str = "promtool") -> dict:
    """Run each cadence file with placeholder expectations and read the steps-to-fire promtool
    reports (and the alerts a healthy run fires, which must be none)."""
    import tempfile
    out: dict = {}
    for cadence in CADENCES:
        with tempfile.TemporaryDirectory() as tmp:
            f = _scratch(Path(tmp)) / f"cadence-{cadence}.test.yaml"
            f.write_text(render_cadence(cadence, {cadence: {n: -1 for n in alert_names()}}))
            p = subprocess.run([promtool, "test", "rules", str(f)], capture_output=True, text=True)
            text = p.stdout + p.stderr
            if "no file match pattern" in text:  # every alert would read as "never fired"
                raise RuntimeError(f"promtool found no rule file for {f}:\n{text[:500]}")
        res = {}
        for m in re.finditer(r'exp: \{run="(\w+)"\} \S+\s+got: (nil|\{run="\w+"\} (\S+))', text):
            res[m.group(1)] = None if m.group(2) == "nil" else int(round(float(m.group(3))))
        m = re.search(r"exp: nil\s+got: (.*?)\n\s*\n", text, re.S)
        res["_healthy_fired"] = sorted(set(re.findall(r'alertname="(\w+)"', m.group(1)))) if m else []
        out[cadence] = res
    return out


def problems() -> list[str]:
    """Measured steps within budget; every warning/critical alert has a pathology."""
    out = []
    got = measured()
    for name in alert_names():
        if name not in PATHOLOGIES:
            out.append(f"{name}: no Pathology in exporter/alerts/cadence.py (the cadence matrix needs one)")
            continue
        for cadence in CADENCES:
            v = got.get(cadence, {}).get(name)
            b = PATHOLOGIES[name].budget[cadence]
            if v is None or v < 1 or v > b:
                out.append(f"{name} at {cadence}: fires after {v} steps, budget {b} "
                           "(run `python -m exporter.alerts cadence --measure`)")
    for name in PATHOLOGIES:
        if name not in alert_names():
            out.append(f"{name}: pathology for an unknown or info alert")
    return out


def table() -> str:
    got = measured()
    rows = ["| Alert | Severity | " + " | ".join(f"{c} steps: fires after (budget)" for c in CADENCES) + " |",
            "|---|---|" + "---|" * len(CADENCES)]
    sev = {a.name: a.severity for a in ALERTS}
    for name in alert_names():
        pat = PATHOLOGIES.get(name)
        unit = " step-times" if pat and pat.timed else ""
        cells = [f"{got.get(c, {}).get(name, '?')} ({pat.budget[c] if pat else '?'}){unit}" for c in CADENCES]
        rows.append(f"| {name} | {sev[name]} | " + " | ".join(cells) + " |")
    notes = [f"- {name}: {PATHOLOGIES[name].note}" for name in alert_names()
             if name in PATHOLOGIES and PATHOLOGIES[name].note]
    return "\n".join(rows + ([""] + notes if notes else []))
