"""slime and Miles publish no package: their tracking modules are vendored verbatim under
tests/vendor/ at the pinned commits in tests/vendor/README.md (THUDM/slime 624b824a,
radixark/miles 31f1ca96) and imported for real here: slime's
slime.observability.logging_utils (init_tracking / log / finish_tracking) and Miles'
miles.utils.tracking_utils.tracking (BACKEND_REGISTRY, TrackingManager, log).

slime's argument parser (slime/utils/arguments.py) imports Megatron-LM and SGLang, which do
not install on CPU, so the args are a namespace with the attribute names that parser defines.
"""
from __future__ import annotations

import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest

from exporter.integrations import miles as rlx_miles
from exporter.integrations import slime as rlx_slime
from tests.integration.real_packages import config_series, need, scrape_url, vendored
from tests.unit.integrations._check import assert_exported
from tests.helpers import framework_keys
from tests.unit.integrations.test_slime_miles import drive

MILES_KEYS, SLIME_KEYS = framework_keys("miles"), framework_keys("slime")

pytestmark = pytest.mark.integration


def slime_args(**kw):
    # names from slime/utils/arguments.py (--num-steps-per-rollout, --clip-grad,
    # --rollout-max-response-len, --sglang-mem-fraction-static, ...)
    base = dict(use_wandb=False, use_tensorboard=False, num_steps_per_rollout=2, wandb_group="qwen3-4b-dapo",
                hf_checkpoint="/ckpt/Qwen3-4B/", advantage_estimator="grpo", clip_grad=1.0,
                rollout_max_response_len=8192, sglang_mem_fraction_static=0.7, rollout_batch_size=32,
                n_samples_per_prompt=8, global_batch_size=128)
    base.update(kw)
    return SimpleNamespace(**base)


@pytest.fixture(autouse=True)
def _reset_slime():
    rlx_slime.finish()
    yield
    rlx_slime.finish()


def test_slime_logging_utils_exports_on_the_training_step_axis(monkeypatch):
    need("wandb", "slime's logging_utils imports wandb at module level")
    monkeypatch.setenv("RL_EXPORTER_PORT", "0")
    with vendored("slime"):
        import slime.observability.logging_utils as lu
        assert rlx_slime.register(lu) is lu
        args = slime_args()
        lu.init_tracking(args, primary=True)
        ex = rlx_slime.tracker().exporter
        url = ex.url
        frames, _ = drive(lu.log, args, SLIME_KEYS)
        ex.flush()
        series = scrape_url(url)
        assert_exported(series, frames, "slime")
        assert series[("rl_training_step", ())] == 5.0  # 3 rollouts x 2 steps, last train/step 5
        assert config_series(series) == {"n_mini": 2.0, "max_grad_norm": 1.0, "max_response_length": 8192.0,
                                         "rollout_gpu_memory_fraction": 0.7}
        lu.finish_tracking(args)
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2).read()


def test_slime_n_mini_from_batch_sizes():
    args = slime_args(num_steps_per_rollout=None)
    assert rlx_slime.config_values(args)["n_mini"] == 2.0  # 32 x 8 / 128


def test_miles_tracking_registry_and_manager(monkeypatch):
    need("torch", "miles' tracking.py imports torch")
    monkeypatch.setenv("RL_EXPORTER_PORT", "0")
    with vendored("miles"):
        import miles.utils.tracking_utils.tracking as tracking
        regs = rlx_miles.register()
        assert tracking.BACKEND_REGISTRY in regs
        assert tracking.BACKEND_REGISTRY["rl_exporter"] == (rlx_miles.RLExporterMilesBackend, "use_rl_exporter")
        args = slime_args(use_rl_exporter=True)
        tracking.init_tracking(args, primary=True)
        tracking.define_step_key_metric_group("rollout", "rollout/step")  # Miles calls this on every backend
        ours = [b for b in tracking._manager._backends if isinstance(b, rlx_miles.RLExporterMilesBackend)]
        assert len(ours) == 1
        ex = ours[0].tracker.exporter
        url = ex.url
        frames, _ = drive(tracking.log, args, MILES_KEYS)
        ex.flush()
        series = scrape_url(url)
        assert_exported(series, frames, "miles")
        assert [dict(l) for n, l in series if n == "rl_run_info"][0]["framework"] == "miles"
        assert config_series(series)["n_mini"] == 2.0
        tracking.finish_tracking()
        assert ex._closed
