"""Data: groups without signal, truncation, length and validation trends (tickets)."""
from __future__ import annotations

from ..config import Dur
from ..exprs import R, TRUNC_SEL, CONFIG_SEL, recent
from ..model import Alert

ALERTS: list[Alert] = [
    Alert("RLResponseTruncationHigh", "warning",
          recent("avg_over_time", "rl_response_truncated_ratio", TRUNC_SEL) + " > {truncation_ratio_high}\n"
          "or\n(\n" + recent("avg_over_time", "rl_response_length_tokens")
          + "\n  / on (run) max by (run) (" + CONFIG_SEL.format("max_response_length") + " > 0)\n"
          ") > {length_limit_mean_ratio}\n"
          "unless on (run) max by (run) (rl_response_truncated_ratio" + TRUNC_SEL + ")",
          Dur(60), "A large share of responses is cut at the length limit.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of responses hit the length limit (or the "
          "mean length is that share of the limit)."),
    Alert("RLResponseLengthRunaway", "warning",
          "run:rl_response_length_tokens:avg_recent\n"
          "> {length_runaway_factor} * run:rl_response_length_tokens:min_baseline_trend\n"
          "and on (run)\n" + recent("avg_over_time", "rl_response_truncated_ratio", TRUNC_SEL)
          + " > {length_runaway_truncation}\n"
          "and on (run)\nrun:rl_task_reward:avg_recent\n"
          "< run:rl_task_reward:max_baseline_trend + {reward_drop_min}",
          Dur(60), "Responses keep growing into the length limit while the reward does not improve.",
          f"Run {R}: mean response length is {{{{ printf \"%.0f\" $value }}}} tokens, over "
          "[[length_runaway_factor]]x its lowest level of the last tens of steps, with more than "
          "[[length_runaway_truncation]] of responses truncated and no reward gain."),
    Alert("RLLengthFallingRewardRising", "warning",
          "run:rl_response_length_tokens:avg_recent\n"
          "< (1 - {length_drop_ratio}) * run:rl_response_length_tokens:avg_baseline\n"
          "and on (run)\nrun:rl_task_reward:avg_recent\n"
          "> (1 + {reward_rise_ratio}) * run:rl_task_reward:avg_baseline",
          Dur(60), "Responses get shorter while reward rises: a reward-hacking hint.",
          f"Run {R}: mean response length fell to {{{{ printf \"%.0f\" $value }}}} tokens while "
          "reward rose above its baseline."),
    Alert("RLValidationRegressing", "warning",
          'max by (run, data_source) (\n'
          '  max_over_time(rl_validation_score{{stat="", tier!="aux"}}[{validation_window}])\n'
          '  - rl_validation_score{{stat="", tier!="aux"}}\n)\n> {validation_drop}\n'
          'and on (run, data_source)\nmax by (run, data_source) (changes(rl_validation_score{{stat="", '
          'tier!="aux"}}[{validation_window}])) >= {validation_min_changes}\n'
          "and on (run)\nrun:rl_task_reward:avg_recent >= run:rl_task_reward:avg_baseline",
          Dur(60), "Validation score is falling while training reward keeps rising.",
          f"Run {R}: validation on {{{{ $labels.data_source }}}} is {{{{ printf \"%.3f\" $value }}}} "
          "below its best of the validation window while train reward rises."),
]
