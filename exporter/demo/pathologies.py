"""Every pathology the project proves its alerts against, described once.

One entry per pathology: its name (the `rl-exporter demo --scenario`), the alerts it must fire
(alert -> the catalog metrics a run must feed for that alert to be expected), where it comes
from, and its edits over CATALOG series (`rl_entropy`, `rl_score{stat="max"}`; `{*}`: every
series of the metric). Three consumers read the entries: the demo (exporter/demo/__init__.py,
which finds each series' key in its frames through the catalog), the cadence matrix
(exporter/alerts/cadence.py, over its healthy series) and the end-to-end tables (exporter/alerts/scenarios.py).

An edit is (series, op); an op maps the series' value `x` at `t` steps after the onset
(t = the step itself in `before`, the edits every step needs so that a baseline exists).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

MAX_RESPONSE_LENGTH = 1024      # the simulated runs' rollout.response_length
GIB = 2.0 ** 30


# ------------------------------------------------------------------ the vocabulary
class Op:
    counter = False
    const = None          # the value, for an op that sets a fixed number

    def __init__(self, fn: Callable, text: str):
        self.fn, self.text = fn, text

    def __call__(self, x, t, rng, view):
        return self.fn(x, t, rng, view)

    def __repr__(self):
        return self.text


def _draw(v, rng):
    return v(rng) if callable(v) else v


def uniform(lo, hi):
    return lambda rng: rng.uniform(lo, hi)


def gauss(mu, sigma):
    return lambda rng: mu + rng.gauss(0, sigma)


def above(lo, sigma):
    """lo plus a half-normal draw: a level that never dips under lo."""
    return lambda rng: lo + abs(rng.gauss(0, sigma))


def _clamp(v, lo, hi):
    return min(hi, max(lo, v))


def to(value) -> Op:
    """The value (a number, a string, or a draw: uniform/gauss/above)."""
    op = Op(lambda x, t, rng, view: _draw(value, rng), f"to({value!r})")
    if isinstance(value, (int, float)):
        op.const = value
    return op


def ramp(start, per_step, lo=-math.inf, hi=math.inf, noise=None) -> Op:
    """start + per_step * t (+ a draw), held within [lo, hi]."""
    return Op(lambda x, t, rng, view: _clamp(start + per_step * t + (_draw(noise, rng) if noise else 0), lo, hi),
              f"ramp({start}, {per_step})")


def grow(per_step, offset=0.0, lo=-math.inf, hi=math.inf) -> Op:
    """The healthy value plus offset + per_step * t, held within [lo, hi]."""
    return Op(lambda x, t, rng, view: _clamp(x + offset + per_step * t, lo, hi), f"grow({per_step})")


def times(factor, lo=-math.inf, hi=math.inf) -> Op:
    """The healthy value times factor (a number or a function of t), held within [lo, hi]."""
    return Op(lambda x, t, rng, view: _clamp(x * (factor(t) if callable(factor) else factor), lo, hi),
              f"times({factor})")


def of(series: str, factor=1.0, noise=None) -> Op:
    """Another series' value (after the edits before this one) times factor (+ a draw)."""
    return Op(lambda x, t, rng, view: view.get(series) * factor + (_draw(noise, rng) if noise else 0),
              f"of({series!r}, {factor})")


class count(Op):
    """A counter that advances by n per step (the demo's running total, the cadence's increment)."""
    counter = True

    def __init__(self, n):
        super().__init__(lambda x, t, rng, view: n, f"count({n})")


def every(k: int, op: Op) -> Op:
    """op on every k-th step from the onset; the healthy value otherwise."""
    out = Op(lambda x, t, rng, view: op(x, t, rng, view) if t % k == 0 else x, f"every({k}, {op})")
    out.counter = op.counter
    return out


def after(t0: int, op: Op) -> Op:
    """op from t0 steps after the onset; the healthy value before."""
    out = Op(lambda x, t, rng, view: op(x, t, rng, view) if t >= t0 else x, f"after({t0}, {op})")
    out.counter = op.counter
    return out


# ------------------------------------------------------------------ the entries
@dataclass(frozen=True)
class Pathology:
    name: str                       # the demo scenario
    alerts: dict                    # alert -> catalog metrics that must be fed for it to fire
    source: str                     # where the pathology is described, named for users
    edits: tuple = ()               # (series, op) from the onset on
    before: tuple = ()              # (series, op) on every step: the baseline it needs
    call: Callable | None = None    # (view, t, rng) after the edits, where no op says it
    stop: bool = False              # the trainer logs nothing from the onset on
    down: bool = False              # the exporter goes away with the trainer
    demo: bool = True               # a `--scenario` of its own (crash is healthy + --exit-after)
    note: str = ""
    may: tuple = ()                 # alerts it may also fire, depending on the pace (not required)
    # served beside the trainer (exporter/demo/beside.py): a stand-in rollout engine, healthy
    # until the onset, then this engine scenario (exporter/demo/engine.py; "down": it stops
    # serving); and the run's ranks, the last one edited by rank_edits from the onset
    engine: str = ""
    ranks: int = 1
    rank_edits: tuple = ()


def apply(edits: tuple, view, t: int, rng) -> None:
    """Apply (series, op) edits to a view (the demo's frame, the cadence's step): for every
    series of the view that the selector names; a view may create a missing one."""
    for sel, op in edits:
        for h in view.find(sel):
            value = op(view.value(h), t, rng, view)
            if op.counter:
                view.bump(h, value)
            else:
                view.put(h, value)


def parse(sel: str) -> tuple[str, dict | None]:
    """'rl_x{a="b", c="d"}' -> ('rl_x', {'a': 'b', 'c': 'd'}); 'rl_x{*}' -> ('rl_x', None)."""
    name, _, rest = sel.partition("{")
    rest = rest.rstrip("}").strip()
    if rest == "*":
        return name, None
    labels = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        k, _, v = part.partition("=")
        labels[k.strip()] = v.strip().strip('"')
    return name, labels


def _throughput_drop(view, t, rng):
    # generation got 10x slower (the rollout engine fell back to eager generation): step time
    # up, tokens/s down to about a fifth
    extra = 9 * view.get('rl_phase_duration_seconds{phase="gen"}')
    view.set('rl_phase_duration_seconds{phase="gen"}', view.get('rl_phase_duration_seconds{phase="gen"}') + extra)
    step = view.get("rl_step_duration_seconds") + extra
    view.set("rl_step_duration_seconds", step)
    view.set("rl_gpu_throughput_tokens_per_second", view.get("rl_step_tokens") / (step * 8))


def _rollout_long_tail(view, t, rng):
    # a few very long generations hold every step: gen takes 60 % longer
    extra = 0.6 * view.get('rl_phase_duration_seconds{phase="gen"}')
    view.set('rl_phase_duration_seconds{phase="gen"}', view.get('rl_phase_duration_seconds{phase="gen"}') + extra)
    view.set("rl_step_duration_seconds", view.get("rl_step_duration_seconds") + extra)


def _crash_loop(view, t, rng):
    # the run saved a checkpoint at the onset step, then crashes every CRASH_EVERY steps and
    # resumes from it: it never gets past it (the goodput's restart bucket is the signal)
    if t == 0:
        view.set('rl_phase_duration_seconds{phase="save_checkpoint"}', 30.0 + rng.gauss(0, 1))
        return
    saved = view.get("rl_training_step") - t
    view.set("rl_training_step", saved + 1 + (t - 1) % CRASH_EVERY)


CRASH_EVERY = 4
VERL_GUIDE = "the veRL metrics guide"
DICTIONARY = "the RL metrics dictionary"
TROUBLESHOOTING = "the veRL metrics guide, sections 11-12 (troubleshooting)"
POSTTRAIN = "the posttrain metrics reference"
LAB = "the lab's metrics manual"
MILES = "Miles' advisory"

_CRITIC_BASELINE = (
    ("rl_value_explained_variance", Op(lambda x, t, rng, v: min(0.8, -0.2 + 0.02 * t) + rng.gauss(0, 0.02),
                                       "min(0.8, -0.2 + 0.02 step) + noise")),
    ("rl_value_loss", to(gauss(0.5, 0.02))),
    ("rl_value", of("rl_shaped_reward", noise=gauss(0, 0.02))),
)

PATHOLOGIES: tuple[Pathology, ...] = (
    Pathology("healthy", {}, LAB),
    Pathology(
        # the reward falls by 85 %: the best level held earlier shows it too
        "entropy-collapse", {"RLEntropyCollapse": (), "RLClipFractionHigh": (), "RLRewardCollapse": (),
                             "RLRewardDeclining": ()},
        f"{DICTIONARY}, section 12 (entropy falls within a few steps, clipping climbs, then reward collapses)",
        edits=(("rl_entropy", times(lambda t: math.exp(-0.35 * t), lo=0.01)),
               ("rl_policy_clip_ratio", grow(0.04, hi=0.7)),
               ("rl_score", after(6, times(lambda t: 1 - min(0.85, 0.1 * (t - 5)), lo=0.02))),
               ("rl_shaped_reward", after(6, times(lambda t: 1 - min(0.85, 0.1 * (t - 5)), lo=0.02))))),
    # one bad update moves the policy (ppo_kl) far more than its distance to the reference:
    # the reference KL rises too, but nowhere near a runaway
    Pathology(
        "kl-spike", {"RLPolicyKLSpike": (), "RLClipFractionHigh": ()},
        f"{TROUBLESHOOTING} (a PPO KL spike with clipping and a gradient jump)",
        edits=(("rl_policy_kl", ramp(0.08, 0.02, noise=uniform(0, 0.01))),
               ("rl_reference_kl", times(1.5)),
               ("rl_policy_clip_ratio", ramp(0.45, 0.02, hi=0.85)),
               ("rl_grad_norm", times(4)))),
    # no finite-gradient guard: the non-finite loss reaches the optimizer, every step after it too
    Pathology(
        "nan-loss", {"RLNonFiniteLoss": (), "RLNonFiniteGradSkipped": ()},
        f"{POSTTRAIN} (a non-finite loss that no guard stops: the update applies it)",
        edits=(("rl_policy_loss", to(math.nan)), ("rl_grad_norm", to(math.nan)))),
    # the guard rejects every one of those updates: the weights stay intact, and the guard's own
    # count of rejections in a row pages (RLNonFiniteLoss defers to it)
    Pathology(
        "nan-loss-skipped", {"RLOptimizerNonFiniteSkips": ("rl_optimizer_consecutive_nonfinite_skips",),
                             "RLNonFiniteGradSkipped": ()},
        f"{POSTTRAIN} (a non-finite loss the optimizer guard skips on every step)",
        edits=(("rl_policy_loss", to(math.nan)), ("rl_grad_norm", to(math.nan)),
               ("rl_optimizer_update_outcome", to("skipped")),
               ("rl_optimizer_skip_reason", to("nonfinite_loss")),
               ("rl_optimizer_consecutive_nonfinite_skips", ramp(1, 1)),
               ("rl_optimizer_nonfinite_skips_total", count(1)))),
    Pathology(
        "grad-explosion", {"RLGradNormExplosion": (), "RLGradNormPinnedAtClip": (),
                           "RLGradNormFarAboveClip": ()},
        f"{DICTIONARY}, section 12 (gradient norm tens of times its baseline, loss with it)",
        edits=(("rl_grad_norm", times(lambda t: 30 * 1.3 ** t)),
               ("rl_policy_loss", times(lambda t: 5 + t)))),
    Pathology(
        "length-truncation", {"RLResponseTruncationHigh": ()},
        f"{DICTIONARY}, section 12 (responses run into the length limit)",
        edits=(("rl_response_length_tokens", grow(60, offset=60, hi=0.97 * MAX_RESPONSE_LENGTH)),
               ('rl_response_length_tokens{stat="max"}', to(float(MAX_RESPONSE_LENGTH))),
               ("rl_response_truncated_ratio", ramp(0.6, 0.02, hi=0.9))),
        # lengths more than double while the reward stops rising: a runaway as well, whose
        # trend baseline needs enough steps scraped before the onset to show it
        may=("RLResponseLengthRunaway",)),
    # every group ties: advantages vanish, the gradient is exactly zero, nothing learns
    Pathology(
        "no-signal", {"RLNoInformativeGroups": (), "RLGradNormZero": (), "RLRewardCollapse": (),
                      "RLRewardDeclining": (), "RLRewardAllZero": ()},
        f"{POSTTRAIN} (every GRPO group ties: zero advantages, zero gradient)",
        edits=(('rl_groups{outcome="informative"}', to(0)),
               ('rl_groups{outcome="tied"}', of('rl_groups{outcome="total"}')),
               ('rl_groups{outcome="all_zero"}', of('rl_groups{outcome="total"}')),
               ("rl_score", to(0.0)), ("rl_shaped_reward", to(0.0)),
               ('rl_score{stat="max"}', to(0.0)), ('rl_score{stat="min"}', to(0.0)),
               ("rl_advantage", to(0.0)), ('rl_advantage{stat="max"}', to(0.0)),
               ('rl_advantage{stat="min"}', to(0.0)),
               ("rl_grad_norm", to(0.0)), ("rl_policy_loss", to(0.0)),
               ("rl_optimizer_zero_grad_skips_total", count(1)))),
    # every sample solves the task: all groups all-one
    Pathology(
        "reward-at-max", {"RLRewardAllAtMax": (), "RLNoInformativeGroups": ()},
        f"{VERL_GUIDE} (math tasks score 0.0 or 1.0: every sample right, the task is too easy)",
        edits=(('rl_groups{outcome="informative"}', to(0)),
               ('rl_groups{outcome="tied"}', of('rl_groups{outcome="total"}')),
               ('rl_groups{outcome="all_one"}', of('rl_groups{outcome="total"}')),
               ("rl_score", to(1.0)), ("rl_reward", to(1.0)),
               ('rl_score{stat="max"}', to(1.0)), ('rl_score{stat="min"}', to(1.0))),
        may=("RLGradNormZero",)),
    # a reward that does not read the answer: one constant bonus on every sample
    Pathology(
        "reward-constant", {"RLRewardConstant": (), "RLNoInformativeGroups": ()},
        f"{POSTTRAIN} (a group with equal rewards has an advantage of exactly zero: a reward "
        "not wired to the completions scores every sample the same)",
        edits=(('rl_groups{outcome="informative"}', to(0)),
               ('rl_groups{outcome="tied"}', of('rl_groups{outcome="total"}')),
               ("rl_score", to(0.5)), ("rl_reward", to(0.5)),
               ('rl_score{stat="max"}', to(0.5)), ('rl_score{stat="min"}', to(0.5))),
        may=("RLGradNormZero", "RLRewardCollapse", "RLRewardDeclining")),
    # entropy at 0 from the onset: a deterministic policy
    Pathology(
        "entropy-zero", {"RLEntropyAtZero": (), "RLEntropyCollapse": ()},
        f"{VERL_GUIDE} (entropy under 0.05: a near-deterministic policy)",
        edits=(("rl_entropy", to(0.001)),)),
    # a loss scale gone wrong: a KL coefficient 1000x too high multiplies the KL term by it
    Pathology(
        "loss-scale", {"RLLossMagnitudeAbsurd": ()},
        f"{VERL_GUIDE} (pg_loss -0.01 to 0.01: a loss in the hundreds is a scale gone wrong)",
        edits=(("rl_policy_loss", ramp(300.0, 10.0)),)),
    # the reward plateaus while the policy keeps drifting from the reference
    Pathology(
        "no-improvement", {"RLNoImprovement": ("rl_reference_kl",)},
        f"{DICTIONARY} (KL should grow slowly and steadily; the reward flat for tens of steps "
        "while it doubles: the run has run its course)",
        edits=(("rl_score", to(uniform(0.38, 0.42))), ("rl_reward", to(uniform(0.38, 0.42))),
               # 5 % a step: doubles within 14 steps; against a baseline still holding the
               # steps before the onset it is a runaway as well, at the demo's 77 s steps
               ("rl_reference_kl", times(lambda t: math.exp(0.05 * t)))),
        may=("RLReferenceKLRunaway",)),
    Pathology("stall", {"RLRunStalled": ()},
              f"{TROUBLESHOOTING} (the trainer hangs; the exporter keeps serving)", stop=True),
    Pathology(
        "kl-token-spike", {"RLKLSingleTokenDominates": ("rl_reference_kl",)},
        f"{POSTTRAIN} (the per-token KL maximum orders of magnitude above its mean, with a "
        "gradient-norm jump)",
        before=(("rl_reference_kl", to(above(0.002, 0.0002))),
                ('rl_reference_kl{stat="max"}', to(above(0.05, 0.005)))),
        edits=(('rl_reference_kl{stat="max"}', to(uniform(0.6, 0.7))), ("rl_grad_norm", times(5)))),
    Pathology(
        "reference-kl-runaway", {"RLReferenceKLRunaway": ("rl_reference_kl",)},
        f"{DICTIONARY} (the KL to the reference turns sharply from a steady level inside the healthy "
        "0.01-0.1: the policy drifts away, every token a bit)",
        before=(("rl_reference_kl", to(above(0.03, 0.002))),
                ('rl_reference_kl{stat="max"}', to(above(0.9, 0.05)))),
        edits=(("rl_reference_kl", times(lambda t: min(40.0, 6 + 1.5 * t))),
               ('rl_reference_kl{stat="max"}', times(lambda t: min(40.0, 6 + 1.5 * t))))),
    Pathology(
        "on-policy-clip", {"RLClipFractionNonZeroOnPolicy": ()},
        f"{LAB} (one mini-batch per step clips nothing; a pi_old bug makes it clip)",
        before=(("rl_policy_clip_ratio", to(0.0)), ('rl_policy_clip_ratio{bound="dual"}', to(0.0))),
        edits=(("rl_policy_clip_ratio", to(above(0.02, 0.003))),)),
    Pathology(
        "critic-not-learning", {"RLCriticNotLearning": ()},
        f"{VERL_GUIDE} (explained variance negative and the value loss high)",
        before=_CRITIC_BASELINE,
        edits=(("rl_value_explained_variance", to(gauss(-0.4, 0.03))), ("rl_value_loss", to(gauss(2.0, 0.1))))),
    Pathology(
        "dpo-overfit", {"RLPreferenceOverfit": ("rl_preference_accuracy_ratio", "rl_validation_loss")},
        f"{DICTIONARY} (preference accuracy saturates while the held-out loss stays flat)",
        before=(("rl_preference_accuracy_ratio", Op(lambda x, t, rng, v: min(0.9, 0.6 + 0.01 * t), "min(0.9, 0.6 + 0.01 step)")),
                ("rl_preference_reward_margin", Op(lambda x, t, rng, v: 0.5 + 0.02 * t, "0.5 + 0.02 step")),
                ("rl_validation_loss", Op(lambda x, t, rng, v: 0.9 - 0.005 * t, "0.9 - 0.005 step"))),
        edits=(("rl_preference_accuracy_ratio", to(0.995)),
               ("rl_preference_reward_margin", ramp(3.0, 0.1)),
               ("rl_validation_loss", to(uniform(0.8, 0.802))))),
    Pathology(
        "rm-margin-collapse", {"RLRewardModelMarginCollapse": ("rl_preference_reward_margin",)},
        f"{DICTIONARY} (the reward model's margin between chosen and rejected collapses)",
        before=(("rl_preference_accuracy_ratio", to(gauss(0.8, 0.01))),
                ("rl_preference_reward_margin", to(gauss(1.5, 0.05)))),
        edits=(("rl_preference_accuracy_ratio", to(gauss(0.55, 0.01))),
               ("rl_preference_reward_margin", Op(lambda x, t, rng, v: max(0.02, 1.5 * math.exp(-0.3 * t)),
                                                  "max(0.02, 1.5 exp(-0.3 t))")))),
    Pathology(
        "train-infer-mismatch", {"RLTrainInferenceMismatchRising": ()},
        f"{LAB} (MoE routing flips: the train/inference log-prob gap keeps rising)",
        before=(('rl_train_inference_kl{estimator="k1"}', to(gauss(0.0007, 0.00003))),
                ("rl_train_inference_logprob_abs_diff", to(gauss(0.015, 0.0005))),
                ("rl_train_inference_tokens", to(256 * 400))),
        edits=(('rl_train_inference_kl{estimator="k1"}', times(lambda t: min(12.0, 4 + 0.4 * t))),
               ("rl_train_inference_logprob_abs_diff", times(lambda t: min(12.0, 4 + 0.4 * t))))),
    Pathology(
        "async-staleness", {"RLSampleStalenessHigh": ()},
        f"{TROUBLESHOOTING} (asynchronous rollouts fall behind the policy)",
        before=(("rl_sample_staleness_steps", to(uniform(1.0, 1.5))),),
        edits=(("rl_sample_staleness_steps", ramp(6, 0.5, hi=12.0)),)),
    # even after veRL's balancing one rank keeps far more tokens (one very long sample)
    Pathology(
        "load-imbalance", {"RLDataParallelImbalance": ()},
        f"{VERL_GUIDE} (data-parallel ranks with very unequal token counts)",
        edits=(('rl_dp_rank_tokens{stat="max"}', of("rl_dp_rank_tokens", 2.2)),
               ('rl_dp_rank_tokens{stat="minmax_diff"}', of("rl_dp_rank_tokens", 1.6)),
               ('rl_dp_rank_tokens{stat="balanced_max"}', of("rl_dp_rank_tokens", 1.9)),
               ('rl_dp_rank_tokens{stat="balanced_min"}', of("rl_dp_rank_tokens", 0.8)))),
    Pathology(
        "moe-imbalance", {"RLMoEExpertImbalance": ("rl_moe_load_imbalance_ratio",)},
        f"{TROUBLESHOOTING} (one MoE layer routes far more tokens to its busiest expert)",
        before=tuple((f'rl_moe_load_imbalance_ratio{{layer="{layer}"}}', to(uniform(1.2, 1.3)))
                     for layer in (0, 12, 23)),
        edits=(('rl_moe_load_imbalance_ratio{layer="12"}', ramp(1.5, 0.2, hi=4.0)),)),
    Pathology(
        "mfu-low", {"RLMFULow": ()}, f"{VERL_GUIDE} (model FLOPs utilisation far under its usual level)",
        edits=(('rl_mfu_ratio{phase="train", role="actor", source="framework"}', to(gauss(0.15, 0.005))),)),
    Pathology(
        "throughput-drop", {"RLThroughputDrop": ()},
        f"{TROUBLESHOOTING} (generation 10x slower: the rollout engine fell back to eager mode)",
        call=_throughput_drop),
    Pathology(
        "gpu-memory-full", {"RLGPUMemoryNearFull": ()},
        f"{TROUBLESHOOTING} (the trainer's peak memory at the device's limit; NVML usage too, as "
        "side series)",
        edits=(('rl_gpu_memory_peak_bytes{kind="allocated"}', to(76.5 * GIB)),
               ('rl_gpu_memory_peak_bytes{kind="reserved"}', to(78.0 * GIB)))),
    # thermal throttling: clocks held down make steps ~20 % slower (the clock-event reason comes
    # from NVML: the demo's side series)
    Pathology(
        "gpu-throttle", {"RLGPUThrottling": ()}, f"{TROUBLESHOOTING} (thermal throttling)",
        edits=(("rl_gpu_throughput_tokens_per_second", times(0.8)),)),
    Pathology(
        "multi-turn-runaway", {"RLMultiTurnRunaway": ()},
        f"{TROUBLESHOOTING} (an agent loop that never ends its episode)",
        before=(("rl_turns", to(gauss(3.0, 0.1))),
                ('rl_turns{stat="max"}', Op(lambda x, t, rng, v: float(6 + rng.randint(0, 2)), "6-8")),
                ('rl_turns{stat="min"}', to(1.0))),
        edits=(('rl_turns{stat="max"}', ramp(20.0, 4.0, hi=64.0)), ("rl_turns", to(5.0)))),
    Pathology(
        "reward-hacking", {"RLLengthFallingRewardRising": ()},
        f"{DICTIONARY}, section 12 (responses shorten while the reward rises)",
        edits=(("rl_response_length_tokens", times(lambda t: max(0.35, 0.6 - 0.03 * t))),
               ('rl_response_length_tokens{stat="max"}', times(lambda t: max(0.35, 0.6 - 0.03 * t))),
               ("rl_score", grow(0.015, offset=0.06, hi=0.98)), ("rl_shaped_reward", grow(0.015, offset=0.06, hi=0.98)))),
    # a slow slide (under 1 % a step): each step is close to the one before, so the step-to-step
    # baseline follows it down; only the level held earlier shows the decline
    Pathology(
        "reward-decline", {"RLRewardDeclining": ()},
        f"{DICTIONARY}, section 12 (reward collapse), read as a slow drift over tens of steps",
        edits=(("rl_score", Op(lambda x, t, rng, v: max(0.1, 0.4 * math.exp(-0.008 * t)) + rng.uniform(-0.01, 0.01),
                               "0.4 x exp(-0.008 t)")),
               ("rl_shaped_reward", of("rl_score", noise=-0.01))),
        # where steps come slowly enough that the ladder takes a 4x longer window, the slide over
        # it exceeds RLRewardCollapse's 30 % too (the live end-to-end demos under load)
        may=("RLRewardCollapse",)),
    # answers grow 5 % a step into the limit, a growing share is cut, the reward stays flat:
    # the cap binds and the extra tokens buy nothing
    Pathology(
        "length-runaway", {"RLResponseLengthRunaway": ()},
        f"{VERL_GUIDE} (response_length/clip_ratio: 0.1-0.3 acceptable, above it raise the limit)",
        edits=(("rl_response_length_tokens", times(lambda t: 1 + 0.05 * t, hi=0.97 * MAX_RESPONSE_LENGTH)),
               ('rl_response_length_tokens{stat="max"}', to(float(MAX_RESPONSE_LENGTH))),
               ("rl_response_truncated_ratio", ramp(0.02, 0.01, hi=0.45)),
               ("rl_score", to(uniform(0.39, 0.41))), ("rl_shaped_reward", to(uniform(0.38, 0.40))))),
    Pathology(
        "validation-regression", {"RLValidationRegressing": ()},
        f"{VERL_GUIDE} (held-out scores fall while training goes on)",
        edits=(("rl_validation_score{*}", grow(-0.02, lo=0.0)),)),
    Pathology("lr-zero", {"RLLearningRateZero": ()},
              f"{DICTIONARY}, section 2.6 (a schedule or configuration bug zeroes the learning rate)",
              edits=(("rl_learning_rate", to(0.0)),)),
    Pathology("grad-vanishing", {"RLGradNormVanishing": ()},
              f"{VERL_GUIDE}, section 1.7 (below 0.01 the gradient vanishes and learning stalls)",
              edits=(("rl_grad_norm", to(above(0.002, 0.001))),)),
    Pathology("dual-clip", {"RLDualClipFractionHigh": ()},
              f"{VERL_GUIDE} (the dual-clip lower bound binds far more than its usual < 0.1)",
              edits=(('rl_policy_clip_ratio{bound="dual"}', to(above(0.3, 0.02))),)),
    Pathology("value-clip", {"RLValueClipFractionHigh": ("rl_value_clip_ratio",)},
              f"{VERL_GUIDE} (above 0.5 the value update is restricted)",
              before=_CRITIC_BASELINE + (("rl_value_clip_ratio", to(above(0.1, 0.02))),),
              edits=(("rl_value_clip_ratio", to(above(0.7, 0.02))),)),
    # posttrain PPO: policy and critic optimizers each take 4 minibatch steps per iteration
    Pathology("optimizer-diverge", {"RLOptimizerStepsDiverge": ("rl_optimizer_steps_total",)},
              f"{POSTTRAIN} (the critic's optimizer stops stepping while the policy's goes on)",
              before=(('rl_optimizer_steps_total{role="policy"}', count(4)),
                      ('rl_optimizer_steps_total{role="critic"}', count(4))),
              edits=(('rl_optimizer_steps_total{role="critic"}', count(0)),)),
    Pathology("nonfinite-logprob", {"RLTrainInferenceNonFinite": ("rl_train_inference_nonfinite_ratio",)},
              f"{DICTIONARY} (NaN or infinite log-probs on a share of the valid tokens)",
              before=(("rl_train_inference_nonfinite_ratio", to(0.0)),),
              edits=(("rl_train_inference_nonfinite_ratio", to(above(0.004, 0.001))),)),
    # phases in progress and GPU time by phase come from the demo's side series
    # (exporter/demo/scenarios.py phase_series); a hang inside gen stalls the run too
    Pathology("gen-hang", {"RLPhaseHung": ("rl_phase_in_progress_start_timestamp_seconds",),
                           "RLRolloutGPUIdle": ("hw_gpu_phase_idle_seconds_total",), "RLRunStalled": ()},
              f"{TROUBLESHOOTING} (multi-node GRPO hanging inside generation, GPUs at 0 %)", stop=True),
    # the engine's latency tail (p99 15x the median) holds every step while the trainer's GPUs idle
    Pathology("rollout-long-tail", {"RLRolloutLongTail": (),
                                    "RLRolloutGPUIdle": ("hw_gpu_phase_idle_seconds_total",)},
              f"{TROUBLESHOOTING} (a few very long generations hold every step)",
              edits=(('rl_response_length_tokens{stat="max"}', to(float(MAX_RESPONSE_LENGTH))),),
              call=_rollout_long_tail, engine="long-tail"),
    Pathology("rollout-aborts", {"RLRolloutAbortsHigh": ()},
              f"{MILES} (more than 5 % of rollout requests aborted)", engine="aborts"),
    Pathology("kv-cache-thrash", {"RLRolloutKVCacheThrash": ()},
              f"{MILES} (the engine's KV cache above 90 % while it keeps preempting requests)",
              engine="kv-thrash"),
    # the engine process dies; the trainer waits on it and its exporter keeps serving
    Pathology("rollout-engine-down", {"RLRolloutEngineDown": ()},
              f"{TROUBLESHOOTING} (the rollout engine is gone while the trainer still runs)",
              engine="down"),
    # three ranks; the last one's gen takes 2.5x the others' (a slow host or a throttled GPU)
    Pathology("rank-straggler", {"RLRankStraggler": ()},
              f"{VERL_GUIDE} (one slow data-parallel rank holds every step)", ranks=3,
              rank_edits=(('rl_phase_duration_seconds{phase="gen"}', times(2.5)),)),
    # stuck for good inside update_actor (a real timer() is open; the demo loop blocks)
    Pathology("hang", {"RLPhaseHung": (), "RLRunStalled": ()},
              f"{TROUBLESHOOTING} (a collective a dead peer never enters)", stop=True),
    # no alert yet for restarts without progress: the goodput's restart bucket is the signal
    Pathology("crash-loop", {"RLRestartWithoutProgress": ()}, f"{TROUBLESHOOTING} (a run that crashes and resumes from one checkpoint)",
              call=_crash_loop),
    # a healthy trainer that dies of an uncaught exception at the onset (the demo raises it): the
    # hook reports the crash to one last scrape, then its exporter goes with the process. The
    # crash pages at once and mutes the dead target's page (Alertmanager)
    Pathology("crash", {"RLRunCrashed": (), "RLExporterDown": ()},
              f"{TROUBLESHOOTING} (the trainer dies of an exception, its exporter with it)", down=True),
    # a listed target whose trainer never served (no demo process: the end-to-end test lists a
    # port nobody listens on)
    Pathology("never-served", {"RLExporterTargetDown": ()},
              "a scrape target whose trainer never started its exporter", down=True, demo=False),
)

BY_NAME: dict[str, Pathology] = {p.name: p for p in PATHOLOGIES}
