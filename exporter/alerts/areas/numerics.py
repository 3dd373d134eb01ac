"""Numerics: NaN/Inf losses and gradients, and updates the optimizer rejects."""
from __future__ import annotations

from ..config import Dur
from ..exprs import R, nonfinite_persists, increase_recent
from ..model import Alert

ALERTS: list[Alert] = [
    Alert("RLNonFiniteLoss", "critical",
          nonfinite_persists(("rl_loss", "rl_policy_loss", "rl_value_loss")),
          Dur(60), "An RL run's loss has stayed NaN or infinite over several steps.",
          f"Run {R} reports {{{{ $labels.metric }}}} non-finite on every step of the last "
          "[[nonfinite_persist_steps]] or more (value {{ $value }}).",
          why_critical="Certain: NaN/Inf is not a statistical judgement. Persistent: every evaluation "
                       "over a window holding >= [[nonfinite_persist_steps]] steps saw it, so a lone skipped step "
                       "cannot page. "
                       "Fatal: a loss that stays non-finite means the weights or the optimizer state "
                       "are poisoned; every further step is wasted."),
    Alert("RLOptimizerNonFiniteSkips", "critical",
          "max by (run) (rl_optimizer_consecutive_nonfinite_skips{{split=\"\"}}) >= "
          "{nonfinite_consecutive_skips}",
          Dur(60), "The optimizer keeps rejecting updates for a non-finite loss or gradient.",
          f"Run {R} skipped {{{{ $value }}}} updates in a row for a non-finite loss or gradient.",
          why_critical="Certain: the trainer's own finite-gradient guard counts it. Persistent: >= "
                       "[[nonfinite_consecutive_skips]] rejections in a row (the counter resets on the first update that lands). "
                       "Fatal: no update lands, the run trains nothing."),
    Alert("RLNonFiniteGradSkipped", "warning",
          increase_recent('rl_exporter_nonfinite_values_total{{metric="rl_grad_norm"}}')
          + " >= {nonfinite_grad_repeats}\nor\n"
          + increase_recent("rl_optimizer_nonfinite_skips_total") + " >= {nonfinite_grad_repeats}",
          Dur(60), "Updates with a non-finite gradient norm keep being skipped.",
          f"Run {R}: {{{{ $value }}}} non-finite gradient norms (skipped updates) in the recent "
          "step window.",
          ),
]
