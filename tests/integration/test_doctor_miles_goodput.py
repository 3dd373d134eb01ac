"""A Miles run shaped like the Miles lab ranges (Qwen3-0.6B GSM8K on one GB10, 48 steps,
synchronous and colocated), written in Miles' own console format and replayed through doctor
with the real engine: no alert fires, and its goodput is classified, comparable and not
painted as bad. The values are the lab's ranges; the timings its medians (step 152.6 s =
train_wait 52.3 s + train 100.3 s; rollout 47.5 s; log-probs 23.4 s; weight push 0.64 s;
sleep 0.76 s; wake-up 0.87 s)."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from tests.integration.test_doctor import cli, doctor_json, needs_engine

pytestmark = [pytest.mark.integration, needs_engine]

STEPS = 48
STEP_S = 152.6
TRAIN = "\x1b[36m(MegatronTrainRayActor pid=122133)\x1b[0m "
ROLLOUT = "\x1b[36m(RolloutManager pid=114689)\x1b[0m "
ARGS = {  # what Miles' argument table prints for this setup (the rest of its ~1300 rows elided)
    "clip_grad": "1.0", "colocate": "True", "entropy_coef": "0.0", "global_batch_size": "256",
    "kl_coef": "0.0", "kl_loss_coef": "0.0", "n_samples_per_prompt": "8",
    "num_steps_per_rollout": "None", "observe_training_entropy": "False",
    "rollout_batch_size": "32", "rollout_max_response_len": "1024",
    "sglang_mem_fraction_static": "0.7", "update_weights_interval": "1",
    "use_kl_loss": "False", "use_rollout_logprobs": "False",
}


def miles_log() -> str:
    rng = random.Random(2)
    t = datetime(2026, 4, 4, 6, 30, tzinfo=timezone.utc)
    ts = lambda: t.strftime("[%Y-%m-%d %H:%M:%S]")  # noqa: E731
    out = ["------------------------ arguments ------------------------"]
    out += [f"  {k} {'.' * max(2, 48 - len(k))} {v}" for k, v in sorted(ARGS.items())]
    out.append("-------------------- end of arguments ---------------------")
    for r in range(STEPS):
        t += timedelta(seconds=47.5)
        rollout = {"rollout/raw_reward": round(rng.uniform(0.53, 0.87), 4),
                   "rollout/response_lengths": round(rng.uniform(396, 787), 1),
                   "rollout/truncated": round(rng.uniform(0.02, 0.43), 4),
                   "perf/rollout_time": 47.5}
        out.append(f"{ROLLOUT}{ts()} rollout.py:1132 - perf {r}: {rollout}")
        t += timedelta(seconds=STEP_S - 47.5)
        train = {"train/loss": round(rng.uniform(-0.01, 0.01), 5), "train/pg_loss": 0.0,
                 "train/entropy_loss": 0.0, "train/pg_clipfrac": 0.0, "train/ppo_kl": 0.0,
                 "train/train_rollout_logprob_abs_diff": round(rng.uniform(0.0136, 0.0164), 5),
                 "train/train_rollout_kl": round(rng.uniform(0.00063, 0.00076), 6),
                 "train/grad_norm": round(rng.uniform(0.35, 4.95), 3), "train/step": r}
        out.append(f"{TRAIN}{ts()} log_utils.py:443 - step {r}: {train}")
        perf = {"perf/sleep_time": 0.76, "perf/update_weights_time": 0.64, "perf/wake_up_time": 0.87,
                "perf/train_wait_time": 52.3, "perf/log_probs_time": 23.4, "perf/train_time": 100.3,
                "perf/step_time": STEP_S, "perf/wait_time_ratio": round(52.3 / STEP_S, 4)}
        out.append(f"{TRAIN}{ts()} train_metric_utils.py:44 - perf {r}: {perf}")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    path = tmp_path_factory.mktemp("miles") / "miles_lab_medians.log"
    path.write_text(miles_log())
    return doctor_json(str(path)), cli("doctor", str(path)).stdout


def test_no_alert_fires_on_the_lab_ranges(rows):
    found, _ = rows
    assert len(found) == 1 and found[0]["alert"] is None, [r["alert"] for r in found]


def test_goodput_is_classified_comparable_and_nothing_is_wasted(rows):
    found, text = rows
    gp = found[0]["goodput"]
    b, wall = gp["buckets"], gp["accounted_seconds"]
    # colocated Miles runs train.py (train_async.py refuses --colocate): train_wait is the rollout
    assert gp["comparable"] is True and b["rollout_unclassified"] == b["rollout_wait"] == 0.0
    assert gp["classes"]["waste"] == 0.0 and gp["not_wasted"] == 1.0
    per_step = {"logprob_recompute": 23.4, "weight_sync": 0.64, "offload": 0.76 + 0.87}
    steps = wall / STEP_S
    for bucket, s in per_step.items():
        assert b[bucket] / steps == pytest.approx(s, rel=0.05), bucket
    assert gp["ratio"] == pytest.approx(1 - sum(per_step.values()) / STEP_S, abs=0.01)  # 0.83
    assert "not wasted: 100.0% (comparable with other runs)" in text
