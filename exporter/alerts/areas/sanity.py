"""Sanity bounds: values no healthy run has at any step, from the first step on.

The relative rules compare a run with its own baseline; a run broken from its first logged step
has none. These rules need no baseline, only persistence over a window holding a few steps (a
lone step is doctor's point finding, exporter/postmortem/points.py). Their numbers are the shared
settings of exporter/alerts/config.py, where each is argued from the sources' ranges and the
healthy maxima of the project's corpus of whole public runs.
"""
from __future__ import annotations

from ..config import Dur
from ..exprs import CONFIG_SEL, ladder
from ..model import Alert, Case
from ..series import alt, s
from ..sim.pathology import from_entry

_CLIP = "max by (run) (" + CONFIG_SEL.format("max_grad_norm") + " > 0)"
_GRAD_LOW = ladder('max by (run) (min_over_time(rl_grad_norm{{stat="", split=""}}[{W}]))',
                   "{grad_norm_absurd_steps}")


def _loss_far(metrics) -> str:
    """Every sample of the window beyond the metric's bound, on one side (label `metric`)."""
    parts = []
    for m, bound in metrics:
        x = f'{m}{{{{stat="", split=""}}}}[{{W}}]'
        parts.append(f'label_replace(max by (run) (min_over_time({x})) > {{{bound}}} or '
                     f'max by (run) (max_over_time({x})) < -{{{bound}}}, "metric", "{m}", "", "")')
    return ladder("\n  or ".join(parts), "{loss_absurd_steps}")


ALERTS: list[Alert] = [
    Alert(
        name="RLGradNormFarAboveClip", severity="warning", for_=Dur(60),
        expr="(\n" + _GRAD_LOW + "\n  > on (run) {grad_norm_absurd_factor} * " + _CLIP + "\n)\nor\n(\n"
             + _GRAD_LOW + "\n  > {grad_norm_absurd_factor}\n  unless on (run) " + _CLIP + "\n)",
        summary="The gradient norm is orders of magnitude above the clip: no healthy run has one "
                "like it.",
        description="Run {{ $labels.run }}: the smallest gradient norm of the last "
                    "{grad_norm_absurd_steps}+ steps is {{ printf \"%.3g\" $value }}, more than "
                    "{grad_norm_absurd_factor}x max_grad_norm (or {grad_norm_absurd_factor} where no "
                    "clip is logged).",
        meaning="the gradient norm (`rl_grad_norm`, before clipping) was above "
                "{grad_norm_absurd_factor} x `max_grad_norm` "
                "(`rl_config_value{parameter=\"max_grad_norm\"}`; above {grad_norm_absurd_factor} "
                "where the run logs no clip) on every step of {last_grad_norm_absurd_steps}. No "
                "baseline is needed: no healthy run has such a step (the veRL metrics guide calls "
                "a norm above 10 an explosion; the highest healthy RL norm seen is 66x its clip).",
        impact="each update is the clip times the gradient's direction; a norm this far past it is "
               "a numerical failure in the making (overflow, a near-zero reference probability, a "
               "loss scale gone wrong): the next steps can wreck the policy.",
        diagnosis="first `rl_policy_loss` and `rl_reference_kl{stat=\"max\"}` on the same steps (a "
                  "normal loss with an absurd norm is an overflow in the backward pass, not a "
                  "bad batch); next bf16/fp16 loss scaling, the learning rate and the reward scale.",
        mitigation="tighten gradient clipping or enable the finite-gradient guard, lower the "
                   "learning rate, compute the loss in fp32; roll back if the weights moved.",
        cases=[
            Case(
                fire=[s("rl_grad_norm", "0.6x10 2500x20"),
                      s("rl_config_value", "1x30", parameter="max_grad_norm")],
                at="25m", desc="Run r: the smallest gradient norm of the last 2+ steps is 2.5e+03, "
                               "more than 1000x max_grad_norm (or 1000 where no clip is logged).",
                # the highest healthy pre-clip norm of an RL run: 66x its clip of 1.0, lone steps
                silent=[s("rl_grad_norm", alt(0.6, 66, 15)),
                        s("rl_config_value", "1x30", parameter="max_grad_norm")], silent_at="25m"),
            Case(
                title="no clip logged",
                fire=[s("rl_grad_norm", "0.6x10 3e9x20")], at="25m",
                desc="Run r: the smallest gradient norm of the last 2+ steps is 3e+09, more than "
                     "1000x max_grad_norm (or 1000 where no clip is logged).",
                # a supervised run's first steps: 484, 476, 276
                silent=[s("rl_grad_norm", "484 476 276 52 20 10x25")], silent_at="25m"),
        ],
        cadence=from_entry("grad-explosion", {"30s": 25, "2m": 24, "10m": 23}),
    ),
    Alert(
        name="RLLossMagnitudeAbsurd", severity="warning", for_=Dur(60),
        expr=_loss_far((("rl_policy_loss", "policy_loss_absurd"), ("rl_loss", "loss_absurd"),
                        ("rl_value_loss", "value_loss_absurd"))),
        summary="A loss has a magnitude only a numerical failure gives.",
        description="Run {{ $labels.run }}: {{ $labels.metric }} has stayed at {{ printf \"%.3g\" "
                    "$value }} or beyond over the last {loss_absurd_steps}+ steps, past any "
                    "healthy run's.",
        meaning="the policy loss beyond +-{policy_loss_absurd}, the loss beyond +-{loss_absurd} or "
                "the value loss beyond +-{value_loss_absurd} on every step of "
                "{last_loss_absurd_steps}. A clipped surrogate is bounded by the advantage times "
                "(1 + clip), and the veRL metrics guide puts pg_loss at -0.01..0.01 and an early "
                "vf_loss at 10-100 (scaled by the reward): these magnitudes come from an "
                "overflow, a loss scale or a reward scale gone wrong, not from a bad batch.",
        impact="the updates are driven by a number, not a signal: the policy is being thrown "
               "around, or the optimizer is clipping everything away.",
        diagnosis="first `rl_grad_norm` on the same steps and the reward scale (`rl_reward`, "
                  "`rl_advantage`); next the loss's own terms: the KL coefficient times the KL "
                  "(`rl_kl_coefficient`, `rl_reference_kl`), an entropy bonus, the loss scale.",
        mitigation="fix the scale (normalise rewards or advantages, lower the KL coefficient), "
                   "compute the loss in fp32; roll back if the weights moved.",
        cases=[
            Case(
                fire=[s("rl_policy_loss", "0.01x10 250x20")], at="25m", labels={"metric": "rl_policy_loss"},
                desc="Run r: rl_policy_loss has stayed at 250 or beyond over the last 3+ steps, past "
                     "any healthy run's.",
                # the highest healthy values seen: |policy loss| 0.89, loss 20.5 (a supervised step 1)
                silent=[s("rl_policy_loss", alt(-0.68, 0.89, 15)), s("rl_loss", "20.5 5 3 2x27"),
                        s("rl_value_loss", "16.5 9 5x28")], silent_at="25m"),
            Case(
                title="a negative loss",
                fire=[s("rl_loss", "0.5x10 -3000x20")], at="25m", labels={"metric": "rl_loss"},
                desc="Run r: rl_loss has stayed at -3e+03 or beyond over the last 3+ steps, past "
                     "any healthy run's.",
                silent=[s("rl_loss", "0.5x10 -3000 0.5x19")], silent_at="25m"),
        ],
        cadence=from_entry("loss-scale", {"30s": 17, "2m": 7, "10m": 13}),
    ),
    Alert(
        name="RLEntropyAtZero", severity="warning", for_=Dur(60),
        # the framework's own entropy; the update pass's (veRL actor/entropy_loss, slime/Miles
        # train/entropy_loss) only where a run logs no other and it is not 0 on every step: Miles
        # writes 0 there when it does not compute it
        expr=ladder('max by (run) (max_over_time(rl_entropy{{stat="", split="", phase=""}}[{W}]))\n'
                    '  or max by (run) (max_over_time(rl_entropy{{stat="", split="", phase="update"}}[{W}])) > 0',
                    "{entropy_zero_steps}") + " < {entropy_zero_max}",
        summary="The policy's entropy is at 0: it answers the same tokens every time.",
        description="Run {{ $labels.run }}: the highest entropy of the last {entropy_zero_steps}+ "
                    "steps is {{ printf \"%.3g\" $value }}, under {entropy_zero_max}: a "
                    "deterministic policy.",
        meaning="the token entropy (`rl_entropy`, never an entropy term of the loss; the update "
                "pass's where a run logs no other, unless it is 0 on every step: slime/Miles write "
                "0 there when they do not compute it) stayed under "
                "{entropy_zero_max} on every step of {last_entropy_zero_steps}. No baseline is "
                "needed: the veRL metrics guide calls < 0.05 a near-deterministic policy, and the "
                "lowest healthy entropy seen is 0.020 (a 7B PPO run).",
        impact="the policy no longer explores: every sample of a group is the same answer, so "
               "groups tie, advantages vanish and the run stops learning (or has collapsed onto "
               "a reward hack).",
        diagnosis="first the task score (`rl_score`, else `rl_reward`): collapsed, or pinned at a "
                  "hacked maximum? next `rl_response_length_tokens` (one short answer?) and the "
                  "entropy coefficient and temperature.",
        mitigation="roll back to a checkpoint before the collapse; raise the entropy coefficient "
                   "or the rollout temperature, add or raise the KL penalty.",
        cases=[
            Case(
                fire=[s("rl_entropy", "0.5x10 0.002x20")], at="25m",
                desc="Run r: the highest entropy of the last 3+ steps is 0.002, under 0.01: a "
                     "deterministic policy.",
                # the lowest healthy entropy seen: 0.020-0.040 (a 7B PPO run), one step at 0.02
                silent=[s("rl_entropy", alt(0.02, 0.04, 15))], silent_at="25m"),
            # slime/Miles' update-pass entropy is 0 when the run does not compute it
            # (observe_training_entropy off): no entropy, not a deterministic policy
            Case(
                title="the update pass's entropy where a run logs no other",
                fire=[s("rl_entropy", "0.5x10 0.002x20", phase="update")], at="25m",
                desc="Run r: the highest entropy of the last 3+ steps is 0.002, under 0.01: a "
                     "deterministic policy.",
                silent=[s("rl_entropy", "0x30", phase="update")], silent_at="25m"),
        ],
        cadence=from_entry("entropy-zero", {"30s": 17, "2m": 7, "10m": 13}),
    ),
]
