"""Outcome: the task reward itself."""
from __future__ import annotations

from ..config import Dur
from ..exprs import R
from ..model import Alert

ALERTS: list[Alert] = [
    Alert("RLRewardCollapse", "warning",
          "(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_drop_ratio} * abs(run:rl_task_reward:avg_baseline)\n"
          "and\n(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_drop_min}\n"
          "and\n(\n  run:rl_task_reward:avg_baseline - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_noise_sigmas} * run:rl_task_reward:stddev_baseline",
          Dur(60), "The task reward dropped sharply below the run's own recent level.",
          f"Run {R}: mean task reward fell by {{{{ printf \"%.3f\" $value }}}} below its baseline "
          "over the preceding steps."),
    # The same drop, against the best baseline level of the trend window: a decline too slow
    # for the baseline, which drifts down with it.
    Alert("RLRewardDeclining", "warning",
          "(\n  run:rl_task_reward:max_baseline_trend - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_decline_ratio} * abs(run:rl_task_reward:max_baseline_trend)\n"
          "and\n(\n  run:rl_task_reward:max_baseline_trend - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_drop_min}\n"
          "and\n(\n  run:rl_task_reward:max_baseline_trend - run:rl_task_reward:avg_recent\n)\n"
          "> {reward_noise_sigmas} * run:rl_task_reward:stddev_baseline",
          Dur(60), "The task reward has declined steadily, well below the level it held earlier.",
          f"Run {R}: mean task reward is {{{{ printf \"%.3f\" $value }}}} below the best level it "
          "held over the last tens of steps: a slow decline the step-to-step baseline follows."),
]
