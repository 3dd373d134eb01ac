"""Generic vocabulary (the metric guides' framework-neutral names) beyond the shared conformance
(test_conformance.py, data/generic.json): legacy lr units, guide frames, the legacy veRL console."""
from __future__ import annotations

import pytest

from exporter.catalog import CATALOG

from .catalog_asserts import frame_fallbacks, series_of

FW = "generic"

# Seed 004 section 11.4 legacy veRL console step, as key -> value.
LEGACY_CONSOLE = {
    "timing/gen": 21.470, "timing/ref": 4.360, "timing/values": 5.800,
    "actor/reward_kl_penalty": 0.000, "actor/reward_kl_penalty_coeff": 0.001, "timing/adv": 0.109,
    "timing/update_critic": 15.664, "critic/vf_loss": 14.947, "critic/vf_clipfrac": 0.000,
    "critic/vpred_mean": -2.056, "critic/grad_norm": 1023.278, "critic/lr(1e-4)": 0.100,
    "timing/update_actor": 20.314, "actor/entropy_loss": 0.433, "actor/pg_loss": -0.005,
    "actor/pg_clipfrac": 0.000, "actor/ppo_kl": 0.000, "actor/grad_norm": 1.992,
    "actor/lr(1e-6)": 0.010, "critic/score/mean": 0.004, "critic/score/max": 1.000,
    "critic/score/min": 0.000, "response_length/mean": 239.133, "response_length/max": 256.000,
}
# Seed 004 sections 5, 9, 10 and seed 001 sections 5, 6 as one frame of guide names.
GUIDE_FRAME = {
    "episode/reward/mean": 0.65, "episode/reward/max": 1.0, "episode/reward/min": 0.0,
    "episode/length/mean": 15.3, "episode/length/max": 50.0, "episode/length/min": 3.0,
    "episode/success_rate_alfworld": 0.68, "world_model/loss": 2.345, "world_model/grad_norm": 0.823,
    "val/score": 0.856, "val/accuracy": 0.856, "val/pass@1": 0.4,
}
DPO_FRAME = {"loss/dpo": 0.6, "rewards/chosen": 0.3, "rewards/rejected": -0.2, "rewards/margins": 0.5,
             "rewards/accuracy": 0.7, "logps/chosen": -80.0, "logps/rejected": -95.0,
             "kl_estimate": 0.02, "loss/kl": 0.01}
RM_FRAME = {"rm/loss": 0.5, "rm/accuracy": 0.75, "rm/reward_margin": 1.2, "rm/reward_chosen/mean": 0.8,
            "rm/reward_rejected/mean": -0.4, "rm/grad_norm": 2.0}


def test_legacy_lr_in_an_unlisted_unit_is_ignored_not_misscaled():
    for key in ("actor/lr(5e-7)", "critic/lr(1e-10)"):
        r = CATALOG.resolve(key, FW)
        assert r.ignored and "factor" in r.reason, (key, r.reason)


def test_legacy_lr_value_round_trip():
    # actor/lr(1e-6):0.010 on the console is 1e-8
    r = CATALOG.resolve("actor/lr(1e-6)", FW)
    assert abs(0.010 * r.scale - 1e-8) < 1e-20


@pytest.mark.parametrize("name,frame", [("guide", GUIDE_FRAME), ("dpo", DPO_FRAME), ("rm", RM_FRAME)])
def test_guide_frames_have_no_fallbacks_or_collisions(name, frame):
    assert frame_fallbacks(frame, FW) == []
    clashes = {s: ks for s, ks in series_of(frame, FW).items() if len(ks) > 1}
    assert clashes == {}, f"{name}: several keys on one series: {clashes}"


def test_legacy_verl_console_resolves_with_auto():
    # The old console mixes veRL keys with the legacy timing/ and lr(1e-N) forms: auto finds
    # the veRL ones in verl and the legacy ones in generic.
    assert frame_fallbacks(LEGACY_CONSOLE, "auto") == []
    assert CATALOG.resolve("timing/update_actor", "auto").metric.name == "rl_phase_duration_seconds"
    r = CATALOG.resolve("critic/lr(1e-4)", "auto")
    assert r.metric.name == "rl_critic_learning_rate" and r.scale == pytest.approx(1e-4)
