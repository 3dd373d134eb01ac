"""Keys found in the real public logs (tests/data/real/), each mapped by what the framework's
source computes, and the keys deliberately left on the bounded fallback, each with its reason."""
import pytest

from exporter.catalog import CATALOG
from exporter.catalog.model import WMEAN
from exporter.logs import ms_swift

from .catalog_asserts import lands

GIB = 2.0 ** 30

NAMED = [
    # ms-swift: swift/metrics/acc.py keys accuracy f"{acc_strategy}_acc"; patcher.py progress keys
    ("ms-swift", "token_acc", "rl_token_accuracy_ratio", {}, 1.0),
    ("ms-swift", "eval_token_acc", "rl_token_accuracy_ratio", {"split": "eval"}, 1.0),
    ("ms-swift", "seq_acc", "rl_sequence_accuracy_ratio", {}, 1.0),
    ("ms-swift", "memory(GiB)", "rl_gpu_memory_peak_bytes", {"kind": "reserved"}, GIB),
    ("ms-swift", "train_speed(s/it)", "rl_average_step_duration_seconds", {}, 1.0),
    ("ms-swift", "train_speed(iter/s)", "rl_trainer_steps_per_second", {"phase": "train"}, 1.0),
    # AReaL, realhf releases: the loss statistics in the ppo_actor/ scope
    ("areal", "ppo_actor/new_logp/min", "rl_token_logprob", {"policy": "current", "stat": "min"}, 1.0),
    ("areal", "ppo_actor/old_logp/avg", "rl_token_logprob", {"policy": "old"}, 1.0),
    ("areal", "ppo_actor/clip_ratio/max", "rl_policy_clip_ratio", {"stat": "max"}, 1.0),
    ("areal", "ppo_actor/dual_clip_ratio/avg", "rl_policy_clip_ratio", {"bound": "dual"}, 1.0),
    ("areal", "ppo_actor/behave_imp_weight/min", "rl_rollout_importance_weight", {"stat": "min"}, 1.0),
    ("areal", "ppo_actor/behave_approx_kl/avg", "rl_rollout_log_importance_weight", {}, 1.0),
    ("areal", "ppo_actor/head_offpolicyness/max", "rl_sample_staleness_steps", {"stat": "max"}, 1.0),
    ("areal", "ppo_actor/vocab_min_logits/avg", "rl_vocabulary_logit", {"extreme": "min"}, 1.0),
    ("areal", "ppo_actor/clipped_tokens", "rl_counted_tokens",
     {"role": "actor", "subset": "update_clipped"}, 1.0),
    ("areal", "ppo_actor/behave_imp_weight_cap", "rl_config_value",
     {"role": "actor", "parameter": "behave_imp_weight_cap"}, 1.0),
    # AReaL, current releases
    ("areal", "ppo_actor/update/behave_approx_kl/max", "rl_rollout_log_importance_weight",
     {"stat": "max"}, 1.0),
    ("areal", "ppo_actor/update/vocab_max_logits/avg", "rl_vocabulary_logit", {"extreme": "max"}, 1.0),
    ("areal", "ppo_actor/update/clipped_new_logp/avg", "rl_token_logprob",
     {"policy": "current", "subset": "clipped"}, 1.0),
    ("areal", "ppo_actor/update/clipped_old_logp/min", "rl_token_logprob",
     {"policy": "old", "subset": "clipped", "stat": "min"}, 1.0),
    ("areal", "ppo_actor/update/compute_logp/prox_logp_gt/avg", "rl_token_logprob",
     {"policy": "proximal"}, 1.0),
    # OpenRLHF
    ("openrlhf", "k_coef", "rl_kl_coefficient", {"target": "reward"}, 1.0),
    ("openrlhf", "gpt_loss", "rl_loss", {"component": "lm"}, 1.0),
    ("openrlhf", "accuracy_reward", "rl_reward_function", {"function": "accuracy_reward"}, 1.0),
    ("openrlhf", "train/format_reward", "rl_reward_function", {"function": "format_reward"}, 1.0),
    # Miles: compaction-aware rollout metrics
    ("miles", "rollout/num_training_samples", "rl_responses", {"subset": "rollout"}, 1.0),
    ("miles", "rollout/episode_raw_reward", "rl_episode_reward", {}, 1.0),
    ("miles", "rollout/episode_response_length/median", "rl_episode_response_length_tokens",
     {"stat": "median"}, 1.0),
    ("miles", "rollout/episode_total_response_length/mean", "rl_episode_response_length_tokens",
     {"tokens": "all"}, 1.0),
    # veRL v0.1
    ("verl", "train/lr(1e-3)", "rl_learning_rate", {}, 1e-3),
    ("verl", "val/loss", "rl_validation_loss", {}, 1.0),
    ("verl", "test_score/openai/gsm8k", "rl_validation_score", {"data_source": "openai/gsm8k"}, 1.0),
]


@pytest.mark.parametrize("fw,key,metric,labels,scale", NAMED)
def test_real_log_key_is_named(fw, key, metric, labels, scale):
    lands(key, fw, metric, labels, scale=scale)


def test_areal_weights_are_the_stats_tracker_denominators():
    r = CATALOG.resolve("ppo_actor/update/behave_approx_kl/avg", "areal")
    assert (r.agg, r.weight) == (WMEAN, "ppo_actor/update/unclipped_behave_tokens")
    r = CATALOG.resolve("ppo_actor/update/clipped_new_logp/avg", "areal")
    assert r.weight == "ppo_actor/update/clipped_tokens"
    r = CATALOG.resolve("ppo_actor/head_offpolicyness/avg", "areal")
    assert r.weight == "ppo_actor/n_seqs"


DELIBERATE = [
    ("ms-swift", "acc", "two meanings"),
    ("ms-swift", "eval_acc", "two meanings"),
    ("areal", "ppo_actor/final_reward/avg", "token-level shaped reward"),
    ("areal", "ppo_actor/update/compute_logp/kl_div_dual/max", "KL estimators"),
    ("areal", "r3/r3_routing_entropy_mean", "router-replay"),
    ("areal", "moe_routing/expert_load_imbalance_cv", "router-replay"),
    ("areal", "rollout/accepted", "bookkeeping"),
    ("verl", "batch/solve_none", "rllm"),
]


@pytest.mark.parametrize("fw,key,why", DELIBERATE)
def test_deliberate_fallback_says_why(fw, key, why):
    r = CATALOG.resolve(key, fw)
    assert r.fallback and r.deliberate and dict(r.labels) == {"key": key}, r
    assert why in r.reason, r.reason


@pytest.mark.parametrize("fw", ["verl", "slime", "miles", "generic"])
@pytest.mark.parametrize("name", ["n_mini", "max_grad_norm", "max_response_length",
                                  "rollout_gpu_memory_fraction"])
def test_config_print_settings_land_on_rl_config_value(fw, name):
    # the alert rules read rl_config_value{parameter="n_mini"}
    lands(f"config/{name}", fw, "rl_config_value", {"parameter": name})
    assert CATALOG.resolve(f"config/{name}", fw).agg == "last"


def test_ms_swift_lines_resolve_with_the_swift_vocabulary():
    assert ms_swift.MsSwiftParser.framework == "swift"
    frame = ms_swift.MsSwiftParser().feed(
        "{'loss': 1.47, 'token_acc': 0.65, 'global_step/max_steps': '1/94', "
        "'memory(GiB)': 4.87, 'train_speed(iter/s)': 0.345807}")[0]
    for key in frame.data:
        assert not CATALOG.resolve(key, ms_swift.MsSwiftParser.framework).fallback, key
