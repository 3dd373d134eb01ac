"""Same meaning, same metric: the PPO clip fraction of every framework lands on one series."""
import pytest

from exporter.catalog import CATALOG

CLIP_KEYS = [
    ("verl", "actor/pg_clipfrac"),
    ("posttrain", "train/clip_frac"),
    ("posttrain", "train/clip_fraction"),
    ("miles", "train/pg_clipfrac"),
    ("slime", "train/pg_clipfrac"),
    ("areal", "ppo_actor/update/clip_ratio/avg"),
]


@pytest.mark.parametrize("framework,key", CLIP_KEYS)
def test_clip_fraction_is_rl_policy_clip_ratio(framework, key):
    r = CATALOG.resolve(key, framework)
    assert not r.fallback and not r.ignored
    assert r.metric.name == "rl_policy_clip_ratio"
    assert dict(r.labels) == {}  # the unlabelled series: either bound, mean over tokens


def test_all_clip_fractions_share_one_series():
    series = {(CATALOG.resolve(k, fw).metric.name, CATALOG.resolve(k, fw).labels)
              for fw, k in CLIP_KEYS}
    assert series == {("rl_policy_clip_ratio", ())}


@pytest.mark.parametrize("framework,key,metric", [
    ("verl", "actor/pg_loss", "rl_policy_loss"),
    ("slime", "train/pg_loss", "rl_policy_loss"),
    ("miles", "train/pg_loss", "rl_policy_loss"),
    ("areal", "ppo_actor/update/actor_loss/avg", "rl_policy_loss"),
    ("posttrain", "train/policy_loss", "rl_policy_loss"),
    ("miles", "train/train_rollout_logprob_abs_diff", "rl_train_inference_logprob_abs_diff"),
    ("posttrain", "train/logprob_gap_mean", "rl_train_inference_logprob_abs_diff"),
    ("areal", "ppo_actor/train_infer/logp_abs_diff/avg", "rl_train_inference_logprob_abs_diff"),
    ("verl", "timing_s/update_weights", "rl_phase_duration_seconds"),
    ("areal", "timeperf/update_weights", "rl_phase_duration_seconds"),
    ("slime", "perf/update_weights_time", "rl_phase_duration_seconds"),
])
def test_other_shared_concepts(framework, key, metric):
    assert CATALOG.resolve(key, framework).metric.name == metric


@pytest.mark.parametrize("key,framework", [
    ("train/clip_frac", "posttrain"),            # not swallowed by slime's train/ families
    ("train/kl_max", "posttrain"),
    ("optim/update_outcome", "posttrain"),
    ("rollout/raw_reward", "slime"),             # not swallowed by AReaL's rollout/ scalars
    ("rollout/truncated_ratio", "slime"),
    ("rollout/weight_version/mean", "miles"),
    ("perf/actor_train_mfu", "miles"),
    ("ppo_actor/update/clip_ratio/avg", "areal"),
    ("rollout/reward", "areal"),
])
def test_auto_mode_finds_the_owning_vocabulary(key, framework):
    r = CATALOG.resolve(key)  # framework="auto": vocabularies tried in FRAMEWORKS order
    assert not r.fallback and r.framework == framework
