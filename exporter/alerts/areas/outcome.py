"""Outcome: the task reward itself."""
from __future__ import annotations

from ..config import Dur
from ..model import Alert, Case, Threshold
from ..series import s
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
]
