"""Policy causes: entropy, KL, clipping, gradients and the learning rate (tickets)."""
from __future__ import annotations

from ..config import Dur
from ..exprs import R, READY, SEAM, CLIP_SEL, CONFIG_SEL, ladder, over, recent, increase_per_step
from ..model import Alert

ALERTS: list[Alert] = [
    Alert("RLEntropyCollapse", "warning",
          "run:rl_entropy:avg_recent\n< {entropy_collapse_ratio} * run:rl_entropy:avg_baseline",
          Dur(60), "Policy entropy collapsed relative to the run's own recent level.",
          f"Run {R}: mean entropy is {{{{ printf \"%.3f\" $value }}}}, under "
          "[[entropy_collapse_ratio]]x its baseline over the preceding steps."),
    Alert("RLPolicyKLSpike", "warning",
          recent("avg_over_time", "rl_policy_kl") + " > {policy_kl_high}",
          Dur(60), "KL between the sampling and the updated policy is far above its healthy range.",
          f"Run {R}: mean PPO KL (ppo_kl) is {{{{ printf \"%.4f\" $value }}}} over the recent steps."),
    Alert("RLReferenceKLRunaway", "warning",
          "(\n"
          "  run:rl_reference_kl:avg_recent\n"
          "  > {reference_kl_runaway_factor} * (run:rl_reference_kl:avg_baseline > {reference_kl_baseline_min})\n"
          "  and run:rl_reference_kl:avg_recent > {reference_kl_min}\n"
          ")\nor\n"
          "(run:rl_reference_kl:avg_recent > {reference_kl_high} and on (run) " + READY + ")",
          Dur(60), "KL to the reference policy is running away from its recent level.",
          f"Run {R}: mean KL to the reference is {{{{ printf \"%.4f\" $value }}}}: several "
          "times its baseline over the preceding steps, or far above the healthy range."),
    Alert("RLKLSingleTokenDominates", "warning",
          'max by (run) (rl_reference_kl{{stat="max", split=""}})\n'
          '/ max by (run) (rl_reference_kl{{stat="", split=""}}) > {kl_max_over_mean}\n'
          'and on (run)\nmax by (run) (rl_reference_kl{{stat="max", split=""}})\n'
          "> {kl_max_jump_factor} * run:rl_reference_kl_max:avg_baseline\n"
          "and on (run)\nmax by (run) (rl_grad_norm{{stat=\"\", split=\"\"}})\n"
          "> run:rl_grad_norm:max_baseline",
          Dur(60), "One token owns the step: kl_max jumped orders of magnitude above kl_mean with a "
          "grad-norm jump.",
          f"Run {R}: kl_max / kl_mean = {{{{ printf \"%.0f\" $value }}}}, kl_max far above its "
          "baseline, and the gradient norm above anything in the baseline window."),
    Alert("RLClipFractionHigh", "warning",
          recent("avg_over_time", "rl_policy_clip_ratio", CLIP_SEL) + " > {clip_ratio_high}\nor\n"
          + recent("avg_over_time", "rl_policy_sequence_clip_ratio") + " > {sequence_clip_ratio_high}",
          Dur(60), "The PPO ratio clip binds a large share of tokens (or, under GSPO, of responses) "
          "for many steps.",
          f"Run {R}: clip fraction is {{{{ printf \"%.2f\" $value }}}} on average over the recent steps."),
    Alert("RLDualClipFractionHigh", "info",
          recent("avg_over_time", "rl_policy_clip_ratio", '{{stat="", split="", bound="dual"}}')
          + " > {dual_clip_ratio_high}",
          Dur(60), "The dual-clip lower bound binds more negative-advantage tokens than usual.",
          f"Run {R}: dual-clip fraction (pg_clipfrac_lower) is {{{{ printf \"%.2f\" $value }}}} on "
          "average over the recent steps."),
    Alert("RLClipFractionNonZeroOnPolicy", "warning",
          recent("max_over_time", "rl_policy_clip_ratio", CLIP_SEL) + " > 0\n"
          "and on (run)\nmax by (run) (" + CONFIG_SEL.format("n_mini") + ") == 1",
          Dur(60), "Clip fraction is non-zero although the run takes one mini-batch per step (a bug).",
          f"Run {R} reports clip fraction {{{{ printf \"%.4f\" $value }}}} with one mini-batch per "
          "step, where the ratio is identically 1."),
    Alert("RLGradNormExplosion", "warning",
          "run:rl_grad_norm:median_recent\n> {grad_norm_explosion_factor} * run:rl_grad_norm:median_baseline\n"
          "and on (run) run:rl_grad_norm:median_baseline > {grad_norm_vanishing}",
          Dur(60), "Gradient norm exploded relative to the run's own baseline.",
          f"Run {R}: median gradient norm is {{{{ printf \"%.3g\" $value }}}}, more than "
          "[[grad_norm_explosion_factor]]x its baseline over the preceding steps."),
    Alert("RLGradNormPinnedAtClip", "info",
          ladder(over("min_over_time", "rl_grad_norm"), "{grad_clip_pinned_steps}") + "\n"
          ">= on (run) max by (run) (" + CONFIG_SEL.format("max_grad_norm") + " > 0)",
          Dur(60), "The gradient norm sits at or above the clip on every step: every update is clipped.",
          f"Run {R}: the smallest pre-clip gradient norm of the last [[grad_clip_pinned_steps]]+ "
          "steps is {{ printf \"%.3g\" $value }}, at or above max_grad_norm (learning rate too "
          "high?)."),
    Alert("RLGradNormZero", "warning",
          recent("max_over_time", "rl_grad_norm") + " == 0\nor\n"
          + increase_per_step("rl_optimizer_zero_grad_skips_total") + " >= {zero_grad_skip_share}",
          Dur(60), "The gradient has been exactly zero: the run gets no learning signal.",
          f"Run {R}: gradient norm (or zero-gradient skips per step) is {{{{ $value }}}} over the "
          "recent steps."),
    # ... fallen there from a baseline whose median was above the bound: a run whose gradient
    # was always that small (a LoRA adapter of rank 8 on a 7B model: 0.0006-0.03 over 700
    # steps while its score rose) has no stall to show
    Alert("RLGradNormVanishing", "warning",
          "(\n" + recent("max_over_time", "rl_grad_norm") + "\n< {grad_norm_vanishing}\n) > 0\n"
          "and on (run) run:rl_grad_norm:median_baseline > {grad_norm_vanishing}",
          Dur(60), "The gradient norm stayed below the vanishing-gradient bound on every recent step.",
          f"Run {R}: the largest gradient norm of the recent steps is {{{{ printf \"%.2g\" $value }}}}, "
          "under [[grad_norm_vanishing]] (learning stalls)."),
    Alert("RLOptimizerStepsDiverge", "warning",
          ladder("abs(\n    max by (run) (increase(rl_optimizer_steps_total{{role=\"policy\"}}[{W}]))\n"
                  "    - on (run) max by (run) (increase(rl_optimizer_steps_total{{role=\"critic\"}}[{W}]))\n  )"
                  "\n  unless on (run) max by (run) (max_over_time(rl_actor_warmup[{W}]) > 0)")
          + " > {optimizer_steps_divergence}",
          Dur(60), "PPO's policy and critic optimizers no longer advance together.",
          f"Run {R}: policy and critic optimizer steps differ by {{{{ printf \"%.0f\" $value }}}} over "
          "the recent steps (they advance by the same number of minibatches)."),
    # the RL metrics dictionary, section 2.6: a learning rate that suddenly drops to 0 is a
    # configuration bug (a schedule decaying to 0 reaches it only at its last step)
    Alert("RLLearningRateZero", "warning",
          recent("max_over_time", "rl_learning_rate") + " == 0\n"
          "and on (run)\n" + ladder(over("max_over_time", "rl_learning_rate", baseline=True)) + " > 0\n"
          f"unless on (run) {SEAM} == 1",
          Dur(60), "The learning rate dropped to exactly 0: the updates change nothing.",
          f"Run {R}: the learning rate is {{{{ $value }}}} on every recent step after a non-zero "
          "baseline (a schedule or configuration bug)."),
    Alert("RLNoInformativeGroups", "warning",
          "(\n"
          + recent("avg_over_time", "rl_groups", '{{outcome="informative", split=""}}')
          + "\n/ on (run)\n" + recent("avg_over_time", "rl_groups", '{{outcome="total", split=""}}')
          + "\n  unless on (run) max by (run) (rl_dynamic_sampling_refill_rounds or "
            "rl_dynamic_filter_pass_ratio or rl_dynamic_filter_dropped)\n"
          "or\n  1 - " + recent("avg_over_time", "rl_group_zero_std_ratio") + "\n"
          "or\n  1 - " + ladder('sum by (run) (avg_over_time(rl_group_outcome_ratio{{outcome=~"all_zero|all_one", '
                                 'split=""}}[{W}]))') + "\n"
          "or\n  1 - " + ladder('avg by (run) (avg_over_time(rl_advantage_sign_ratio{{sign="zero", stat="", '
                                 'split=""}}[{W}]))') + "\n"
          ") < {informative_groups_min_ratio}\n"
          "or\n" + recent("avg_over_time", "rl_dynamic_filter_pass_ratio") + " < {dynamic_filter_pass_min_ratio}\n"
          "or\n(\n" + recent("max_over_time", "rl_score", '{{stat="max", split=""}}')
          + "\n  - " + recent("min_over_time", "rl_score", '{{stat="min", split=""}}') + "\n) == 0",
          Dur(60), "Almost no GRPO group has differing rewards: the reward does not discriminate.",
          f"Run {R}: only {{{{ $value | humanizePercentage }}}} of GRPO groups (or draws kept by "
          "dynamic sampling) are informative."),
]
