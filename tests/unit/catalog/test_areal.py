"""AReaL: facts beyond the shared conformance (test_conformance.py, data/areal.json): one
StatsLogger commit has no colliding series, __count keys are dropped, the console table resolves."""
import re

import pytest

from tests.helpers import framework_keys, res

from .catalog_asserts import frame_lands

FW = "areal"


def test_one_commit_has_no_colliding_series():
    """StatsLogger commits actor, rollout and eval-rollout stats as one dict."""
    series = {}
    for key in framework_keys(FW):
        r = res(key, FW)
        if r.ignored:
            continue
        sid = (r.metric.name, r.labels)
        assert sid not in series, f"{key} and {series[sid]} both become {sid}"
        series[sid] = key


def test_count_keys_are_ignored_with_reason():
    r = res("ppo_actor/update/grad_norm__count", FW)
    assert r.ignored and r.metric is None and "StatsLogger drops it" in r.reason


def parse_fancy_grid(text):
    """Key/value pairs of a StatsLogger fancy_grid table (4 key/value column pairs)."""
    out = {}
    for line in text.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line)
        if "│" not in line:
            continue
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        for k, v in zip(cells[0::2], cells[1::2]):
            if k:
                out[k] = float(v)
    return out


CONSOLE = """\
(AReaL) 20260822-09:03:26.123 StatsLogger INFO: Epoch 1/3 Step 5/100 Train step 5/300 done.
(AReaL) 20260822-09:03:26.124 StatsLogger INFO: Stats (1/1):
(AReaL) 20260822-09:03:26.125 StatsLogger INFO: 
╒══════════════════════════════╤════════════╤══════════════════════════════════╤═════════════╤═══════════════════════════════╤════════════╤══════════════════════════════════════╤════════════╕
│ ppo_actor/advantages/avg     │ 1.2340e-03 │ ppo_actor/update/actor_loss/avg  │ -4.6100e-03 │ ppo_actor/task_reward/avg     │ 6.2500e-01 │ ppo_actor/update/grad_norm           │ 2.7000e-01 │
├──────────────────────────────┼────────────┼──────────────────────────────────┼─────────────┼───────────────────────────────┼────────────┼──────────────────────────────────────┼────────────┤
│ ppo_actor/advantages/max     │ 2.1000e+00 │ ppo_actor/update/clip_ratio/avg  │ 1.2000e-03  │ ppo_actor/seq_len/avg         │ 6.1200e+02 │ ppo_actor/update/lr                  │ 1.0000e-06 │
├──────────────────────────────┼────────────┼──────────────────────────────────┼─────────────┼───────────────────────────────┼────────────┼──────────────────────────────────────┼────────────┤
│ ppo_actor/n_seqs             │ 2.5600e+02 │ ppo_actor/update/approx_kl/avg   │ 1.3000e-05  │ ppo_actor/no_eos_ratios/avg   │ 3.0000e-02 │ rollout/reward                       │ 6.1000e-01 │
├──────────────────────────────┼────────────┼──────────────────────────────────┼─────────────┼───────────────────────────────┼────────────┼──────────────────────────────────────┼────────────┤
│ ppo_actor/n_valid_tokens     │ 1.2100e+05 │ ppo_actor/update/entropy/avg     │ 4.1000e-01  │ timeperf/rollout              │ 4.1200e+01 │ eval-rollout/reward                  │ 7.0000e-01 │
├──────────────────────────────┼────────────┼──────────────────────────────────┼─────────────┼───────────────────────────────┼────────────┼──────────────────────────────────────┼────────────┤
│ ppo_actor/eps_clip           │ 2.0000e-01 │ ppo_actor/update/n_valid_tokens  │ 4.8400e+05  │ timeperf/train_step           │ 2.3400e+01 │ moe_balance/layer_0/max_over_ideal   │ 1.3100e+00 │
╘══════════════════════════════╧════════════╧══════════════════════════════════╧═════════════╧═══════════════════════════════╧════════════╧══════════════════════════════════════╧════════════╛
"""


def test_console_frame_resolves_with_zero_fallbacks():
    frame = parse_fancy_grid(CONSOLE)
    assert len(frame) == 20 and frame["ppo_actor/update/clip_ratio/avg"] == pytest.approx(1.2e-3)
    frame_lands(frame, FW)
    assert res("ppo_actor/update/clip_ratio/avg", FW).metric.name == "rl_policy_clip_ratio"
