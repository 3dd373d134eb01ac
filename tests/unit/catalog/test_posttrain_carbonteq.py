"""posttrain (carbonteq-ai) beyond the shared conformance (test_conformance.py,
data/posttrain_carbonteq.json): renamed TRL keys land where TRL puts them, counts sum, and GRPO
and forwarded DPO records resolve."""
from __future__ import annotations

from exporter.catalog import CATALOG
from tests.helpers import framework_keys

from .catalog_asserts import frame_fallbacks, research_entry, series_of

FW = "posttrain_carbonteq"


def test_trl_renames_land_where_trl_puts_them():
    entry = research_entry(FW)
    # every native TRL key carbonteq renames lands where plain TRL puts it
    for trl_key, canonical in entry["mapping_trl_to_canonical"].items():
        # `loss` fills policy_loss only when GRPO logs no policy_loss; rollout/spec_* are veRL keys
        if trl_key == "loss" or trl_key.startswith("rollout/"):
            continue
        # carbonteq's train/rl/kl is TRL kl or veRL actor/ppo_kl: no single meaning, so fallback
        if canonical == "train/rl/kl":
            assert CATALOG.resolve(canonical, FW).deliberate
            continue
        a, b = CATALOG.resolve(trl_key, "trl"), CATALOG.resolve(canonical, FW)
        assert a.metric.name == b.metric.name, (trl_key, canonical)


def test_counts_sum_across_ranks():
    assert CATALOG.resolve("train/rl/completion_tokens_total", FW).agg == "sum"
    assert CATALOG.resolve("train/rl/rollouts_failed", FW).agg == "sum"


def test_required_grpo_record_resolves_without_fallbacks_or_collisions():
    # One GRPO step as normalize_grpo_metrics emits it: the core_required set plus optional ones.
    frame = {k: 0.0 for k in framework_keys(FW)}
    frame["step"] = 7
    assert frame_fallbacks(frame, FW) == ["train/rl/kl"]  # ambiguous in carbonteq: on purpose
    assert CATALOG.resolve("step", FW).step
    clashes = {s: ks for s, ks in series_of(frame, FW).items() if len(ks) > 1}
    assert clashes == {}, clashes


def test_forwarded_dpo_record_resolves():
    frame = {"train/loss": 0.6, "train/grad_norm": 1.0, "train/learning_rate": 5e-7, "train/epoch": 0.1,
             "train/rewards/chosen": 0.3, "train/rewards/rejected": -0.1, "train/rewards/margins": 0.4,
             "train/rewards/accuracies": 0.7, "train/logps/chosen": -80.0, "train/logits/chosen": -1.0,
             "train/validation/loss": 0.65, "train/validation/rewards/margins": 0.3}
    assert frame_fallbacks(frame, FW) == []
