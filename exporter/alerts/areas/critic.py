"""Critic and preference models: value learning, DPO/RM overfit and margins (tickets)."""
from __future__ import annotations

from ..config import Dur
from ..exprs import READY, ladder, over, recent
from ..model import Alert, Case, Threshold
from ..series import s
from ..sim.pathology import from_entry

ALERTS: list[Alert] = [
    Alert(
        name="RLCriticNotLearning", severity="warning", for_=Dur(60),
        expr=recent("max_over_time", "rl_value_explained_variance") + " < 0\n"
             "and on (run)\nmax by (run) (rl_training_step) > {critic_warmup_steps}",
        thresholds={
            "critic_warmup_steps": Threshold(
                50,
                "The veRL metrics guide, section 2.4: explained variance < 0 means the critic "
                "learned nothing; early in a run -1.0..0.2 is normal."),
        },
        summary="The critic explains less return variance than a constant after warm-up.",
        description="Run {{ $labels.run }}: value explained variance is {{ printf \"%.3f\" $value }} "
                    "(below 0) on every recent step after warm-up.",
        meaning="value explained variance stayed below 0 on every step of {recent}, after step "
                "{critic_warmup_steps}. PPO with a critic only.",
        impact="advantages are noise; PPO degrades to a biased policy gradient.",
        diagnosis_source="the veRL metrics guide, problem 1",
        diagnosis="first `rl_value_loss` and `rl_critic_learning_rate`; next return scale and "
                  "`rl_value_clip_ratio`.",
        mitigation="raise the critic learning rate or epochs, warm the critic up, normalise returns.",
        cases=[
            Case(
                fire=[s("rl_value_explained_variance", "-0.3x40"), s("rl_training_step", "0+5x40")], at="40m",
                desc='Run r: value explained variance is -0.300 (below 0) on every recent step after warm-up.',
                silent=[s("rl_value_explained_variance", "-0.5+0.03x40"), s("rl_training_step", "0+5x40")],
                silent_at="40m"),
        ],
        cadence=from_entry("critic-not-learning", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    Alert(
        name="RLValueClipFractionHigh", severity="warning", for_=Dur(60),
        expr=recent("avg_over_time", "rl_value_clip_ratio") + " > {value_clip_ratio_high}",
        thresholds={
            "value_clip_ratio_high": Threshold(
                0.5,
                "The veRL metrics guide, section 2.2: vf_clipfrac 0-0.5, usually < 0.2; > 0.5 "
                "restricts the value update."),
        },
        summary="The value clip binds most value predictions: the critic update is restricted.",
        description="Run {{ $labels.run }}: value clip fraction is {{ printf \"%.2f\" $value }} on "
                    "average over the recent steps.",
        meaning="the value clip bound more than {value_clip_ratio_high} of value predictions on "
                "average over {recent} (`rl_value_clip_ratio`).",
        impact="the value update is restricted: the critic cannot follow the returns and advantages "
               "degrade (the veRL metrics guide, section 2.2: 0-0.5 normal, usually below 0.2).",
        diagnosis="first the return scale (`rl_return`) against `cliprange_value`; next "
                  "`rl_value_loss` and `rl_critic_grad_norm` (0.1-100 is normal, usually above the "
                  "actor's).",
        mitigation="raise `cliprange_value`, normalise returns, lower the critic learning rate if "
                   "the value loss swings.",
        cases=[
            # veRL metrics guide section 2.2: vf_clipfrac 0-0.5; > 0.5 restricts the value update
            Case(
                fire=[s("rl_value_clip_ratio", "0.1x30 0.7x30")], at="55m",
                desc="Run r: value clip fraction is 0.70 on average over the recent steps.",
                silent=[s("rl_value_clip_ratio", "0.384x60")], silent_at="55m"),
        ],
        cadence=from_entry("value-clip", {"30s": 13, "2m": 12, "10m": 11}),
    ),
    Alert(
        name="RLPreferenceOverfit", severity="warning", for_=Dur(60),
        expr=recent("min_over_time", "rl_preference_accuracy_ratio") + "\n> {preference_accuracy_high}\n"
             "and on (run)\n(\n"
             + recent("min_over_time", "rl_validation_loss", '{{stat=""}}') + "\n"
             "  >= (1 - {validation_flat_ratio}) * "
             + ladder(over("min_over_time", "rl_validation_loss", '{{stat=""}}', baseline=True))
             + f"\n  and on (run) {READY}\n)",
        thresholds={
            "preference_accuracy_high": Threshold(
                0.98,
                "The RL metrics dictionary, section 12: accuracy 99 %+ with a flat evaluation = "
                "overfit."),
            "validation_flat_ratio": Threshold(
                0.01,
                "... the validation loss not better than this fraction below its baseline best."),
        },
        summary="Preference accuracy is near 1.0 while validation does not improve (overfit).",
        description="Run {{ $labels.run }}: training preference accuracy is {{ $value | "
                    "humanizePercentage }} and the validation loss stopped improving.",
        meaning="preference accuracy stayed above {preference_accuracy_high} on every step of "
                "{recent} while the best validation loss there is no better than (1 - "
                "{validation_flat_ratio}) x the best of {baseline}.",
        impact="DPO/RM training memorises pairs; further steps hurt generalisation.",
        diagnosis="first validation accuracy/loss on held-out pairs; next "
                  "`rl_preference_reward_margin` growth.",
        mitigation="stop early, lower the learning rate / beta, add data.",
        cases=[
            Case(
                fire=[s("rl_preference_accuracy_ratio", "0.99x120"), s("rl_validation_loss", "0.6x120")], at="110m",
                desc="Run r: training preference accuracy is 99% and the validation loss stopped improving.",
                silent=[s("rl_preference_accuracy_ratio", "0.99x120"), s("rl_validation_loss", "0.9-0.004x120")],
                silent_at="110m"),
        ],
        cadence=from_entry("dpo-overfit", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    Alert(
        name="RLRewardModelMarginCollapse", severity="warning", for_=Dur(60),
        expr="run:rl_preference_reward_margin:avg_recent\n"
             "< {margin_collapse_ratio} * run:rl_preference_reward_margin:avg_baseline\n"
             "and run:rl_preference_reward_margin:avg_baseline > 0",
        thresholds={
            "margin_collapse_ratio": Threshold(
                0.3,
                "The RL metrics dictionary (rm/reward_margin): a margin falling towards 0 is a "
                "reward model that no longer discriminates; this fraction of its baseline."),
        },
        summary="The chosen-minus-rejected reward margin is collapsing towards 0.",
        description="Run {{ $labels.run }}: reward margin fell to {{ printf \"%.3f\" $value }}, a "
                    "fraction of its baseline over the preceding steps.",
        meaning="the chosen-minus-rejected reward margin over {recent} fell below "
                "{margin_collapse_ratio} x its mean over {baseline}, where that mean is positive.",
        impact="the reward model no longer discriminates (the RL metrics dictionary: "
               "`rm/reward_margin`).",
        diagnosis="first `rl_preference_accuracy_ratio`; next label noise and learning rate.",
        mitigation="roll back, lower the learning rate, check the data.",
        cadence=from_entry("rm-margin-collapse", {"30s": 16, "2m": 15, "10m": 12}),
    ),
]
