"""slime: facts beyond the shared conformance (test_conformance.py, data/slime.json): only
train/step is the training step, the console dict resolves, unknown train/ keys fall back."""
import ast

from tests.helpers import res

from .catalog_asserts import frame_lands

FW = "slime"


def test_only_train_step_is_the_training_step():
    assert res("train/step", FW).step and res("train/step", FW).metric.name == "rl_training_step"
    for key in ("rollout/step", "eval/step"):
        r = res(key, FW)
        assert not r.step and r.metric.name != "rl_training_step"


CONSOLE = ("[2026-08-21 17:14:19] model.py:918 - step 7: {'train/loss': -0.0031, 'train/pg_loss': "
           "-0.0031, 'train/entropy_loss': 0.41, 'train/pg_clipfrac': 0.0012, 'train/ppo_kl': 1.3e-05, "
           "'train/grad_norm': 0.27, 'train/lr-pg_0': 1e-06, 'train/global_batch_size': 256, "
           "'train/step': 7}")


def parse_console(line):
    return ast.literal_eval(line.split(": ", 1)[1])


def test_console_frame_resolves_with_zero_fallbacks():
    frame = parse_console(CONSOLE)
    assert frame["train/step"] == 7
    frame_lands(frame, FW)
    assert res("train/lr-pg_0", FW).metric.name == "rl_next_learning_rate"


def test_unprefixed_unknown_keys_fall_back_rather_than_hide():
    """train/ and rollout/ are shared with posttrain/AReaL: no catch-all there, so a new key shows
    up as rl_unmapped_value instead of being swallowed (also under framework="auto")."""
    for key in ("train/brand_new_term", "rollout/brand_new_field"):
        assert res(key, FW).fallback
