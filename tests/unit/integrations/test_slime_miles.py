"""slime and Miles: adapters driven exactly as their tracking code drives its backends.

slime (THUDM/slime 624b824a898a, 2026-08-21; imported for real from tests/vendor in tests/integration/test_real_slime_miles.py): module functions init_tracking(args, primary=True),
log(args, metrics, step_key) -> `wandb.log(metrics)` and TensorBoard
`log(data=metrics minus step_key, step=metrics[step_key])`, finish_tracking(args). The train
loop logs `train/*` with train/step = rollout_id * steps_per_rollout + step_id, the rollout side
logs `rollout/*` / `perf/*` with rollout/step = rollout_id, evaluation `eval/*` with eval/step.

Miles (radixark/miles 31f1ca961a94, 2026-08-21): BACKEND_REGISTRY {name: (cls, flag)}; TrackingManager.init()
instantiates each backend whose flag is set and calls backend.init(args, primary=...);
tracking.log(args, metrics, step_key) -> manager.log(metrics, step=metrics.get(step_key),
step_key=step_key) -> backend.log(metrics, step=step, step_key=step_key); finish() at the end.
"""
from __future__ import annotations

import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from exporter.integrations import miles as rlx_miles
from exporter.integrations import slime as rlx_slime
from exporter.testing import scrape

from ._check import assert_exported, numeric_frame
from tests.helpers import framework_keys

MILES_KEYS, SLIME_KEYS = framework_keys("miles"), framework_keys("slime")

STEP_KEYS = ("train/step", "rollout/step", "eval/step")


def split_keys(keys):
    train = [k for k in keys if k.startswith("train/") and k not in STEP_KEYS]
    evals = [k for k in keys if k.startswith("eval/") and k not in STEP_KEYS]
    rollout = [k for k in keys if k not in train and k not in evals and k not in STEP_KEYS]
    return train, rollout, evals


def drive(log, args, keys, rollouts=3, spr=2, eval_every=2):
    """slime/Miles' call order: per rollout, rollout+perf stats, then spr train steps, then eval."""
    train, rollout, evals = split_keys(keys)
    sent, steps = [], []
    for r in range(rollouts):
        f = numeric_frame(rollout, r, seed=10.0)
        f["rollout/step"] = r
        log(args, f, "rollout/step")
        sent.append(f)
        steps.append(r * spr)
        for step_id in range(spr):
            t = numeric_frame(train, r * spr + step_id)
            t["train/step"] = r * spr + step_id
            log(args, t, "train/step")
            sent.append(t)
            steps.append(r * spr + step_id)
        if r % eval_every == 0:
            e = numeric_frame(evals, r, seed=50.0)
            e["eval/step"] = r
            log(args, e, "eval/step")
            sent.append(e)
            steps.append(r * spr + spr - 1)  # after training on rollout r: the axis does not go back
    return [{k: v for k, v in f.items() if k not in STEP_KEYS} for f in sent], steps


def make_slime_module():
    m = types.ModuleType("slime.utils.logging_utils")
    m.calls = []

    def init_tracking(args, primary: bool = True, **kwargs):
        m.calls.append(("init", primary))

    def log(args, metrics, step_key: str):
        if args.use_wandb:
            m.calls.append(("wandb", dict(metrics)))
        if args.use_tensorboard:
            m.calls.append(("tb", {k: v for k, v in metrics.items() if k != step_key}, metrics[step_key]))

    def finish_tracking(args):
        m.calls.append(("finish",))

    m.init_tracking, m.log, m.finish_tracking = init_tracking, log, finish_tracking
    return m


@pytest.fixture(autouse=True)
def _reset_slime():
    rlx_slime.finish()
    yield
    rlx_slime.finish()


def slime_args(**kw):
    return SimpleNamespace(use_wandb=False, use_tensorboard=True, num_steps_per_rollout=2,
                           wandb_group="qwen3-4b-dapo", hf_checkpoint="/ckpt/Qwen3-4B",
                           advantage_estimator="grpo", **kw)


def test_slime_register_exports_with_training_step_axis():
    m = make_slime_module()
    assert rlx_slime.register(m, port=0) is m
    assert rlx_slime.register(m) is m  # idempotent
    args = slime_args()
    m.init_tracking(args, primary=True)
    t = rlx_slime.tracker()
    assert t is not None and t.exporter.run == "qwen3-4b-dapo"
    seen = []
    orig = t.exporter.log
    t.exporter.log = lambda frame, step=None: (seen.append(step), orig(frame, step))
    frames, steps = drive(m.log, args, SLIME_KEYS)
    assert seen == [float(s) for s in steps]           # one training-step axis, monotone
    assert seen == sorted(seen)
    series = scrape(t.exporter)
    assert_exported(series, frames, "slime")
    assert series[("rl_training_step", ())] == 5.0     # last train/step of rollout 2
    assert not any(n == "rl_unmapped_value" and dict(lbl).get("key") in STEP_KEYS for n, lbl in series)
    # slime's own backends still got every call
    assert sum(1 for c in m.calls if c[0] == "tb") == len(frames)
    m.finish_tracking(args)
    assert t.exporter._closed and m.calls[-1] == ("finish",)
    assert rlx_slime.tracker() is None  # forgotten: a second run in this process gets its own
    m.init_tracking(args, primary=True)
    t2 = rlx_slime.tracker()
    assert t2 is not None and t2 is not t and not t2.exporter._closed


def test_slime_secondary_process_port_offset(monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("RL_EXPORTER_PORT", "0")
    t = rlx_slime.SlimeTracker(slime_args(), primary=False)
    try:
        assert t.exporter.url is not None  # port 0 stays "any free port"
    finally:
        t.finish()
    monkeypatch.setenv("RL_EXPORTER_PORT", "none")
    t = rlx_slime.SlimeTracker(slime_args(), primary=False)
    assert t.exporter.url is None
    t.finish()


def test_step_axis_without_steps_per_rollout():
    ax = rlx_slime.StepAxis(None)
    assert ax.step("rollout/step", 4) == 4.0 and ax.step("train/step", 4) == 4.0
    assert ax.step("rollout/step", None) == 4.0  # no step: stay where we are


# ---------------------------------------------------------------- Miles

class TrackingManager:
    def __init__(self, registry):
        self.registry = registry
        self._backends = []

    def init(self, args, *, primary=True, **kwargs):
        for name, (cls, flag) in self.registry.items():
            if getattr(args, flag, False):
                backend = cls()
                backend.init(args, primary=primary, **kwargs)
                self._backends.append(backend)

    def log(self, metrics, step=None, step_key=None):
        for b in self._backends:
            b.log(metrics, step=step, step_key=step_key)

    def finish(self):
        for b in self._backends:
            b.finish()
        self._backends.clear()


class RecordingBackend:
    logged = []

    def init(self, args, *, primary=True, **kwargs):
        pass

    def log(self, metrics, step=None, **kwargs):
        RecordingBackend.logged.append((step, dict(metrics)))

    def finish(self):
        pass


def test_miles_backend_through_tracking_manager(monkeypatch):
    monkeypatch.setenv("RL_EXPORTER_PORT", "0")
    registry = {"wandb": (RecordingBackend, "use_wandb")}
    assert rlx_miles.register(registry) == [registry]
    rlx_miles.register(registry)
    assert registry["rl_exporter"] == (rlx_miles.RLExporterMilesBackend, "use_rl_exporter")
    manager = TrackingManager(registry)
    args = slime_args(use_rl_exporter=True)
    args.use_wandb = True
    manager.init(args, primary=True)

    def log(args, metrics, step_key):  # miles.utils.tracking_utils.tracking.log
        manager.log(metrics, step=metrics.get(step_key), step_key=step_key)

    ours = [b for b in manager._backends if isinstance(b, rlx_miles.RLExporterMilesBackend)][0]
    ex = ours.tracker.exporter
    assert ex.framework == "miles"
    frames, steps = drive(log, args, MILES_KEYS)
    series = scrape(ex)
    assert_exported(series, frames, "miles")
    assert series[("rl_training_step", ())] == 5.0
    manager.finish()
    assert ex._closed


def test_miles_backend_flag_off_means_no_exporter():
    registry = {}
    rlx_miles.register(registry)
    manager = TrackingManager(registry)
    manager.init(slime_args(), primary=True)  # no use_rl_exporter attribute
    assert manager._backends == []


def test_prometheus_name_matches_miles_sanitising():
    assert rlx_miles.prometheus_name("train/pg_loss") == "miles_metric_train_pg_loss"
    assert rlx_miles.prometheus_name("train/critic-value_loss") == "miles_metric_train_critic_value_loss"
    assert rlx_miles.prometheus_name("passrate/pass@1") == "miles_metric_passrate_pass_at_1"


def test_migration_table_in_docs_is_current():
    doc = Path(__file__).resolve().parents[3] / "docs" / "integrations.md"
    text = doc.read_text(encoding="utf-8")
    assert rlx_miles.render_docs(text) == text, \
        "docs/integrations.md Miles table is stale: python3 -m exporter.integrations.miles --update-docs docs/integrations.md"
    for key in rlx_miles.MILES_KEYS:
        assert f"`{rlx_miles.prometheus_name(key)}`" in text


@pytest.mark.parametrize("coef,observe,kept", [(0.0, False, False), (0.0, True, True),
                                               (0.001, False, True), (None, False, True),
                                               (0.0, "absent", True)])
def test_miles_entropy_placeholder_is_dropped_only_when_not_computed(monkeypatch, coef, observe, kept):
    # Miles logs train/entropy_loss = new_zeros(()) unless --entropy-coef != 0 or
    # --observe-training-entropy (loss_hub/losses.py:113,303-308): a 0 that is no entropy. A
    # release without the flag computes it always (tests/data/real/miles: 0.29 at coef 0.00)
    monkeypatch.setenv("RL_EXPORTER_PORT", "0")
    kw = {} if observe == "absent" else {"observe_training_entropy": observe}
    if coef is not None:
        kw["entropy_coef"] = coef
    backend = rlx_miles.RLExporterMilesBackend()
    backend.init(slime_args(**kw), primary=True)
    backend.log({"train/entropy_loss": 0.0 if not kept else 0.41, "train/pg_loss": -0.003,
                 "train/step": 3}, step=3, step_key="train/step")
    ex = backend.tracker.exporter
    ex.flush()
    series = scrape(ex)
    assert series[("rl_policy_loss", ())] == -0.003
    assert (("rl_entropy", (("phase", "update"),)) in series) is kept
    backend.finish()


def test_slime_entropy_loss_is_always_the_entropy(monkeypatch):
    # slime computes it whatever the coefficient (slime loss.py:976 with_entropy=True)
    assert rlx_slime.placeholder_keys(slime_args(entropy_coef=0.0), "slime") == frozenset()
