"""Critic and preference models: value learning, DPO/RM overfit and margins (tickets)."""
from __future__ import annotations

from ..config import Dur
from ..exprs import R, READY, ladder, over, recent
from ..model import Alert

ALERTS: list[Alert] = [
    Alert("RLCriticNotLearning", "warning",
          recent("max_over_time", "rl_value_explained_variance") + " < 0\n"
          "and on (run)\nmax by (run) (rl_training_step) > {critic_warmup_steps}",
          Dur(60), "The critic explains less return variance than a constant after warm-up.",
          f"Run {R}: value explained variance is {{{{ printf \"%.3f\" $value }}}} (below 0) on every "
          "recent step after warm-up."),
    Alert("RLValueClipFractionHigh", "warning",
          recent("avg_over_time", "rl_value_clip_ratio") + " > {value_clip_ratio_high}",
          Dur(60), "The value clip binds most value predictions: the critic update is restricted.",
          f"Run {R}: value clip fraction is {{{{ printf \"%.2f\" $value }}}} on average over the "
          "recent steps."),
    Alert("RLPreferenceOverfit", "warning",
          recent("min_over_time", "rl_preference_accuracy_ratio") + "\n> {preference_accuracy_high}\n"
          "and on (run)\n(\n"
          + recent("min_over_time", "rl_validation_loss", '{{stat=""}}') + "\n"
          "  >= (1 - {validation_flat_ratio}) * "
          + ladder(over("min_over_time", "rl_validation_loss", '{{stat=""}}', baseline=True))
          + f"\n  and on (run) {READY}\n)",
          Dur(60), "Preference accuracy is near 1.0 while validation does not improve (overfit).",
          f"Run {R}: training preference accuracy is {{{{ $value | humanizePercentage }}}} and the "
          "validation loss stopped improving."),
    Alert("RLRewardModelMarginCollapse", "warning",
          "run:rl_preference_reward_margin:avg_recent\n"
          "< {margin_collapse_ratio} * run:rl_preference_reward_margin:avg_baseline\n"
          "and run:rl_preference_reward_margin:avg_baseline > 0",
          Dur(60), "The chosen-minus-rejected reward margin is collapsing towards 0.",
          f"Run {R}: reward margin fell to {{{{ printf \"%.3f\" $value }}}}, a fraction of its "
          "baseline over the preceding steps."),
]
