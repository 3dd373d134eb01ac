"""ms-swift (the released package, tests/requirements/swift.txt): "--callbacks rl_exporter"
resolved by ms-swift's own callbacks_map and SwiftMixin._get_callbacks, with ms-swift's own
argument class, then driven by transformers' CallbackHandler (the Trainer's event path).

ms-swift 4.6.0 pins trl<1.0; with this project's TRL (1.16) swift.rlhf_trainers does not
import (`trl.experimental.ppo` is gone), so the RL argument classes (GRPOConfig) are covered
through TRL's own GRPOConfig, which they subclass (tests/unit/integrations/test_trl_callback.py).
"""
from __future__ import annotations

import types
import urllib.error
import urllib.request

import pytest

from tests.integration.real_packages import config_series, need, scrape_url
from tests.unit.integrations._check import assert_exported

pytestmark = pytest.mark.integration

SWIFT_GRPO_KEYS = ["loss", "grad_norm", "learning_rate", "reward", "reward_std", "frac_reward_zero_std",
                   "kl", "completions/mean_length", "completions/clipped_ratio"]


def test_callbacks_map_entry_exports_through_the_trainer_callback_path(tmp_path):
    callbacks = need("swift.callbacks")
    swift_trainers = need("swift.trainers")
    need("swift.trainers.mixin")
    from transformers.trainer_callback import CallbackHandler, TrainerControl, TrainerState

    from exporter.integrations.swift import register
    assert register() is callbacks.callbacks_map
    assert "rl_exporter" in callbacks.callbacks_map

    args = swift_trainers.Seq2SeqTrainingArguments(
        output_dir=str(tmp_path / "swift-out"), callbacks=["rl_exporter"], report_to=[],
        max_grad_norm=0.7, use_cpu=True)
    fake_trainer = types.SimpleNamespace()
    made = swift_trainers.SwiftMixin._get_callbacks(fake_trainer, args)  # ms-swift's own lookup
    assert len(made) == 1
    ours = made[0]
    ours.exporter_kwargs.update(port=0, addr="127.0.0.1")

    handler = CallbackHandler(made, model=None, processing_class=None, optimizer=None, lr_scheduler=None)
    state, control = TrainerState(), TrainerControl()
    state.is_world_process_zero = True
    handler.on_train_begin(args, state, control)
    url = ours.exporter.url
    frames = []
    for step in (1, 2, 3):
        state.global_step = step
        handler.on_step_end(args, state, control)
        frame = {k: step + i / 100 for i, k in enumerate(SWIFT_GRPO_KEYS)}
        frames.append(frame)
        handler.on_log(args, state, control, dict(frame))
    ours.exporter.flush()
    series = scrape_url(url)
    assert series[("rl_training_step", ())] == 3
    assert series[("rl_reward", ())] == frames[-1]["reward"]
    assert series[("rl_grad_norm", ())] == frames[-1]["grad_norm"]
    assert series[("rl_response_truncated_ratio", ())] == frames[-1]["completions/clipped_ratio"]
    assert_exported(series, frames, ours.framework)
    assert ours.framework in ("swift", "trl")
    assert config_series(series) == {"max_grad_norm": 0.7}
    handler.on_train_end(args, state, control)
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2).read()
