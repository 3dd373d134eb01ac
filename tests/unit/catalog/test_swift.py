"""ms-swift vocabulary. The frames below carry the key sets of real ms-swift log lines posted in
public issues (values are ours): a GRPO run's logging.jsonl (modelscope/ms-swift#9261, 4.x) and
a DPO run's console dict (modelscope/ms-swift#4146, 3.x). The key mappings are in data/swift.json
(test_conformance.py)."""
from __future__ import annotations

import pytest

from exporter.catalog import CATALOG

from .catalog_asserts import frame_fallbacks, series_of

GRPO_4X = {  # ms-swift#9261
    "loss": 0.01, "grad_norm": 0.2, "learning_rate": 1e-06, "completions/mean_length": 812.0,
    "completions/min_length": 120.0, "completions/max_length": 4096.0,
    "completions/clipped_ratio": 0.1, "reward": 0.4, "reward_std": 0.3,
    "frac_reward_zero_std": 0.25, "rewards/MathAccuracy/mean": 0.4, "rewards/MathAccuracy/std": 0.3,
    "entropy/mean": 0.8, "entropy/max": 1.2, "entropy/min": 0.3, "clip_ratio/low_mean": 0.0,
    "clip_ratio/low_min": 0.0, "clip_ratio/high_mean": 0.0, "clip_ratio/high_max": 0.0,
    "clip_ratio/region_mean": 0.0, "step_time": 17.7, "epoch": 0.0001,
    "global_step/max_steps": "1/10000", "elapsed_time": "36s", "remaining_time": "4d 3h",
    "memory(GiB)": 55.3, "train_speed(s/it)": 35.9,
}
DPO_3X = {  # ms-swift#4146
    "loss": 0.23, "grad_norm": 0.65, "learning_rate": 8.6e-07, "memory(GiB)": 63.2,
    "train_speed(iter/s)": 0.011, "rewards/chosen": 4.5, "rewards/rejected": -4.1,
    "rewards/accuracies": 1.0, "rewards/margins": 8.6, "logps/chosen": -189.0,
    "logps/rejected": -221.0, "logits/chosen": 0.84, "logits/rejected": 0.87, "nll_loss": 0.92,
    "epoch": 0.64, "global_step/max_steps": "56/176", "percentage": "31.82%",
    "elapsed_time": "1h 22m", "remaining_time": "2h 57m",
}


@pytest.mark.parametrize("frame", [GRPO_4X, DPO_3X], ids=["grpo-4.x", "dpo-3.x"])
@pytest.mark.parametrize("fw", ["swift", "ms-swift"])
def test_issue_frames_have_no_fallbacks_or_collisions(frame, fw):
    assert frame_fallbacks(frame, "swift") == []
    clashes = {s: ks for s, ks in series_of(frame, "swift").items() if len(ks) > 1}
    assert clashes == {}, clashes
    assert CATALOG.resolve("global_step/max_steps", fw).step


def test_progress_strings_are_ignored_with_reasons():
    for key in ("elapsed_time", "remaining_time", "percentage"):
        r = CATALOG.resolve(key, "swift")
        assert r.ignored and "string" in r.reason, key
