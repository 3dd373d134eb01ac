"""Numerics: NaN/Inf losses and gradients, and updates the optimizer rejects."""
from __future__ import annotations

from ..config import Dur
from ..exprs import RUN_FINISHED, increase_recent, nonfinite_persists
from ..model import Alert, Case, Threshold
from ..series import life, s
from ..sim.pathology import from_entry

# the evidence annotation where no guard counted a skip (the cases' fire series have none)
NO_GUARD_SKIPS = ("No update was skipped by a non-finite guard over the last 20m (or the run "
                  "reports none): the updates may have been applied; roll back to the last "
                  "finite checkpoint.")

ALERTS: list[Alert] = [
    Alert(
        name="RLNonFiniteLoss", severity="critical", for_=Dur(60),
        expr=nonfinite_persists(("rl_loss", "rl_policy_loss", "rl_value_loss"))
             # the trainer's finite-gradient guard rejected the latest update: the weights are
             # intact, and the guard's own page (RLOptimizerNonFiniteSkips) takes over
             + "\nunless on (run) max by (run) (rl_optimizer_consecutive_nonfinite_skips{{split=\"\"}}) > 0"
             "\nunless on (run)\n" + RUN_FINISHED,
        thresholds={
            "nonfinite_persist_steps": Threshold(
                3,
                "A loss NaN or infinite on every sample of a window holding at least this many "
                "steps: no update lands. A lone non-finite step the trainer skipped is "
                "RLNonFiniteGradSkipped's."),
        },
        summary="An RL run's loss has stayed NaN or infinite over several steps.",
        description="Run {{ $labels.run }} reports {{ $labels.metric }} non-finite on every step of "
                    "the last {nonfinite_persist_steps} or more (value {{ $value }}).",
        evidence=("{{ with printf `sum(increase(rl_optimizer_nonfinite_skips_total{run=\"%s\"}[{step_window_2}])) "
                  "> 0` $labels.run | query }}The optimizer's non-finite guard skipped {{ . | first | "
                  "value | printf \"%.0f\" }} updates over the last {step_window_2}: the weights are "
                  "intact, resume from the latest checkpoint.{{ else }}No update was skipped by a "
                  "non-finite guard over the last {step_window_2} (or the run reports none): the "
                  "updates may have been applied; roll back to the last finite checkpoint.{{ end }}"),
        why_critical="Certain: NaN/Inf is not a statistical judgement. What else could produce it: a "
                     "lone bad batch (one step) does not page; a finite-gradient guard that rejected "
                     "those updates (its consecutive-skip count above 0) leaves the weights intact, so "
                     "this stays silent and the guard's own RLOptimizerNonFiniteSkips pages once no "
                     "update lands {nonfinite_consecutive_skips} times in a row (the "
                     "`finite_gradient_check_enabled` setting alone says a guard exists, not that it "
                     "rejected these steps); a run that finished on a non-finite loss does not page "
                     "(nothing further is wasted; doctor reports it). Where no guard reports, the "
                     "loss reached the optimizer, or every update is skipped with nobody counting: "
                     "either way nothing useful trains. Persistent: every evaluation over a window "
                     "holding >= {nonfinite_persist_steps} steps saw it. Fatal: a loss that stays "
                     "non-finite means the weights or the optimizer state are poisoned; every "
                     "further step is wasted.",
        meaning="the loss, policy loss or value loss was NaN or infinite on every step of "
                "{last_nonfinite_persist_steps}. A lone non-finite step, or a non-finite gradient "
                "norm the trainer skipped, does not page (see RLNonFiniteGradSkipped); nor does a "
                "run whose finite-gradient guard rejected the latest update "
                "(`rl_optimizer_consecutive_nonfinite_skips` above 0: the weights are intact, and "
                "RLOptimizerNonFiniteSkips pages after {nonfinite_consecutive_skips} in a row), nor a "
                "run that finished (its last known state, remembered {lifecycle_window}, or its last step at the configured "
                "total).",
        impact="a loss that stays non-finite means the weights or optimizer state are poisoned; "
               "every later step is wasted. Paging.",
        diagnosis="first whether a finite-gradient guard rejected those updates: this pages only "
                  "where none reported rejecting the latest one, but a trainer that skips without "
                  "counting (veRL skips a step whose gradient norm is not finite) keeps its weights "
                  "too (RL run overview, row Optimizer outcome: Update outcome = skipped, Skip "
                  "reason): then the run can resume from the latest checkpoint instead of rolling "
                  "back. Next the "
                  "steps before the NaN on the Gradient norm and KL to reference panels (the veRL "
                  "metrics guide: training collapse = gradient explosion; the posttrain metrics "
                  "reference: one token owning the step), then the learning rate schedule, bf16/fp16 "
                  "overflow, and rewards outside the expected scale.",
        mitigation="updates skipped: resume from the latest checkpoint with the cause fixed; updates "
                   "applied: roll back to the last finite checkpoint. Then lower the learning rate "
                   "or enable gradient clipping / the finite-gradient guard, clamp the KL "
                   "coefficient.",
        cases=[
            Case(
                fire=[s("rl_policy_loss", "0.01 0.01 " + " ".join(["NaN"] * 14)), s("rl_grad_norm", "0.5x15")],
                at="15m", labels={"metric": "rl_policy_loss"}, desc='Run r reports rl_policy_loss non-finite on every step of the last 3 or more (value 1).',
                evidence=NO_GUARD_SKIPS,
                silent=[s("rl_policy_loss", "0.01 -0.01 0.005 0 0.01 0.002"), s("rl_grad_norm", "0.35 4.95 1 2 0.5 0.6"),
                        s("rl_loss", "0.3x5")], silent_at="5m"),
            # the guard rejected every one of those updates: the weights are intact
            Case(
                title="a guard that skipped those updates",
                fire=[s("rl_policy_loss", "0.01 0.01 " + " ".join(["NaN"] * 14)), s("rl_grad_norm", "0.5x15"),
                      s("rl_optimizer_consecutive_nonfinite_skips", "0x15")],
                at="15m", labels={"metric": "rl_policy_loss"}, desc='Run r reports rl_policy_loss non-finite on every step of the last 3 or more (value 1).',
                evidence=NO_GUARD_SKIPS,
                silent=[s("rl_policy_loss", "0.01 0.01 " + " ".join(["NaN"] * 14)), s("rl_grad_norm", "0.5x15"),
                        s("rl_optimizer_consecutive_nonfinite_skips", "0 0 1+1x13")], silent_at="15m"),
            Case(
                title="a run that finished",
                fire=[s("rl_policy_loss", "0.01 0.01 " + " ".join(["NaN"] * 14)), s("rl_grad_norm", "0.5x15"),
                      *life([("running", 16, 0)])],
                at="15m", labels={"metric": "rl_policy_loss"}, desc='Run r reports rl_policy_loss non-finite on every step of the last 3 or more (value 1).',
                evidence=NO_GUARD_SKIPS,
                silent=[s("rl_policy_loss", "0.01 0.01 " + " ".join(["NaN"] * 14)), s("rl_grad_norm", "0.5x15"),
                        *life([("running", 14, 0), ("finished", 2, 840)])], silent_at="15m"),
        ],
        cadence=from_entry("nan-loss", {"30s": 17, "2m": 7, "10m": 13}),
    ),
    Alert(
        name="RLOptimizerNonFiniteSkips", severity="critical", for_=Dur(60),
        expr="max by (run) (rl_optimizer_consecutive_nonfinite_skips{{split=\"\"}}) >= "
             "{nonfinite_consecutive_skips}\nunless on (run)\n" + RUN_FINISHED,
        thresholds={
            "nonfinite_consecutive_skips": Threshold(
                5,
                "This many updates in a row rejected by a finite-gradient guard (the posttrain "
                "metrics reference, optim/nonfinite_skips_consecutive): no update lands."),
        },
        summary="The optimizer keeps rejecting updates for a non-finite loss or gradient.",
        description="Run {{ $labels.run }} skipped {{ $value }} updates in a row for a non-finite "
                    "loss or gradient.",
        why_critical="Certain: the trainer's own finite-gradient guard counts it. What else could "
                     "produce it: a restart starts a new process whose count begins at 0; a run that "
                     "finished with its last updates rejected keeps its last count in a serving "
                     "exporter, and does not page. Persistent: >= {nonfinite_consecutive_skips} "
                     "rejections in a row (the counter resets on the first update that lands). Fatal: "
                     "no update lands, the run trains nothing.",
        meaning="the optimizer rejected {nonfinite_consecutive_skips} or more updates in a row for a "
                "non-finite loss or gradient (`rl_optimizer_consecutive_nonfinite_skips`), in a run "
                "that has not finished (its last known state, remembered {lifecycle_window}, or its "
                "last step at the configured total).",
        impact="the guard keeps the weights safe, but no update lands: the run is not training. Paging.",
        diagnosis="first `rl_optimizer_skip_reason` (loss or gradient); next what RLNonFiniteLoss "
                  "says about the same steps.",
        mitigation="as for RLNonFiniteLoss; a run that skips forever will not heal by itself.",
        cases=[
            Case(
                fire=[s("rl_optimizer_consecutive_nonfinite_skips", "0 0 1+1x14")],
                at="15m", desc="Run r skipped 14 updates in a row for a non-finite loss or gradient.",
                silent=[s("rl_optimizer_consecutive_nonfinite_skips", "1 0 2 0 1 0 2 0")], silent_at="7m"),
            Case(
                title="a run that finished",
                fire=[s("rl_optimizer_consecutive_nonfinite_skips", "0 0 1+1x14"), *life([("running", 16, 0)])],
                at="15m", desc="Run r skipped 14 updates in a row for a non-finite loss or gradient.",
                silent=[s("rl_optimizer_consecutive_nonfinite_skips", "0 0 1+1x14"),
                        *life([("running", 14, 0), ("finished", 2, 840)])], silent_at="15m"),
        ],
        cadence=from_entry("nan-loss-skipped", {"30s": 10, "2m": 8, "10m": 8}),
    ),
    Alert(
        name="RLNonFiniteGradSkipped", severity="warning", for_=Dur(60),
        expr=increase_recent('rl_exporter_nonfinite_values_total{{metric="rl_grad_norm"}}')
             + " >= {nonfinite_grad_repeats}\nor\n"
             + increase_recent("rl_optimizer_nonfinite_skips_total") + " >= {nonfinite_grad_repeats}",
        thresholds={
            "nonfinite_grad_repeats": Threshold(
                2,
                "veRL and most trainers skip an update whose grad norm is not finite; one such step "
                "is safe, this many within the recent window are worth a ticket."),
        },
        summary="Updates with a non-finite gradient norm keep being skipped.",
        description="Run {{ $labels.run }}: {{ $value }} non-finite gradient norms (skipped updates) "
                    "in the recent step window.",
        meaning="{nonfinite_grad_repeats} or more non-finite gradient norms (counted by the "
                "exporter) or optimizer non-finite skips in {recent}. One skipped update is "
                "harmless; repeats are a trend.",
        impact="skipped updates waste their batch; repeats often precede a persistent NaN "
               "(RLNonFiniteLoss).",
        diagnosis="first `rl_grad_norm` and `rl_reference_kl{stat=\"max\"}` on the steps around the "
                  "skips; next bf16 overflow and the learning rate.",
        mitigation="lower the learning rate or loosen nothing: fix the source of the overflow before "
                   "it persists.",
        cadence=from_entry("nan-loss", {"30s": 8, "2m": 7, "10m": 7}),
    ),
]
