"""RL goodput: the phase -> bucket table on each framework's real phase names (resolved
through the catalog, as the worker does), and the ledger over recorded frames: every second
of wall time lands in exactly one bucket, restarts and stalls included, the same from the
hook, from a spool replayed by `backfill`, and from rlx.timer() windows."""
import json
import math
import time

import pytest

from exporter import Exporter
from exporter.catalog import CATALOG
from exporter.core.goodput import BUCKETS, CLASS_OF, bucket_of


def phase_of(key, framework):
    r = CATALOG.resolve(key, framework)
    assert r.metric is not None and r.metric.name == "rl_phase_duration_seconds", (key, r.reason)
    return dict(r.labels)["phase"]


# (framework, raw key the framework logs, bucket) -- key names from the frameworks' timers at
# the pinned releases
TABLE = [
    ("verl", "timing_s/save_checkpoint", "checkpoint"),
    ("verl", "timing_s/testing", "validation"),
    ("verl", "timing_s/update_weights", "weight_sync"),
    ("verl", "timing_s/sync_rollout_weights", "weight_sync"),   # one-step-off ray_trainer.py:398
    ("verl", "timing_s/switch_to_trainer", "offload"),          # v1 separate_async hybrid swap
    ("verl", "fully_async/total_wait_time", "rollout_wait"),
    ("verl", "timing_s/old_log_prob", "logprob_recompute"),
    ("verl", "timing_s/ref", "reference_logprob"),
    ("verl", "timing_s/update_actor", "step"),
    ("verl", "timing_s/adv", "step"),
    ("verl", "timing_s/reward", "step"),
    ("openrlhf", "timing/broadcast", "weight_sync"),
    ("openrlhf", "timing/generation", "step"),
    ("openrlhf", "timing/make_experience", "step"),
    ("openrlhf", "timing/ppo_train", "step"),
    ("slime", "perf/update_weights_time", "weight_sync"),
    ("slime", "perf/sleep_time", "offload"),
    ("slime", "perf/wake_up_time", "offload"),
    ("slime", "perf/log_probs_time", "logprob_recompute"),
    ("slime", "perf/ref_log_probs_time", "reference_logprob"),
    ("slime", "perf/eval_rollout_time", "validation"),
    ("slime", "perf/save_model_time", "checkpoint"),
    ("slime", "perf/rollout_time", "step"),
    ("slime", "perf/actor_train_time", "step"),
    ("miles", "perf/ref_model_update_time", "weight_sync"),
    ("areal", "timeperf/save", "checkpoint"),
    ("areal", "timeperf/checkpoint_for_recover", "checkpoint"),
    ("areal", "timeperf/eval", "validation"),
    ("areal", "timeperf/update_weights", "weight_sync"),
    ("areal", "timeperf/actor_offload", "offload"),
    ("areal", "timeperf/rollout_pause", "offload"),
    ("areal", "timeperf/recompute_logp", "logprob_recompute"),
    ("areal", "timeperf/ref_logp", "reference_logprob"),
    ("areal", "timeperf/train_step", "step"),
    ("trl", "profiling/Time taken: GRPOTrainer.sync_weights", "weight_sync"),
    ("trl", "profiling/Time taken: GRPOTrainer._move_model_to_vllm", "weight_sync"),
    ("trl", "profiling/Time taken: GRPOTrainer._generate", "step"),
]
# the trainer's call for its next batch: the rollout in a synchronous run, waiting in an async
# one, unclassified where the mode is unknown
MODE_TABLE = [("verl", "timing_s/gen"), ("slime", "perf/train_wait_time"),
              ("miles", "perf/train_wait_time"), ("areal", "timeperf/rollout")]


@pytest.mark.parametrize("framework,key,bucket", TABLE)
def test_phase_bucket_table(framework, key, bucket):
    assert bucket_of(phase_of(key, framework)) == bucket
    assert bucket_of(phase_of(key, framework), 1.0) == bucket == bucket_of(phase_of(key, framework), 0.0)


@pytest.mark.parametrize("framework,key", MODE_TABLE)
def test_mode_phases_follow_the_runs_mode(framework, key):
    phase = phase_of(key, framework)
    assert bucket_of(phase, 0.0) == "step"
    assert bucket_of(phase, 1.0) == "rollout_wait"
    assert bucket_of(phase) == "rollout_unclassified"


def test_every_bucket_has_a_class():
    assert set(CLASS_OF) == set(BUCKETS)
    assert {CLASS_OF[b] for b in ("rollout_wait", "stalled", "restart")} == {"waste"}
    assert {CLASS_OF[b] for b in ("logprob_recompute", "reference_logprob", "weight_sync",
                                  "offload")} == {"overhead"}


def test_table_is_documented():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[3] / "docs" / "goodput.md").read_text()
    for framework, key, bucket in TABLE + [(f, k, None) for f, k in MODE_TABLE]:
        assert f"`{key}`" in doc, key
    for b in BUCKETS:
        assert f"`{b}`" in doc, b


def sync(ex, value=0.0):
    """The run's mode, as the integrations export it (rl_config_value{parameter="async_training"})."""
    ex.store.set("rl_config_value", value, {"parameter": "async_training"})


def counters(ex):
    out = {}
    for sid in ex.store.ids("rl_goodput_seconds_total"):
        out[ex.store.labels[sid]["bucket"]] = ex.store.values[sid]
    return out


def feed(ex, t0):
    """A veRL-shaped run: start-up 30 s, 10 s steps, a checkpoint, validation, weight sync,
    old-log-prob recompute, the agent loop's tail, a 2-hour stall, a resume that redoes
    steps 4-6 after 600 s of downtime."""
    ex.goodput.start = t0
    ts = t0 + 30.0
    ex.process_now({"timing_s/step": 8.0, "timing_s/gen": 5.0}, 1, ts)   # start-up 22 s
    frames = [
        (2, 10, {"timing_s/gen": 5.0}),
        (3, 10, {"timing_s/gen": 5.0, "timing_s/save_checkpoint": 2.0}),
        (4, 10, {"timing_s/testing": 3.0, "timing_s/update_weights": 1.0}),
        (5, 10, {"timing_s/old_log_prob": 1.5, "timing_s/ref": 0.5,
                 "timing_s/agent_loop/generate_sequences/max": 6.0,
                 "timing_s/agent_loop/generate_sequences/mean": 2.0}),
        (6, 10, {}),
        (7, 7210, {}),          # stalled: 7200 s past the expected 10 s
        (4, 600, {}),           # resumed from the step-3 checkpoint: downtime + redone
        (5, 10, {}),
        (6, 10, {}),
        (7, 10, {}),
        (8, 10, {"timing_s/save_checkpoint": 40.0}),  # longer than its interval: capped
    ]
    for step, dt, data in frames:
        ts += dt
        ex.process_now(data, step, ts)
    return ts


def test_ledger_buckets_and_conservation():
    t0 = 1_700_000_000.0
    with Exporter(run="gp-a", framework="verl", serve=False, gpu=False) as ex:
        sync(ex)
        end = feed(ex, t0)
        got = counters(ex)
        snap = ex.goodput.snapshot(now=end)
    assert set(got) <= set(BUCKETS)
    assert math.fsum(got.values()) == pytest.approx(end - t0)  # every second, once
    assert got["startup"] == pytest.approx(22.0)
    assert got["checkpoint"] == pytest.approx(2.0 + 10.0)     # the 40 s save fills its 10 s
    assert got["validation"] == pytest.approx(3.0)
    assert got["weight_sync"] == pytest.approx(1.0)
    assert got["logprob_recompute"] == pytest.approx(1.5)
    assert got["reference_logprob"] == pytest.approx(0.5)
    assert got["rollout_tail"] == pytest.approx(4.0)           # max 6 - mean 2
    assert "rollout_wait" not in got and "rollout_unclassified" not in got  # sync: gen is the step
    assert got["stalled"] == pytest.approx(7200.0)
    assert got["restart"] == pytest.approx(600.0 + 10 + 10 + 10)  # steps 4, 5, 6 redone; 7 too
    assert snap["ratio"] == pytest.approx(got["step"] / (end - t0), abs=1e-4)
    assert snap["comparable"] is True
    assert snap["classes"]["waste"] == pytest.approx(7200.0 + 630.0, abs=1e-2)


def miles_step(ex, step, ts):
    """The Miles lab ranges' medians: step 152.6 s = train_wait 52.3 + train 100.3; log-probs
    23.4 s inside train; weight push 0.64 s, sleep 0.76 s and wake-up 0.87 s inside train_wait."""
    ex.process_now({"perf/step_time": 152.6, "perf/train_wait_time": 52.3, "perf/train_time": 100.3,
                    "perf/log_probs_time": 23.4, "perf/update_weights_time": 0.64,
                    "perf/sleep_time": 0.76, "perf/wake_up_time": 0.87}, step, ts)


@pytest.mark.parametrize("mode,want", [
    # synchronous colocated (train.py --colocate): train_wait is the rollout, its nested phases
    # are booked in their own buckets and nothing is waste
    (0.0, {"logprob_recompute": 23.4, "weight_sync": 0.64, "offload": 1.63}),
    # async (train_async.py): the rest of train_wait, without what ran inside it, is waiting
    (1.0, {"logprob_recompute": 23.4, "weight_sync": 0.64, "offload": 1.63,
           "rollout_wait": 52.3 - 0.64 - 1.63}),
    # mode unknown: the same seconds, unclassified, so the ratio is not compared
    (None, {"logprob_recompute": 23.4, "weight_sync": 0.64, "offload": 1.63,
            "rollout_unclassified": 52.3 - 0.64 - 1.63}),
])
def test_miles_train_wait_by_mode_without_counting_nested_phases_twice(mode, want):
    with Exporter(run="gp-m", framework="miles", serve=False, gpu=False) as ex:
        if mode is not None:
            sync(ex, mode)
        ex.goodput.start = 0.0
        miles_step(ex, 0, 152.6)
        ts = 152.6
        for step in range(1, 11):
            ts += 152.6
            miles_step(ex, step, ts)
        got = counters(ex)
        snap = ex.goodput.snapshot(now=ts)
    for b, s in want.items():
        assert got[b] == pytest.approx(10 * s), b
    assert math.fsum(got.values()) == pytest.approx(ts)
    assert snap["comparable"] is (mode is not None)
    if mode == 0.0:  # the lab's healthy run: no waste, 83 % productive
        assert snap["classes"]["waste"] == 0.0
        assert snap["ratio"] == pytest.approx((152.6 * 11 - 10 * (23.4 + 0.64 + 1.63)) / ts, abs=1e-3)


def test_backfill_of_the_spool_gives_the_same_ledger(tmp_path):
    """The hook's spool, replayed through backfill: the same frames, the same numbers
    (start-up is not in a log, so it is the one bucket that differs)."""
    from exporter.logs import Reader
    from exporter.postmortem.replay import Replay  # what backfill and doctor replay through
    spool = tmp_path / "run.spool"
    t0 = 1_700_000_000.0
    with Exporter(run="gp-b", framework="verl", serve=False, gpu=False, spool=str(spool)) as ex:
        feed(ex, t0)
        live = counters(ex)
    recs = [json.loads(x) for x in spool.read_text().splitlines()]
    replay = Replay("gp-b", "verl")
    for rec, fr in zip(recs, (r.frame for r in Reader("spool").read(spool.read_text().splitlines()))):
        replay.apply(fr.data, fr.step, rec["ts"])
    replayed = counters(replay.pipeline)
    assert any(x.startswith("rl_goodput_seconds_total{") for x in replay.render())
    replay.close()
    live.pop("startup")
    live["step"] -= 8.0  # the first step's own time: its interval begins before the log does
    assert replayed.pop("startup", 0.0) == 0.0
    assert replayed == pytest.approx(live)


def test_timer_windows_feed_badput_buckets():
    with Exporter(run="gp-c", serve=False, gpu=False) as ex:
        for step in range(1, 4):
            with ex.timer("save_checkpoint"):
                time.sleep(0.05)
            with ex.timer("gen"):
                time.sleep(0.02)
            ex.log({}, step=step)
        ex.flush()
        time.sleep(0.5)  # the resolver publishes the windows
        ex.log({}, step=4)
        ex.flush()
        got = counters(ex)
    assert got["checkpoint"] >= 0.1  # at least two windows' saves, 50 ms each
    assert got["step"] > 0


def test_bad_durations_are_not_badput():
    with Exporter(run="gp-d", framework="verl", serve=False, gpu=False) as ex:
        ex.goodput.start = 100.0
        ex.process_now({}, 1, 110.0)
        ex.process_now({"timing_s/save_checkpoint": float("nan")}, 2, 120.0)
        ex.process_now({"timing_s/save_checkpoint": -3.0}, 3, 130.0)
        got = counters(ex)
    assert "checkpoint" not in got and got["step"] == pytest.approx(20.0)


def test_a_step_longer_than_its_interval_keeps_its_phase_shares():
    """A replay or the demo reports 100 s steps 2 s apart: the phases keep their share of
    the interval (20 % checkpoint) instead of filling it."""
    with Exporter(run="gp-e", framework="verl", serve=False, gpu=False) as ex:
        sync(ex)
        ex.goodput.start = 0.0
        ex.process_now({"timing_s/step": 100.0}, 1, 2.0)
        for step in range(2, 6):
            ex.process_now({"timing_s/step": 100.0, "timing_s/save_checkpoint": 20.0,
                            "timing_s/gen": 60.0}, step, 2.0 * step)
        got = counters(ex)
    assert got["checkpoint"] == pytest.approx(4 * 2.0 * 0.2)
    assert got["step"] == pytest.approx(2.0 + 4 * 2.0 * 0.8)  # the first step's 2 s included
