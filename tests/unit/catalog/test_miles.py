"""Miles: facts beyond the shared conformance (test_conformance.py, data/miles.json, which
also checks slime's keys and families in the Miles vocabulary): slime's keys mean the same in
Miles, and console and JSONL frames resolve."""
import ast
import json

import pytest

from tests.helpers import framework_keys, res

from .catalog_asserts import frame_lands

FW = "miles"


@pytest.mark.parametrize("key", framework_keys("slime"))
def test_slime_keys_mean_the_same_in_miles(key):
    m, s = res(key, FW), res(key, "slime")
    assert (m.metric and m.metric.name, m.labels, m.scale, m.agg) == \
           (s.metric and s.metric.name, s.labels, s.scale, s.agg)


CONSOLE = ("[2026-08-21 18:09:36.123 actor_cell0_rank0] log_utils.py:542 - step 7: {'train/loss': "
           "-0.0031, 'train/pg_loss': -0.0031, 'train/grad_norm': 0.27, 'train/lr-pg_0': 1e-06, "
           "'train/step': 7}")
JSONL = ('{"timestamp":"2026-08-21T18:09:36.123456Z","source":{"component":"main"},"type":"metric",'
         '"rollout_id":null,"attempt":null,"metrics":{"perf/rollout_time":41.2,"rollout/step":3}}')


def test_console_and_jsonl_frames_resolve_with_zero_fallbacks():
    frame = ast.literal_eval(CONSOLE.split(" - step 7: ", 1)[1])
    frame.update(json.loads(JSONL)["metrics"])
    frame_lands(frame, FW)
    assert res("train/step", FW).step
    assert not res("rollout/step", FW).step
