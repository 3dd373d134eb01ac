"""The series budget of one rank, measured: build a fully featured rank, render its
/metrics, count the samples per family.

"Fully featured" is every key family the simulated run knows (the veRL frame, posttrain's
group and optimizer keys, and the keys every alert scenario adds: critic, preference, reward
model, train/inference mismatch, staleness, MoE per-layer balance, turns, validation) plus
the NVML sampler over `gpus` fake GPUs and the exporter's own series. What a trainer adds by
calling `timer()` / `observe()` (one histogram per phase or name) and the per-expert MoE
series are opt-in and priced separately.
"""
from __future__ import annotations

import collections

# series per rank, GPU series for 8 GPUs included: 400 until the run's lifecycle (rl_run_state
# and its change time, 7 series) and the run-mode settings every integration now exports
# (rl_config_value: pi_old_from_rollout, kl_loss_coef, kl_reward_coef, async_training,
# colocated: 5), 412 in all; 420 leaves room for one more small family, not for a new label
BUDGET = 420
BUDGET_GPUS = 8
MOE_EXAMPLE = (24, 64)        # layers x experts priced in the opt-in line (a 30B-A3B-class MoE)
_SUFFIXES = ("_bucket", "_sum", "_count", "_created")


def family(sample_name: str, histograms: set[str]) -> str:
    for suf in _SUFFIXES:
        if sample_name.endswith(suf) and sample_name[: -len(suf)] in histograms:
            return sample_name[: -len(suf)]
    return sample_name


def count_samples(registry) -> collections.Counter:
    """Samples per family, as a scrape of the registry sees them."""
    out: collections.Counter = collections.Counter()
    for fam in registry.collect():
        for s in fam.samples:
            out[fam.name if fam.type == "histogram" else s.name] += 1
    return out


def full_frame(step: int = 10) -> dict:
    from . import SimulatedRun
    from .frames import FrameView
    from .pathologies import PATHOLOGIES, apply
    sim = SimulatedRun("healthy", seed=0, val_every=step)
    frame = sim.frame(step)
    for p in PATHOLOGIES:  # every series some scenario adds before its onset
        apply(p.before, FrameView(frame, {}), step, sim.rng)
    return frame


def full_rank(gpus: int = BUDGET_GPUS, expert_series: bool = False, moe: tuple[int, int] = (0, 0),
              run: str = "budget"):
    """An Exporter (not serving) holding one fully featured rank's series. Close it after use."""
    from ..gpu import start_sampler
    from ..hook import Exporter
    from ..testing.nvml import FakeNVML
    from .scenarios import side_series
    ex = Exporter(run=run, framework="auto", algorithm="grpo", model="simulated", rank=0,
                  serve=False, gpu=False, expert_series=expert_series)
    if gpus:
        sampler = start_sampler(ex, "on", 3600, nvml=FakeNVML(gpus=gpus))
        if sampler is not None:
            sampler.stop()  # one sample is enough; nothing keeps running
            ex.gpu_sampler = None
    ex.store.set("rl_config_value", 10_000.0, {"parameter": "total_training_steps"})
    for metric, value, labels in side_series("healthy", 10, 20):
        if not metric.startswith("hw_gpu_"):
            ex.store.set(metric, value, labels)
    frame = full_frame()
    layers, experts = moe
    for layer in range(layers):
        for e in range(experts):
            frame[f"moe_balance/layer_{layer}/expert_{e}/tokens"] = 1000.0 + e
            frame[f"moe_balance/layer_{layer}/expert_{e}/load_percent"] = 100.0 / experts
    for step in (9, 10):
        ex.log(frame, step=step)
    ex.flush()
    return ex


def measure(gpus: int = BUDGET_GPUS) -> dict:
    """The budget report: per family counts, groups, total, opt-in prices."""
    from ..catalog import CATALOG, HISTOGRAM
    ex = full_rank(gpus)
    try:
        counts = count_samples(ex.registry)
    finally:
        ex.close()
    groups: collections.Counter = collections.Counter()
    for name, n in counts.items():
        groups["gpu (NVML sampler)" if name.startswith("hw_gpu_") else
               "exporter self-metrics" if name.startswith("rl_exporter_") else "trainer"] += n
    gpu_series = groups["gpu (NVML sampler)"]
    layers, experts = MOE_EXAMPLE
    moe_off = _moe_cost(0)
    opt_in = {
        "per-expert MoE series (expert_series=True or RL_EXPORTER_EXPERT_SERIES=1)":
            f"{_moe_cost(1) - moe_off} per layer x expert (tokens, load ratio): "
            f"{(_moe_cost(1) - moe_off) * layers * experts} for {layers} layers x {experts} experts",
    }
    for m in CATALOG.metrics.values():
        if m.kind == HISTOGRAM and m.name in ("rl_phase_timing_seconds", "rl_sample_response_length_tokens"):
            opt_in[f"{m.name} ({'timer()' if 'phase' in m.name else 'observe()'})"] = \
                f"{len(m.buckets) + 3} per {'phase' if 'phase' in m.name else 'name'} (buckets + +Inf, _sum, _count)"
    total = sum(counts.values())
    return {"budget": BUDGET, "gpus": gpus, "total": total, "within": total <= BUDGET,
            "per_gpu": round(gpu_series / gpus, 1) if gpus else 0.0,
            "groups": dict(groups), "families": dict(counts.most_common()), "opt_in": opt_in}


def _moe_cost(experts: int) -> int:
    ex = full_rank(0, expert_series=True, moe=(1, experts))
    try:
        return sum(count_samples(ex.registry).values())
    finally:
        ex.close()


def text(report: dict) -> str:
    lines = [f"series per rank: {report['total']} of a budget of {report['budget']} "
             f"({'within' if report['within'] else 'OVER'}; {report['gpus']} GPUs, "
             f"{report['per_gpu']} series per GPU)", ""]
    for g, n in sorted(report["groups"].items(), key=lambda x: -x[1]):
        lines.append(f"  {n:5d}  {g}")
    lines += ["", "per family:"]
    lines += [f"  {n:5d}  {name}" for name, n in report["families"].items()]
    lines += ["", "opt-in (not in the total):"]
    lines += [f"  {k}: {v}" for k, v in report["opt_in"].items()]
    return "\n".join(lines)
