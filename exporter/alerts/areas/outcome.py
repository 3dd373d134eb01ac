"""Outcome: the task reward itself."""
from __future__ import annotations

from ..config import Dur
from ..exprs import PRIMARY, halves, ladder, reward_constant
from ..model import Alert, Case, Threshold
from ..series import alt, s
from ..sim.pathology import Pathology, assign, from_entry

ALERTS: list[Alert] = [
    Alert(
        name="RLRewardCollapse", severity="warning", for_=Dur(60),
        expr="(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
             "> {reward_drop_ratio} * abs(run:rl_task_reward:avg_baseline)\n"
             "and\n(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
             "> {reward_drop_min}\n"
             "and\n(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
             "> {reward_noise_sigmas} * run:rl_task_reward:stddev_baseline",
        thresholds={
            "reward_drop_ratio": Threshold(
                0.3,
                "No healthy reward range is established (the posttrain metrics reference), so the "
                "rule is relative: the recent mean of the raw task score this fraction of |baseline| "
                "below the baseline. The Miles lab ranges' healthy per-step range 0.53-0.87 puts a "
                "6-step mean within about +-0.05 of the level, far inside 0.3 x 0.6."),
        },
        summary="The task reward dropped sharply below the run's own recent level.",
        description="Run {{ $labels.run }}: mean task reward fell by {{ printf \"%.3f\" $value }} "
                    "below its baseline over the preceding steps.",
        meaning="the mean task reward of {reward_recent} fell below its mean over {reward_baseline} "
                "by more than {reward_drop_ratio} x that level, more than {reward_drop_min}, and "
                "more than {reward_noise_sigmas} per-step standard deviations of those steps. The "
                "task reward is the raw score (`rl_score`: veRL `critic/score`, slime/Miles "
                "`rollout/raw_reward`) where logged, else `rl_reward`; its windows are twice the "
                "other rules' (a reward is a mean over a few groups, and some trainers log it on "
                "rollout steps only).",
        impact="the policy got worse; checkpoints from now on are not the ones to keep. A ticket: a "
               "relative drop is a judgement (curriculum or data changes move it too), so it does "
               "not page.",
        diagnosis_source="the RL metrics dictionary, section 12, \"Reward 暴跌\"",
        diagnosis="first `rl_entropy` - did it collapse (RLEntropyCollapse)? next "
                  "`rl_policy_clip_ratio` - did it soar? Then `rl_policy_kl`, `rl_grad_norm`, and "
                  "whether the reward function or data changed.",
        mitigation="roll back to the checkpoint before the drop; raise the entropy coefficient or "
                   "temperature, lower the learning rate.",
        cases=[
            Case(
                fire=[s("rl_reward", "0.6x80 0.2x20")], at="90m",
                desc='Run r: mean task reward fell by 0.364 below its baseline over the preceding steps.',
                silent=[s("rl_reward", " ".join(str(round(0.53 + 0.0035 * i + (0.03 if i % 2 else -0.03), 4))
                                                for i in range(100)))], silent_at="95m"),
            Case(
                title="slime: the raw score, not the group-normalised reward",
                fire=[s("rl_score", "0.7x80 0.1x20"), s("rl_reward", "0x100")], at="90m", desc='Run r: mean task reward fell by 0.545 below its baseline over the preceding steps.',
                # the normalised reward swings around 0; the raw score holds
                silent=[s("rl_score", "0.7x100"), s("rl_reward", "0x80 -0.3x20")], silent_at="90m"),
        ],
        cadence=from_entry("no-signal", {"30s": 10, "2m": 9, "10m": 7}),
    ),
    # The same drop, against the best baseline level of the trend window: a decline too slow
    # for the baseline, which drifts down with it.
    Alert(
        name="RLRewardDeclining", severity="warning", for_=Dur(60),
        expr="(\n  run:rl_task_reward:max_baseline_trend - run:rl_task_reward:avg_recent\n)\n"
             "> {reward_decline_ratio} * abs(run:rl_task_reward:max_baseline_trend)\n"
             "and\n(\n  run:rl_task_reward:max_baseline_trend - run:rl_task_reward:avg_recent\n)\n"
             "> {reward_drop_min}\n"
             "and\n(\n  run:rl_task_reward:max_baseline_trend - run:rl_task_reward:avg_recent\n)\n"
             "> {reward_noise_sigmas} * run:rl_task_reward:stddev_baseline",
        thresholds={
            "reward_decline_ratio": Threshold(
                0.3,
                "A slow drift moves the baseline along with it, so a recent-vs-baseline rule never "
                "sees it; the best baseline level of the trend window (TREND_FACTOR recent windows) "
                "does. The recent mean this fraction of |best| below the best: RLRewardCollapse's "
                "ratio, against the level held earlier."),
        },
        summary="The task reward has declined steadily, well below the level it held earlier.",
        description="Run {{ $labels.run }}: mean task reward is {{ printf \"%.3f\" $value }} below "
                    "the best level it held over the last tens of steps: a slow decline the "
                    "step-to-step baseline follows.",
        meaning="the mean task reward of {reward_recent} is below the best level it held over "
                "{reward_trend} by more than {reward_decline_ratio} x that level, more than "
                "{reward_drop_min}, and more than {reward_noise_sigmas} per-step standard "
                "deviations: a decline too slow for RLRewardCollapse, whose baseline drifts down "
                "with it. The task reward is RLRewardCollapse's, over the same windows.",
        impact="the policy has been getting worse for tens of steps; every step since the best level "
               "is wasted, and the step-to-step RLRewardCollapse stays silent because its baseline "
               "declines too.",
        diagnosis_source="the RL metrics dictionary, section 12, \"Reward 暴跌\", read as a slow drift",
        diagnosis="first `rl_response_length_tokens` and `rl_response_truncated_ratio` - are answers "
                  "growing into the limit (RLResponseLengthRunaway)? next `rl_entropy` (rising: the "
                  "policy drifts; falling: it collapses), then `rl_reference_kl` and the reward "
                  "function or data.",
        mitigation="roll back to the checkpoint at the best level; lower the learning rate, raise "
                   "the KL coefficient, or fix what the length and entropy show.",
        cases=[
            # 10 steps of warm-up, then a slow slide 0.6 -> 0.3 over 120 steps: each step-to-step
            # comparison stays under RLRewardCollapse's bar, the best level held earlier does not
            Case(
                fire=[s("rl_reward", "0.6x30 0.6-0.0025x119")], at="150m",
                desc='Run r: mean task reward is 0.282 below the best level it held over the last tens of '
                     'steps: a slow decline the step-to-step baseline follows.',
                silent=[s("rl_reward", " ".join(str(round(0.53 + 0.0015 * i + (0.03 if i % 2 else -0.03), 4))
                                                for i in range(150)))], silent_at="150m"),
        ],
        # a slow slide, under 1 % of the level a step: the step-to-step baseline follows it down
        cadence=Pathology(assign(rl_reward=lambda v, i, r: v["rl_reward"] * max(0.3, 1 - 0.008 * i),
                               rl_score=lambda v, i, r: v["rl_score"] * max(0.3, 1 - 0.008 * i)),
                          {"30s": 66, "2m": 63, "10m": 62},
                          why="the demo's reward-decline entry slides from the demo's own level "
                              "(0.4); this run's healthy reward is 0.53-0.87, so the row slides "
                              "that level by the same rate"),
    ),
    # ---- the reward's shape, in words: exactly 0, exactly at its maximum, or constant
    Alert(
        name="RLRewardAllZero", severity="warning", for_=Dur(60),
        expr=ladder(reward_constant(), "{reward_shape_steps}") + " == 0",
        thresholds={
            "reward_shape_steps": Threshold(
                8,
                "Steps the task reward must hold one value on every sample with no spread: the "
                "longest healthy streaks in the corpus of whole public runs are 3 steps of a zero "
                "mean, 4 of a zero std and 3 of an identical mean (one prompt a step)."),
        },
        summary="Every sample's task reward is exactly 0: the task is too hard for the model, or "
                "the reward is broken.",
        description="Run {{ $labels.run }}: every sample of the last {reward_shape_steps}+ steps "
                    "scored exactly {{ $value }}: every group all-zero, so no gradient signal. "
                    "The task is too hard for the model, or the reward function is broken.",
        meaning="the task reward (`rl_score`, else `rl_reward`) was exactly 0 on every step of "
                "{last_reward_shape_steps}, with no spread logged on any of them (a std above 0 "
                "or a max above the min rules it out): every sample of every group scored 0. The "
                "posttrain metrics reference: a group with equal rewards has an advantage of "
                "exactly zero, so such a batch contributes no gradient at all.",
        impact="the run learns nothing and burns its GPUs: GRPO's advantages are all 0 "
               "(RLGradNormZero and RLNoInformativeGroups follow).",
        diagnosis="first the reward function on a few completions by hand: does a correct answer "
                  "score above 0 (an answer-format mismatch, a parser that never matches, a wrong "
                  "key)? next the task's difficulty for this model (its pass rate before "
                  "training) and `rl_response_truncated_ratio` (cut answers score 0).",
        mitigation="fix the reward function; or start from easier data (a curriculum), a stronger "
                   "model, or a reward with partial credit.",
        cases=[
            Case(
                fire=[s("rl_reward", "0.2 0.1 0x38"), s("rl_reward", "0.3 0.2 0x38", stat="std")],
                at="30m", desc="Run r: every sample of the last 8+ steps scored exactly 0: every "
                               "group all-zero, so no gradient signal. The task is too hard for "
                               "the model, or the reward function is broken.",
                # a hard task: the mean is often 0, but some sample scores on most steps
                silent=[s("rl_reward", "0 0 0 0.1 0 0 0.2 0 0 0 0.05 0 0 0 0.1 0 0 0 0 0.2 0 0 0 "
                                       "0 0.1 0 0 0 0 0.1")], silent_at="25m"),
            Case(
                title="veRL's raw score, not the KL-shaped reward",
                fire=[s("rl_score", "0x40"), s("rl_score", "0x40", stat="max"),
                      s("rl_score", "0x40", stat="min"), s("rl_reward", "-0.1 -0.2 -0.3x38")],
                at="30m", desc="Run r: every sample of the last 8+ steps scored exactly 0: every "
                               "group all-zero, so no gradient signal. The task is too hard for "
                               "the model, or the reward function is broken.",
                # the mean is 0 but some sample scored 1 on some step
                silent=[s("rl_score", "0x30"), s("rl_score", "0x10 1 0x19", stat="max"),
                        s("rl_score", "0x30", stat="min")], silent_at="25m"),
        ],
        cadence=from_entry("no-signal", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    Alert(
        name="RLRewardAllAtMax", severity="warning", for_=Dur(60),
        expr=ladder(reward_constant(), "{reward_shape_steps}") + " == {reward_ceiling}",
        summary="Every sample's task reward is at its maximum: the task is too easy.",
        description="Run {{ $labels.run }}: every sample of the last {reward_shape_steps}+ steps "
                    "scored exactly {{ $value }}, the reward's maximum: every group all-one, so no "
                    "gradient signal. The task is too easy for the model.",
        meaning="the task reward (`rl_score`, else `rl_reward`) was exactly {reward_ceiling} (the "
                "ceiling of a 0/1 correctness reward: the veRL metrics guide scores math tasks 0.0 "
                "or 1.0) on every step of {last_reward_shape_steps}, with no spread logged on any "
                "of them: every sample of every group was right.",
        impact="nothing is left to learn from this data: every advantage is 0 and the steps are "
               "wasted (or the reward is always granted, whatever the answer).",
        diagnosis="first whether the reward can score anything else: a deliberately wrong answer "
                  "by hand (a reward that always returns 1 is a bug, not an easy task); next the "
                  "data's difficulty for this model (its pass rate before training).",
        mitigation="harder data, or filter prompts every sample already solves (dynamic sampling); "
                   "fix the reward if it cannot score below its maximum.",
        cases=[
            Case(
                fire=[s("rl_reward", "0.8 0.9 1x38"), s("rl_reward", "0.2 0.1 0x38", stat="std")],
                at="30m", desc="Run r: every sample of the last 8+ steps scored exactly 1, the "
                               "reward's maximum: every group all-one, so no gradient signal. The "
                               "task is too easy for the model.",
                # a solved task with a few misses a step: the mean is 0.9-0.98, with spread
                silent=[s("rl_reward", alt(0.91, 0.98, 15)), s("rl_reward", "0.1x30", stat="std")],
                silent_at="25m"),
        ],
        cadence=from_entry("reward-at-max", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    Alert(
        name="RLRewardConstant", severity="warning", for_=Dur(60),
        expr="(\n" + ladder(reward_constant(), "{reward_shape_steps}") + "\n!= 0\n) != {reward_ceiling}",
        summary="The task reward is the same on every sample and every step: it does not depend "
                "on the answer.",
        description="Run {{ $labels.run }}: every sample of the last {reward_shape_steps}+ steps "
                    "scored exactly {{ $value }}: the reward does not depend on the answer (a "
                    "reward function not wired to the completions, or only a constant bonus "
                    "earned).",
        meaning="the task reward (`rl_score`, else `rl_reward`) had one value, neither 0 nor "
                "{reward_ceiling}, on every sample of every step of {last_reward_shape_steps}, "
                "with no spread logged on any of them. A reward that discriminates between "
                "answers varies within a step (the RL metrics dictionary: a margin near 0 cannot "
                "tell good from bad).",
        impact="every group ties, every advantage is 0: the run learns nothing, whatever the "
               "answers are.",
        diagnosis="first the reward function on two different completions by hand: the same "
                  "score? (a function reading the prompt instead of the completion, a constant "
                  "format bonus, a reward model returning a default); next `rl_reward_function` "
                  "per component: which one moves, which one is pinned?",
        mitigation="wire the reward to the completions (the right field, the right parser); drop "
                   "or rescale a constant component.",
        cases=[
            Case(
                fire=[s("rl_reward", "0.3 0.7 0.5x38"), s("rl_reward", "0.4 0.3 0x38", stat="std")],
                at="30m", desc="Run r: every sample of the last 8+ steps scored exactly 0.5: the "
                               "reward does not depend on the answer (a reward function not wired "
                               "to the completions, or only a constant bonus earned).",
                # a mean that repeats for a few steps (a coarse reward over few samples) with spread
                silent=[s("rl_reward", "0.5x5 0.25 0.5x4 0.75 0.5x19"), s("rl_reward", "0.2x30", stat="std")],
                silent_at="25m"),
        ],
        cadence=from_entry("reward-constant", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    # ---- a run that has run its course
    Alert(
        name="RLNoImprovement", severity="info", for_=Dur(60),
        expr=halves(
            "((\n"
            "  (max by (run) (avg_over_time(rl_score" + PRIMARY + "[{H}]))\n"
            "   or max by (run) (avg_over_time(rl_reward" + PRIMARY + "[{H}])))\n"
            "  <= on (run)\n"
            "  (max by (run) (avg_over_time(rl_score" + PRIMARY + "[{H}] offset {H}))\n"
            "   or max by (run) (avg_over_time(rl_reward" + PRIMARY + "[{H}] offset {H})))\n"
            "  + {reward_drop_min}\n"
            ")\nand on (run)\n(\n"
            "  (max by (run) (avg_over_time(rl_reference_kl" + PRIMARY + "[{H}]))\n"
            "   or max by (run) (avg_over_time(rl_reward_kl_penalty" + PRIMARY + "[{H}])))\n"
            "  >= on (run) {no_improvement_kl_factor} *\n"
            "  (max by (run) (avg_over_time(rl_reference_kl" + PRIMARY + "[{H}] offset {H}))\n"
            "   or max by (run) (avg_over_time(rl_reward_kl_penalty" + PRIMARY + "[{H}] offset {H})))\n"
            "  > {no_improvement_kl_min}\n"
            "))\n* 0 + {HS} / 3600"),
        thresholds={
            "no_improvement_kl_factor": Threshold(
                2,
                "The RL metrics dictionary: KL to the reference should grow slowly and steadily. "
                "Doubled from one window to the next while the reward stays flat: the policy "
                "moves away from the reference for nothing. Healthy runs whose reward plateaus "
                "raise their KL by 1.3-1.4x over such windows."),
            "no_improvement_kl_min": Threshold(
                0.1,
                "... and above the top of the veRL metrics guide's normal KL range (0.1): a KL "
                "doubling from 0.01 to 0.02 is a run settling, not drifting."),
        },
        summary="The reward has stopped improving while the KL to the reference keeps climbing: "
                "the run has run its course.",
        description="Run {{ $labels.run }}: the task reward has not improved over the last "
                    "{{ printf \"%.1f\" $value }} h of training (the mean of its second half no more "
                    "than {reward_drop_min} above the first half's), while the KL to the reference "
                    "at least doubled. Stop here, or change the recipe.",
        evidence="{{ with printf `count(hw_gpu_memory_limit_bytes{run=\"%s\"}) * %f` $labels.run $value "
                 "| query }}{{ . | first | value | printf \"%.0f\" }} GPU-hours without a reward "
                 "gain{{ else }}{{ printf \"%.1f\" $value }} h times the run's GPUs without a reward "
                 "gain (no GPU series for the run){{ end }}.",
        meaning="the mean task reward (`rl_score`, else `rl_reward`) over the later of "
                "{halves} is no more than {reward_drop_min} above its mean over the earlier one, while the KL to the reference (`rl_reference_kl`, "
                "else `rl_reward_kl_penalty`) rose at least {no_improvement_kl_factor}x between "
                "them to above {no_improvement_kl_min}. Info: an advisory, the value is the hours "
                "of training those windows span.",
        impact="every further step costs GPU-hours and moves the policy further from the "
               "reference (language drift, reward hacking) for no reward.",
        diagnosis="first the validation score (`rl_validation_score`): still rising? then keep "
                  "going; flat too: the run has converged. Next the checkpoint with the best "
                  "reward and validation, and whether the KL coefficient is on (`rl_kl_coefficient`).",
        mitigation="stop and keep the best checkpoint; or change the recipe (harder data, a lower "
                   "learning rate, a stronger KL penalty) before spending more.",
        cases=[
            Case(
                fire=[s("rl_reward", alt(0.6, 0.7, 60)), s("rl_reference_kl", "0.05+0.004x119")],
                at="120m", desc="Run r: the task reward has not improved over the last 2.7 h of "
                                "training (the mean of its second half no more than 0.05 above the "
                                "first half's), while the KL to the reference at least doubled. "
                                "Stop here, or change the recipe.",
                evidence="2.7 h times the run's GPUs without a reward gain (no GPU series for the run).",
                # the reward still climbs: the KL rising with it is the policy learning
                silent=[s("rl_reward", "0.3+0.004x119"), s("rl_reference_kl", "0.05+0.004x119")],
                silent_at="120m"),
        ],
    ),
]
