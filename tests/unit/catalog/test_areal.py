"""AReaL vocabulary: every researched key resolves; stats_tracker AVG weights are the denominators."""
import re

import pytest

from exporter.catalog import CATALOG

from catalog_asserts import bundled_keys, known, lands

FW = "areal"
DATA = bundled_keys(FW)


def res(key):
    return CATALOG.resolve(key, FW)


@pytest.mark.parametrize("key", DATA["keys"])
def test_every_key_resolves_in_areal(key):
    assert known(key, FW).framework == FW


def test_one_commit_has_no_colliding_series():
    """StatsLogger commits actor, rollout and eval-rollout stats as one dict."""
    series = {}
    for key in DATA["keys"]:
        r = res(key)
        if r.ignored:
            continue
        sid = (r.metric.name, r.labels)
        assert sid not in series, f"{key} and {series[sid]} both become {sid}"
        series[sid] = key


FALLBACK = object()  # deliberately left on rl_unmapped_value

PATTERN_INSTANCES = {
    r"^timeperf/(?P<phase>.+)$": [
        ("timeperf/rollout", "rl_phase_duration_seconds", {"phase": "rollout"}),
        ("timeperf/update_weights", "rl_phase_duration_seconds", {"phase": "update_weights"}),
    ],
    r"^timeperf/(?P<role>[^/]+)_(onload|offload)$": [
        ("timeperf/actor_offload", "rl_phase_duration_seconds", {"phase": "actor_offload"}),
        ("timeperf/critic_onload", "rl_phase_duration_seconds", {"phase": "critic_onload"}),
    ],
    r"^(?P<base>.+)/(avg|min|max)$": [
        ("ppo_actor/update/clip_ratio/avg", "rl_policy_clip_ratio", {}),
        ("ppo_actor/update/clip_ratio/max", "rl_policy_clip_ratio", {"stat": "max"}),
        ("ppo_actor/task_reward/min", "rl_score", {"stat": "min"}),
        ("ppo_critic/critic_loss/avg", "rl_value_loss", {}),
    ],
    r"^(?P<base>.+)__count$": [
        ("timeperf/rollout__count", None, None),
        ("rollout/reward__count", None, None),
        ("ppo_actor/eps_clip__count", None, None),
    ],
    r"^ppo_actor/update/compute_logp/(?P<method>[^/]+)/(behave_imp_weight|importance_weight)"
    r"_(abs|rel)_error/(avg|min|max)$": [
        # no canonical meaning: on the fallback, on purpose
        ("ppo_actor/update/compute_logp/loglinear/behave_imp_weight_abs_error/avg", FALLBACK, {}),
        ("ppo_actor/update/compute_logp/metrics/importance_weight_rel_error/max", FALLBACK, {}),
    ],
    r"^ppo_actor/update/(rkl_loss|vocab_min_logits|vocab_max_logits|sapo_soft_gate|"
    r"sapo_scaled_gate_pos|sapo_scaled_gate_neg)/(avg|min|max)$": [
        ("ppo_actor/update/rkl_loss/avg", FALLBACK, {}),
        ("ppo_actor/update/vocab_max_logits/max", "rl_vocabulary_logit",
         {"extreme": "max", "stat": "max"}),
        ("ppo_actor/update/vocab_min_logits/avg", "rl_vocabulary_logit", {"extreme": "min"}),
        ("ppo_actor/update/sapo_scaled_gate_neg/min", FALLBACK, {}),
    ],
    r"^(rollout|eval-rollout)/(?P<scalar>[^/]+)$": [
        ("rollout/reward", "rl_reward", {}),
        ("eval-rollout/reward", "rl_reward", {"split": "eval"}),
        ("rollout/num_turns", "rl_turns", {}),
        ("eval-rollout/num_turns", "rl_turns", {"split": "eval"}),
        ("rollout/accepted", FALLBACK, {}),
        ("eval-rollout/max_tokens", FALLBACK, {}),
    ],
    r"^moe_balance/layer_(?P<layer>\d+)/max_over_ideal$": [
        ("moe_balance/layer_0/max_over_ideal", "rl_moe_load_imbalance_ratio", {"layer": "0"}),
        ("moe_balance/layer_47/max_over_ideal", "rl_moe_load_imbalance_ratio", {"layer": "47"}),
    ],
    r"^moe_balance/layer_(?P<layer>\d+)/expert_(?P<expert>\d+)/(tokens|load_percent)$": [
        ("moe_balance/layer_3/expert_12/tokens", "rl_moe_expert_tokens",
         {"layer": "3", "expert": "12"}),
        ("moe_balance/layer_3/expert_12/load_percent", "rl_moe_expert_load_ratio",
         {"layer": "3", "expert": "12"}),
    ],
}


def test_every_pattern_has_instances():
    assert set(PATTERN_INSTANCES) == set(DATA["patterns"])


@pytest.mark.parametrize("regex,key,metric,labels", [
    (rx, k, m, lab) for rx, rows in PATTERN_INSTANCES.items() for k, m, lab in rows])
def test_pattern_instances(regex, key, metric, labels):
    assert re.match(regex, key), "instance does not belong to the family"
    if metric is None:  # deliberately ignored
        r = known(key, FW)
        assert r.ignored and r.metric is None and "StatsLogger drops it" in r.reason
        return
    if metric is FALLBACK:
        r = known(key, FW)
        assert r.fallback and r.deliberate and dict(r.labels) == {"key": key}, r
        return
    lands(key, FW, metric, labels, scale=None)


UT = "ppo_actor/update/n_valid_tokens"
NS = "ppo_actor/n_seqs"
NT = "ppo_actor/n_valid_tokens"
TI = "ppo_actor/train_infer/n_valid_tokens"
VT = "ppo_actor/update/version_stats/n_valid_generated_tokens"
# key, metric, labels, scale, aggregation, weight
TABLE = [
    ("ppo_actor/update/clip_ratio/avg", "rl_policy_clip_ratio", {}, 1.0, "weighted_mean", UT),
    ("ppo_actor/update/clip_ratio/min", "rl_policy_clip_ratio", {"stat": "min"}, 1.0, "min", UT),
    ("ppo_actor/update/dual_clip_ratio/avg", "rl_policy_clip_ratio", {"bound": "dual"}, 1.0,
     "weighted_mean", UT),
    ("ppo_actor/update/actor_loss/avg", "rl_policy_loss", {}, 1.0, "weighted_mean", UT),
    ("ppo_actor/update/approx_kl/avg", "rl_policy_kl", {}, 1.0, "weighted_mean", UT),
    ("ppo_actor/update/entropy/avg", "rl_entropy", {}, 1.0, "weighted_mean", UT),
    ("ppo_actor/update/importance_weight/max", "rl_importance_ratio", {"stat": "max"}, 1.0, "max", UT),
    ("ppo_actor/update/behave_imp_weight/avg", "rl_rollout_importance_weight", {}, 1.0,
     "weighted_mean", "ppo_actor/update/unclipped_behave_tokens"),
    ("ppo_actor/update/grad_norm", "rl_grad_norm", {}, 1.0, "mean", None),
    ("ppo_actor/update/lr", "rl_learning_rate", {}, 1.0, "mean", None),
    ("ppo_actor/update/update_successful", "rl_optimizer_update_success_ratio", {}, 1.0, "mean", None),
    ("ppo_actor/task_reward/avg", "rl_score", {}, 1.0, "weighted_mean", NS),
    ("ppo_actor/seq_len/avg", "rl_sequence_length_tokens", {}, 1.0, "weighted_mean", NS),
    ("ppo_actor/no_eos_ratios/avg", "rl_response_truncated_ratio", {}, 1.0, "weighted_mean", NS),
    ("ppo_actor/correct_seq_len/max", "rl_outcome_sequence_length_tokens",
     {"outcome": "correct", "stat": "max"}, 1.0, "max", "ppo_actor/correct_n_seqs"),
    ("ppo_actor/advantages/avg", "rl_advantage", {}, 1.0, "weighted_mean", NT),
    ("ppo_actor/kl_rewards/avg", "rl_reward_kl_penalty", {}, 1.0, "weighted_mean", NT),
    ("ppo_actor/n_seqs", "rl_responses", {}, 1.0, "sum", None),
    ("ppo_actor/n_valid_tokens", "rl_valid_tokens", {}, 1.0, "sum", None),
    ("ppo_actor/update/clipped_tokens", "rl_counted_tokens",
     {"role": "actor", "subset": "update_clipped"}, 1.0, "sum", None),
    ("ppo_actor/eps_clip", "rl_config_value", {"role": "actor", "parameter": "eps_clip"}, 1.0,
     "last", None),
    ("ppo_critic/eps_clip", "rl_config_value", {"role": "critic", "parameter": "eps_clip"}, 1.0,
     "last", None),
    ("ppo_critic/critic_loss/avg", "rl_value_loss", {}, 1.0, "weighted_mean",
     "ppo_critic/n_valid_tokens"),
    ("ppo_critic/target_value/avg", "rl_return", {}, 1.0, "weighted_mean", "ppo_critic/n_valid_tokens"),
    ("ppo_critic/grad_norm", "rl_critic_grad_norm", {}, 1.0, "mean", None),
    # staleness: underscore statistics spelled out
    ("ppo_actor/update/version_stats/sample_staleness_theta_avg", "rl_sample_staleness_steps", {},
     1.0, "weighted_mean", VT),
    ("ppo_actor/update/version_stats/sample_staleness_theta_max", "rl_sample_staleness_steps",
     {"stat": "max"}, 1.0, "max", None),
    ("ppo_actor/update/version_stats/sample_staleness_proximal_min", "rl_sample_staleness_steps",
     {"reference": "proximal", "stat": "min"}, 1.0, "min", None),
    # train/infer diagnostics (seed 003)
    ("ppo_actor/train_infer/logp_abs_diff/avg", "rl_train_inference_logprob_abs_diff", {}, 1.0,
     "weighted_mean", TI),
    ("ppo_actor/train_infer/kl_k3", "rl_train_inference_kl", {"estimator": "k3"}, 1.0,
     "weighted_mean", TI),
    ("ppo_actor/train_infer/kl_k1", "rl_train_inference_kl", {"estimator": "k1"}, 1.0,
     "weighted_mean", TI),
    ("ppo_actor/train_infer/n_valid_tokens", "rl_train_inference_tokens", {}, 1.0, "sum", None),
    # |d| > ln 2 nats: the same concept as posttrain's logprob_gap_gt0p5_frac
    ("ppo_actor/train_infer/ratio_outside_2", "rl_train_inference_logprob_tail_ratio",
     {"threshold": "0.693"}, 1.0, "weighted_mean", TI),
    ("ppo_actor/train_infer/logp_diff/min", "rl_train_inference_logprob_diff",
     {"stat": "min"}, 1.0, "min", TI),
    # train_perf
    ("train_perf/total_tokens", "rl_tokens_total", {}, 1.0, "max", None),  # running total: max
    ("train_perf/tokens_per_second", "rl_throughput_tokens_per_second", {"phase": "train"}, 1.0,
     "mean", None),
    ("train_perf/estimated_flops_per_second", "rl_achieved_flops_per_second", {"phase": "train"},
     1.0, "mean", None),
    ("train_perf/tokens", "rl_step_tokens", {}, 1.0, "sum", None),
    # moe balance: percent to ratio
    ("moe_balance/layer_2/expert_5/load_percent", "rl_moe_expert_load_ratio",
     {"layer": "2", "expert": "5"}, 0.01, "mean", None),
    ("moe_balance/layer_2/max_over_ideal", "rl_moe_load_imbalance_ratio", {"layer": "2"}, 1.0,
     "max", None),
    ("timeperf/train_step", "rl_phase_duration_seconds", {"phase": "train_step"}, 1.0, "mean", None),
]


@pytest.mark.parametrize("key,metric,labels,scale,agg,weight", TABLE)
def test_important_keys(key, metric, labels, scale, agg, weight):
    r = res(key)
    assert r.metric.name == metric
    assert dict(r.labels) == labels
    assert r.scale == scale
    assert r.agg == agg
    assert r.weight == weight
    if weight is not None:
        w = res(weight)
        assert not w.fallback and not w.ignored and w.agg == "sum", weight


def test_count_keys_are_ignored_with_reason():
    r = res("ppo_actor/update/grad_norm__count")
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
    for key in frame:
        r = res(key)
        assert not r.fallback and not r.ignored, key
    assert res("ppo_actor/update/clip_ratio/avg").metric.name == "rl_policy_clip_ratio"
