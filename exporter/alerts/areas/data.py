"""Data: groups without signal, truncation, length and validation trends (tickets)."""
from __future__ import annotations

from ..config import Dur
from ..exprs import TRUNC_SEL, CONFIG_SEL, recent
from ..model import Alert, Case, Threshold
from ..series import alt, s
from ..sim.healthy import uniform
from ..sim.pathology import Pathology, assign, from_entry

ALERTS: list[Alert] = [
    Alert(
        name="RLResponseTruncationHigh", severity="warning", for_=Dur(60),
        expr=recent("avg_over_time", "rl_response_truncated_ratio", TRUNC_SEL) + " > {truncation_ratio_high}\n"
             "or\n(\n" + recent("avg_over_time", "rl_response_length_tokens")
             + "\n  / on (run) max by (run) (" + CONFIG_SEL.format("max_response_length") + " > 0)\n"
             ") > {length_limit_mean_ratio}\n"
             "unless on (run) max by (run) (rl_response_truncated_ratio" + TRUNC_SEL + ")",
        thresholds={
            "truncation_ratio_high": Threshold(
                0.5,
                "The Miles lab ranges measured 0.02-0.43 truncated in a healthy 1,024-token run; the "
                "veRL metrics guide calls 85 % at the limit a reason to raise the limit. Default "
                "just above the healthy max."),
        },
        summary="A large share of responses is cut at the length limit.",
        description="Run {{ $labels.run }}: {{ $value | humanizePercentage }} of responses hit the "
                    "length limit (or the mean length is that share of the limit).",
        meaning="more than {truncation_ratio_high} of responses hit the length limit on average over "
                "{recent}; where no truncation share is logged, the mean response length is above "
                "{length_limit_mean_ratio} x the configured limit "
                "(`rl_config_value{parameter=\"max_response_length\"}`).",
        impact="truncated answers get no or wrong reward; length keeps growing.",
        diagnosis="first `rl_response_length_tokens` vs the limit; next reward on truncated samples.",
        mitigation="raise the response limit, add an overlong penalty, or filter truncated samples.",
        cases=[
            Case(
                fire=[s("rl_response_truncated_ratio", "0.02x10 0.8x30")], at="40m",
                desc='Run r: 80% of responses hit the length limit (or the mean length is that share of the limit).',
                silent=[s("rl_response_truncated_ratio", "0.02+0.01x40"),
                        s("rl_response_truncated_ratio", "0.9x40", subset="non_aborted")], silent_at="40m"),
        ],
        cadence=from_entry("length-truncation", {"30s": 10, "2m": 10, "10m": 8}),
    ),
    Alert(
        name="RLResponseLengthRunaway", severity="warning", for_=Dur(60),
        expr="run:rl_response_length_tokens:avg_recent\n"
             "> {length_runaway_factor} * run:rl_response_length_tokens:min_baseline_trend\n"
             "and on (run)\n" + recent("avg_over_time", "rl_response_truncated_ratio", TRUNC_SEL)
             + " > {length_runaway_truncation}\n"
             "and on (run)\nrun:rl_task_reward:avg_recent\n"
             "< run:rl_task_reward:max_baseline_trend + {reward_drop_min}",
        thresholds={
            "length_runaway_factor": Threshold(
                2,
                "Mean length grown this factor over the lowest level of the trend window ..."),
            "length_runaway_truncation": Threshold(
                0.2,
                "... while at least this share is truncated (the veRL metrics guide: 0.1-0.3 "
                "acceptable, over 0.5 raise the limit) and the reward did not improve: the cap binds "
                "and the extra tokens buy nothing."),
        },
        summary="Responses keep growing into the length limit while the reward does not improve.",
        description="Run {{ $labels.run }}: mean response length is {{ printf \"%.0f\" $value }} "
                    "tokens, over {length_runaway_factor}x its lowest level of the last tens of "
                    "steps, with more than {length_runaway_truncation} of responses truncated and no "
                    "reward gain.",
        meaning="mean response length over {recent} is more than {length_runaway_factor} x the "
                "lowest level it held over {trend}, more than {length_runaway_truncation} of "
                "responses hit the length limit on average over the same recent steps, and the task "
                "reward of {reward_recent} is not {reward_drop_min} above the best level it held "
                "over {reward_trend}.",
        impact="the cap binds: a growing share of answers is cut (no or wrong reward), each step "
               "costs more tokens, and the reward does not improve for it.",
        diagnosis_source="the veRL metrics guide, `response_length/clip_ratio`: 0.1-0.3 acceptable, "
                         "over 0.5 raise `max_response_length`",
        diagnosis="first the truncated answers - repetition or endless reasoning loops, or real "
                  "answers that need room? next `rl_task_reward` on truncated samples and "
                  "`rl_entropy`.",
        mitigation="repetition: an overlong penalty or a lower temperature, roll back; real "
                   "reasoning: raise the limit or filter truncated samples.",
        cases=[
            # length triples from 1,000 tokens in 60 steps while truncation climbs past 0.2 and the
            # reward stays flat; silent: the same growth with the reward rising (a run learning to reason)
            Case(
                fire=[s("rl_response_length_tokens", "1000x30 1000+40x60"),
                      s("rl_response_truncated_ratio", "0.02x30 0.02+0.005x60"), s("rl_reward", "0.5x90")],
                at="90m",
                desc='Run r: mean response length is 3260 tokens, over 2x its lowest level of the last tens of '
                     'steps, with more than 0.2 of responses truncated and no reward gain.',
                silent=[s("rl_response_length_tokens", "1000x30 1000+40x60"),
                        s("rl_response_truncated_ratio", "0.02x30 0.02+0.005x60"),
                        s("rl_reward", "0.3x30 0.3+0.008x60")], silent_at="90m"),
        ],
        # answers grow 4 % a step into a 4,096-token limit, a third of them cut, the reward flat
        cadence=Pathology(
            assign(rl_response_length_tokens=lambda v, i, r: v["rl_response_length_tokens"] * (1 + 0.04 * i),
                 rl_response_truncated_ratio=lambda v, i, r: uniform(r, 0.25, 0.45),
                 rl_reward=lambda v, i, r: uniform(r, 0.55, 0.65), rl_score=lambda v, i, r: uniform(r, 0.55, 0.65),
                 **{'rl_config_value{parameter="max_response_length"}': 4096}),
            {"30s": 36, "2m": 40, "10m": 37},
            why="the demo's length-runaway entry grows into the demo's 1,024-token limit from its ~340 "
                "tokens; this run's healthy lengths (396-787) need a longer limit to double under it"),
    ),
    Alert(
        name="RLLengthFallingRewardRising", severity="warning", for_=Dur(60),
        expr="run:rl_response_length_tokens:avg_recent\n"
             "< (1 - {length_drop_ratio}) * run:rl_response_length_tokens:avg_baseline\n"
             "and on (run)\nrun:rl_task_reward:avg_recent\n"
             "> (1 + {reward_rise_ratio}) * run:rl_task_reward:avg_baseline",
        thresholds={
            "length_drop_ratio": Threshold(
                0.25,
                "A reward-hacking hint (the RL metrics dictionary: \"eval flat but reward up -> is "
                "response_length moving?\"): the length falls this fraction below its baseline ..."),
            "reward_rise_ratio": Threshold(
                0.05,
                "... while the task reward rises this fraction above its baseline."),
        },
        summary="Responses get shorter while reward rises: a reward-hacking hint.",
        description="Run {{ $labels.run }}: mean response length fell to {{ printf \"%.0f\" $value "
                    "}} tokens while reward rose above its baseline.",
        meaning="mean response length over {recent} fell more than {length_drop_ratio} below its "
                "mean over {baseline} while the task reward of {reward_recent} rose more than "
                "{reward_rise_ratio} above its mean over {reward_baseline}.",
        impact="a reward-hacking hint (the RL metrics dictionary: \"评测不涨但 reward 涨 -> "
               "response_length 是否在变\").",
        diagnosis="first validation (`rl_validation_score`: does it still rise?); next "
                  "`rl_response_aborted_ratio` and a sample of short high-reward answers.",
        mitigation="fix the reward function's loophole (format-only rewards, empty answers scored as "
                   "correct).",
        cadence=from_entry("reward-hacking", {"30s": 8, "2m": 7, "10m": 6}),
    ),
    Alert(
        name="RLValidationRegressing", severity="warning", for_=Dur(60),
        # a 0..1 share (var acc|accuracy): an absolute drop; any other scale (var reward,
        # unlabelled): a drop relative to the best level and to the score's own spread. Over
        # days of samples the best is the best of each long_window_resolution piece (every
        # sample counts) and the spread is sampled at that resolution: 720 points, not 11,520
        expr='max by (run, data_source) (\n'
             '  (\n    max_over_time(max_over_time(rl_validation_score{{stat="", tier!="aux", var=~"{validation_share_vars}"}}[{long_window_resolution}])[{validation_window}:{long_window_resolution}])\n'
             '    - rl_validation_score{{stat="", tier!="aux", var=~"{validation_share_vars}"}}\n'
             '  ) > {validation_drop}\n'
             '  or\n'
             '  (\n    max_over_time(max_over_time(rl_validation_score{{stat="", tier!="aux", var!~"{validation_share_vars}"}}[{long_window_resolution}])[{validation_window}:{long_window_resolution}])\n'
             '    - rl_validation_score{{stat="", tier!="aux", var!~"{validation_share_vars}"}}\n'
             '  )\n'
             '  > {validation_drop_ratio} * abs(max_over_time(max_over_time(rl_validation_score{{stat="", tier!="aux", '
             'var!~"{validation_share_vars}"}}[{long_window_resolution}])[{validation_window}:{long_window_resolution}]))\n'
             '  > {validation_noise_sigmas} * stddev_over_time(rl_validation_score{{stat="", tier!="aux", '
             'var!~"{validation_share_vars}"}}[{validation_window}:{long_window_resolution}])\n'
             ')\n'
             'and on (run, data_source)\nmax by (run, data_source) (changes(rl_validation_score{{stat="", '
             'tier!="aux"}}[{validation_window}])) >= {validation_min_changes}\n'
             "and on (run)\nrun:rl_task_reward:avg_recent >= run:rl_task_reward:avg_baseline",
        thresholds={
            "validation_window": Threshold(
                Dur(172800),
                "Validation runs every tens of steps (hours on slow steps), so the window the best "
                "score is taken over is days, not an hour."),
            "validation_drop": Threshold(
                0.05,
                "Where the score is a 0..1 share: the best validation score of the window minus this much (the RL metrics dictionary: "
                "val-core should rise)."),
            "validation_share_vars": Threshold(
                "acc|accuracy",
                "The validation variables that are a 0..1 share (veRL val-core acc, a generic "
                "val/accuracy). veRL falls back to the summed reward (var=\"reward\") where a "
                "dataset has no acc (v1/trainer_base.py), on the reward model's scale (-5..5 for an "
                "RM, the veRL metrics guide section 3.1); slime/Miles, posttrain and OpenRLHF log "
                "the reward."),
            "validation_drop_ratio": Threshold(
                0.1,
                "Any other scale: the drop is this share of the best level's magnitude ..."),
            "validation_noise_sigmas": Threshold(
                2,
                "... and this many standard deviations of the score over the window (its own "
                "spread: held-out noise on a 0-100 or -5..5 scale is far above 0.05)."),
            "validation_min_changes": Threshold(
                2,
                "... with at least this many new validation results in the window."),
        },
        summary="Validation score is falling while training reward keeps rising.",
        description="Run {{ $labels.run }}: validation on {{ $labels.data_source }} is {{ printf "
                    "\"%.3f\" $value }} below its best of the validation window while train reward "
                    "rises.",
        meaning="a core validation score fell below its best of the last {validation_window} (with "
                "at least {validation_min_changes} new validation results in that window) while the "
                "task reward of {reward_recent} is at or above its mean over {reward_baseline}: by "
                "more than {validation_drop} for a 0..1 share (`var` matching "
                "`{validation_share_vars}`), and otherwise (a reward on its own scale, veRL's "
                "fallback where a dataset has no acc, slime/Miles eval/<dataset>) by more than "
                "{validation_drop_ratio} x the best level's magnitude and {validation_noise_sigmas} "
                "standard deviations of the score over the window (sampled every "
                "{long_window_resolution}; the best counts every sample).",
        impact="the policy is overfitting the training reward.",
        diagnosis_source="the RL metrics dictionary",
        diagnosis="first `rl_response_length_tokens` (is length moving?); next "
                  "`rl_response_aborted_ratio`, then the reward function.",
        mitigation="stop at the best validation checkpoint; regularise (KL), fix the reward.",
        cases=[
            Case(
                fire=[s("rl_validation_score", "0.5+0.005x60 0.8-0.01x40", data_source="gsm8k", var="acc",
                        estimator="mean", n="1", tier="core"),
                      s("rl_reward", "0.5+0.003x100")],
                at="100m", labels={"data_source": "gsm8k"},
                desc='Run r: validation on gsm8k is 0.390 below its best of the validation window while train reward rises.',
                silent=[s("rl_validation_score", "0.3+0.004x100", data_source="gsm8k", var="acc", estimator="mean",
                          n="1", tier="core"), s("rl_reward", "0.2+0.006x100")], silent_at="100m"),
            # veRL val-core falls back to the summed reward (var="reward") where a dataset has no
            # acc: on an RM's -5..5 scale, held-out noise of +-0.08 around 2.0 is no regression
            # (the absolute 0.05 of a 0..1 share fired on it); a fall from 2.0 to 1.0 is
            Case(
                title="a score on the reward's own scale",
                fire=[s("rl_validation_score", alt(2.0, 2.08, 30) + " 1.0x40", data_source="hh", var="reward",
                        estimator="mean", n="1", tier="core"),
                      s("rl_reward", "0.5+0.003x100")],
                at="100m", labels={"data_source": "hh"},
                desc='Run r: validation on hh is 1.080 below its best of the validation window while train reward rises.',
                silent=[s("rl_validation_score", alt(2.0, 2.08, 50), data_source="hh", var="reward",
                          estimator="mean", n="1", tier="core"), s("rl_reward", "0.5+0.003x100")],
                silent_at="100m"),
            # a 0-100 score (a benchmark's percent): a 2-point wobble is noise, a 12-point fall is not
            Case(
                title="a 0-100 score",
                fire=[s("rl_validation_score", alt(60, 62, 30) + " 48x40", data_source="aime"),
                      s("rl_reward", "0.5+0.003x100")],
                at="100m", labels={"data_source": "aime"},
                desc='Run r: validation on aime is 14.000 below its best of the validation window while train reward rises.',
                silent=[s("rl_validation_score", alt(60, 62, 50), data_source="aime"),
                        s("rl_reward", "0.5+0.003x100")], silent_at="100m"),
        ],
        cadence=from_entry("validation-regression", {"30s": 56, "2m": 55, "10m": 55}),
    ),
]
