"""The verdict, the clock sentence and the sanity bounds of the point findings, without the engine."""
import math
import types

from exporter.alerts.config import SHARED
from exporter.postmortem import clock, verdict
from exporter.postmortem.evaluate import Evaluation, Finding
from exporter.postmortem.points import Watcher, judge


def seen(frames, framework):
    w = Watcher()
    for i, data in enumerate(frames):
        w.see(data, framework, i + 1, float(i))
    return w


# ------------------------------------------------------------------ sanity bounds
def test_absurd_magnitudes_are_point_findings_with_their_value_in_words():
    # the slime paste of two steps (tests/data/real/slime/prorl_issue40_...): grad norm 3e9
    w = seen([{"train/grad_norm": 2955012562.8, "train/pg_loss": 0.10, "train/loss": 0.10},
              {"train/grad_norm": 2217390918.5, "train/pg_loss": 0.15, "train/loss": 0.15}], "slime")
    s = w.seen["RLPointGradNormFarAboveClip"]
    assert (s.step, s.count) == (1, 2)
    assert "no clip in the log" in s.detail and "numerical failure" in s.detail
    assert set(w.seen) == {"RLPointGradNormFarAboveClip"}


def test_the_clip_from_the_config_print_scales_the_grad_bound():
    base = {"actor/grad_norm": 600.0}
    assert "RLPointGradNormFarAboveClip" not in judge_frames([base], "verl")
    # max_grad_norm 0.1 (an Unsloth recipe): 1000x the clip is 100
    w = seen([{"config/max_grad_norm": 0.1}, base], "verl")
    assert "6e+03x max_grad_norm 0.1" in w.seen["RLPointGradNormFarAboveClip"].detail


def judge_frames(frames, framework):
    return set(seen(frames, framework).seen)


def test_kl_loss_and_entropy_bounds_hold_at_the_healthy_maxima_and_fire_past_them():
    healthy = [{"kl": 0.935, "loss": 20.5, "entropy": 0.020, "grad_norm": 484.0}]   # corpus maxima
    assert judge_frames(healthy, "trl") == set()
    broken = [{"kl": 1200.0, "loss": 3000.0, "entropy": 0.0004, "grad_norm": 2.0e5}]
    assert judge_frames(broken, "trl") == {"RLPointReferenceKLHigh", "RLPointLossMagnitude",
                                           "RLPointEntropyZero", "RLPointGradNormFarAboveClip"}
    # veRL's in-reward KL where no KL loss is logged
    assert judge_frames([{"actor/reward_kl_penalty": 2.0}], "verl") == {"RLPointReferenceKLHigh"}


def test_lengths_pinned_at_the_configured_cap_are_truncation_without_a_truncated_share():
    cap = {"config/max_response_length": 256}
    near = {"response_length/mean": 0.94 * 256, "response_length/max": 256.0,
            "response_length/min": 3.0}   # the official veRL baseline's first steps: healthy
    assert judge_frames([cap, near], "verl") == set()
    pinned = {"response_length/mean": 253.8, "response_length/max": 256.0,
              "response_length/min": 190.0}    # the veRL metrics guide's own example
    w = seen([cap, pinned], "verl")
    assert set(w.seen) == {"RLPointTruncationHigh"}
    assert "no truncated share is logged" in w.seen["RLPointTruncationHigh"].detail
    every = seen([cap, {"response_length/mean": 256.0, "response_length/min": 256.0}], "verl")
    assert "every response was cut" in every.seen["RLPointTruncationHigh"].detail
    # a logged truncated share is read as such: the cap rule stays out of it
    assert judge_frames([cap, dict(pinned, **{"response_length/clip_ratio": 0.2})], "verl") == set()


def test_a_zero_reward_is_said_in_words():
    w = seen([{"reward": 0.0, "reward_std": 0.0}], "trl")
    assert "too hard" in w.seen["RLPointNoRewardVariance"].detail
    w = seen([{"reward": 1.0, "reward_std": 0.0}], "trl")
    assert "too easy" in w.seen["RLPointNoRewardVariance"].detail


def test_bounds_are_the_shared_settings():
    v = {("rl_reference_kl", frozenset()): SHARED["reference_kl_high"] * 1.01}
    assert judge(v) == {"RLPointReferenceKLHigh": v[("rl_reference_kl", frozenset())]}
    assert judge({("rl_reference_kl", frozenset()): SHARED["reference_kl_high"]}) == {}


# ------------------------------------------------------------------ the clock sentence
def test_a_ray_console_log_inherits_its_timestamp_and_is_not_called_a_replay():
    # veRL behind Ray: the metric lines carry no time, the frames all get the banner's
    sample = [(1_700_000_000.0, 77.0)] * 64
    kind, why = clock.choose("auto", sample)
    assert kind == "steps"
    text = clock.sentence(why)
    assert "replay" not in text and "no timestamps of their own" in text
    assert "first 64 frames" in text and "4851 s" in text
    assert text.startswith("Times come from the run's step durations") and text.endswith(".")


def test_a_replayed_spool_says_so_and_names_its_sample():
    kind, why = clock.choose("auto", [(100.0 + 0.01 * i, 60.0) for i in range(10)])
    assert kind == "steps" and "replay" in why and "first 10 frames" in why


def test_every_clock_sentence_reads_after_times_come_from():
    for req, sample in (("auto", [(None, None)] * 3), ("auto", [(None, 5.0)] * 3),
                        ("auto", [(100.0 + 60 * i, 60.0) for i in range(5)]),
                        ("log", [(None, 5.0)]), ("steps", [(1.0, None)]), ("fixed", [(1.0, 5.0)])):
        s = clock.sentence(clock.choose(req, sample)[1])
        assert s.startswith("Times come from ") and s.endswith(".") and "time from" not in s, s


# ------------------------------------------------------------------ the verdict
def _res(steps, ready, points=None):
    seg = types.SimpleNamespace(ready=ready, points=points, index=1)
    return types.SimpleNamespace(steps=steps, segments=[seg])


def _finding(alert, severity, step):
    return Finding(alert=alert, severity=severity, labels={"run": "r"}, start=float(step),
                   end=float(step), value=1.0, step=step, summary="", next="", order=1)


def test_a_short_log_is_too_short_as_its_verdict_never_healthy():
    ev = Evaluation(checks=["A", "B", "C"], no_data=["C"], too_short=["B"])
    w = seen([{"train/grad_norm": 3e9}, {"train/grad_norm": 2e9}], "slime")
    v = verdict.judge(_res(2, False, w), ev)
    assert v.kind == "too_short" and not v.healthy and "healthy" not in v.line
    assert "2 steps" in v.line and v.seen["rl_grad_norm"]["steps"] == 2
    assert "gradient norm 2e+09 to 3e+09" in verdict.seen_text(v.seen)
    ev.findings = [_finding("RLPointGradNormFarAboveClip", "warning", 1)]
    v = verdict.judge(_res(2, False, w), ev)
    assert v.kind == "too_short" and "RLPointGradNormFarAboveClip at step 1" in v.line


def test_healthy_only_when_the_rules_could_judge():
    ev = Evaluation(checks=["A", "B"], no_data=[], too_short=[])
    v = verdict.judge(_res(300, True), ev)
    assert v.kind == "healthy" and v.healthy
    ev.findings = [_finding("RLMFULow", "info", 40)]
    assert verdict.judge(_res(300, True), ev).kind == "healthy"
    ev.findings.append(_finding("RLRewardAllZero", "warning", 12))
    v = verdict.judge(_res(300, True), ev)
    assert v.kind == "findings" and "RLRewardAllZero at step 12" in v.line


def test_the_checks_fold_into_one_count_line():
    ev = Evaluation(checks=[f"A{i}" for i in range(47)], no_data=[f"A{i}" for i in range(19)],
                    too_short=[f"A{i}" for i in range(19, 38)], rule_files=["rules.yaml"])
    line = verdict.checks_line(_res(2, False), ev)
    assert "47 checks" in line and "28 had data" in line and "19 of them need more steps" in line
    assert "19 had none" in line and "--verbose" in line and "A3" not in line
    lines = verdict.verbose_lines(_res(2, False), ev)
    assert lines[0].startswith("  no data for: A0, A1") and "too few steps" in lines[1]


def test_steps_needed_reads_the_evidence_gate():
    assert verdict.steps_needed() == max(SHARED["warmup_steps"], SHARED["baseline_min_steps"]) \
        + SHARED["recent_min_steps"]
    assert not math.isnan(verdict.steps_needed())


# ------------------------------------------------------------------ evidence's pure parts
def test_a_jump_is_a_change_a_slow_trend_is_not():
    from exporter.postmortem.evidence import departure
    trend = [(s, 0.3 + 0.004 * s) for s in range(1, 120)]     # a healthy reward climbing
    assert departure(trend, 100) is None
    jump = [(s, 0.5 if s < 60 else 2.0) for s in range(1, 120)]
    assert departure(jump, 100) == (60, 0.5, 2.0)
    nan = [(s, 0.5 if s < 60 else math.nan) for s in range(1, 120)]
    step, level, v = departure(nan, 60)   # the steps after the finding confirm the change
    assert (step, level) == (60, 0.5) and v != v
    assert departure(jump, 100, near=10) is None   # too long before the finding to lead to it


def test_a_series_is_described_in_a_line():
    from exporter.postmortem.evidence import describe
    assert describe([(1, 0.102), (28, 0.145)], 1) == "0.102 (step 1), 0.145 (step 28)"
    assert describe([(s, 1e-6) for s in range(1, 40)], 10) == \
        "1e-06 on every step it was logged (1 to 39)"


def _departure_by_definition(pts, upto, near=40):
    """departure() as its docstring reads, every candidate step computed in full."""
    import math
    import statistics

    from exporter.postmortem.evidence import LOOKBACK, _finite, _order
    idx = [i for i, (s, _) in enumerate(pts) if _order(s) <= _order(upto)]
    last = idx[-1] if idx else -1
    if last < LOOKBACK:
        return None
    lo = last - near if near is not None else 0
    for i in range(max(LOOKBACK, lo), min(last + 1, len(pts) - 2)):
        before = [v for _, v in pts[i - LOOKBACK:i] if _finite(v)]
        if len(before) < LOOKBACK // 2:
            continue
        level = statistics.median(before)
        d = max(4 * 1.4826 * statistics.median(abs(v - level) for v in before),
                0.3 * abs(level), 1e-12)
        side = [0 if not (isinstance(v, float) and math.isfinite(v)) else
                1 if v > level + d else -1 if v < level - d else None
                for _, v in pts[i:i + 3]]
        if side[0] is not None and all(x == side[0] for x in side[1:]):
            return pts[i][0], level, pts[i][1]
    return None


def test_departure_finds_what_its_definition_finds():
    """The shortcuts (the last step by bisection, a value within 30 % of the level skipped before
    its spread is computed) change no answer: random series with jumps, NaN and infinities."""
    import random

    from exporter.postmortem.evidence import departure
    rnd = random.Random(7)
    found = 0
    for _ in range(600):
        level, pts = rnd.choice([0.0, 1.0, -5.0, 1e-9, 100.0]), []
        for i in range(rnd.randint(0, 70)):
            r, v = rnd.random(), level + rnd.gauss(0, rnd.choice([0, 0.01, 0.5]))
            v = float("nan") if r < 0.04 else float("inf") if r < 0.06 else \
                level * rnd.choice([2, 0, -1, 1.5]) + rnd.choice([0, 3]) if r < 0.2 else v
            if rnd.random() < 0.2 and i > 30:
                level = level * 3 + 1
            pts.append((i, v))
        for upto in (rnd.randint(-2, len(pts) + 3), len(pts), "not a step"):
            for near in (None, 40, 5):
                want, got = _departure_by_definition(pts, upto, near), departure(pts, upto, near)
                assert repr(got) == repr(want), (pts, upto, near)
                found += want is not None
    assert found > 100   # the series do jump: the comparison is not between two Nones
