"""Point findings (exporter/postmortem/points.py) and segments (segments.py), without the engine."""
import math

from exporter.postmortem.points import Watcher, judge
from exporter.core.segments import Segmenter


def seen(frames, framework):
    w = Watcher()
    for i, data in enumerate(frames):
        w.see(data, framework, i + 1, float(i))
    return {a: (s.step, s.count) for a, s in w.seen.items()}


def test_each_single_step_failure_has_its_own_name():
    got = seen([{"loss": math.nan, "grad_norm": 0.0, "reward_std": 0.0,
                 "completions/clipped_ratio": 0.95, "entropy": 0.001}], "trl")
    assert set(got) == {"RLPointNonFiniteLoss", "RLPointGradNormZero", "RLPointNoRewardVariance",
                        "RLPointTruncationHigh", "RLPointEntropyZero"}


def test_verl_equal_scores_kl_clip_and_mfu():
    got = seen([{"critic/score/max": 0.0, "critic/score/min": 0.0, "actor/ppo_kl": 0.2,
                 "actor/pg_clipfrac": 0.8, "perf/mfu/actor": 1.7, "actor/grad_norm": math.inf}],
               "verl")
    assert set(got) == {"RLPointNoRewardVariance", "RLPointPolicyKLHigh",
                        "RLPointClipFractionSevere", "RLPointMFUAboveOne",
                        "RLPointNonFiniteGradNorm"}


def test_healthy_values_and_eval_copies_are_not_findings():
    assert seen([{"loss": 0.1, "grad_norm": 0.5, "reward_std": 0.3, "entropy": 0.4,
                  "completions/clipped_ratio": 0.2, "eval_loss": math.nan}], "trl") == {}


def test_first_step_and_count():
    got = seen([{"grad_norm": 1.0}, {"grad_norm": 0.0}, {"grad_norm": 0.0}], "trl")
    assert got == {"RLPointGradNormZero": (2, 2)}


def test_judge_reads_canonical_values():
    v = {("rl_grad_norm", frozenset()): 0.0}
    assert judge(v) == {"RLPointGradNormZero": 0.0}


def cut(steps, starts=None):
    s = Segmenter("r")
    for i, st in enumerate(steps):
        s.see(st, (starts or [0] * len(steps))[i])
        s.current.account(st)
    return [(g.run, g.first_step, g.last_step, g.why.split(":")[0]) for g in s.segments]


def test_step_going_back_is_a_new_segment():
    got = cut([1, 2, 3, 1, 2])
    assert [g[:3] for g in got] == [("r", 1, 3), ("r#2", 1, 2)]
    assert "went back" in got[1][3]


def test_a_second_banner_is_a_new_segment_even_if_steps_go_on():
    got = cut([1, 2, 3, 4], starts=[1, 1, 2, 2])
    assert [g[:3] for g in got] == [("r", 1, 2), ("r#2", 3, 4)]


def test_resumed_start_and_repeated_steps_stay_one_segment():
    s = Segmenter("r")
    for st in (101, 101, 102, 102, 103):
        s.see(st, 0)
        s.current.account(st)
    assert len(s.segments) == 1 and s.segments[0].resumed_from == 101
    assert s.segments[0].steps == 3


def test_a_logging_interval_is_not_a_resume():
    s = Segmenter("r")
    for st in (5, 10, 15):
        s.see(st, 0)
        s.current.account(st)
    assert s.segments[0].resumed_from is None
