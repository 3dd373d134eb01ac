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
          "> {reward_drop_min}",
          Dur(60), "The task reward dropped sharply below the run's own recent level.",
          f"Run {R}: mean task reward fell by {{{{ printf \"%.3f\" $value }}}} below its baseline "
          "over the preceding steps."),
]
