"""The lifecycle and settings plumbing every adapter shares (exporter/integrations/_common.py)."""
from __future__ import annotations

import logging

import pytest

from exporter.integrations import _common
from exporter.integrations._common import ExporterOwner, exporter_kwargs, make_exporter, set_config
from exporter.testing import scrape


def test_port_none_means_no_server(monkeypatch):
    monkeypatch.delenv("RL_EXPORTER_PORT", raising=False)
    assert exporter_kwargs({"port": None}) == {"port": None}
    assert exporter_kwargs({"run": None}) == {}  # other Nones mean "not given"
    ex = make_exporter("trl", port=None)
    try:
        assert ex.url is None and ex.endpoint is None
    finally:
        ex.close()


def test_env_port_none_and_bad_port(monkeypatch, caplog):
    monkeypatch.setenv("RL_EXPORTER_PORT", "none")
    assert exporter_kwargs() == {"port": None}
    monkeypatch.setenv("RL_EXPORTER_PORT", "nine")
    with caplog.at_level(logging.ERROR, "rl_exporter"):
        assert "port" not in exporter_kwargs()
    assert "not a port number" in caplog.text


def test_misconfigured_otlp_never_raises(monkeypatch, caplog):
    from exporter import hook
    real = hook.Exporter

    def exporter(**kw):  # an OTLP setup that raises, whatever the SDK version does with it
        if kw.get("otlp_endpoint"):
            raise ValueError("bad endpoint")
        return real(**kw)

    monkeypatch.setattr(hook, "Exporter", exporter)
    with caplog.at_level(logging.ERROR, "rl_exporter"):
        ex = make_exporter("verl", port=None, otlp_endpoint="::not a url::")
    try:
        assert isinstance(ex, real)
    finally:
        ex.close()
    assert "exporting without OTLP" in caplog.text


def test_model_basename_and_number():
    assert _common.model_basename("/ckpt/Qwen2.5-7B/") == "Qwen2.5-7B"
    assert _common.model_basename("Qwen/Qwen3-4B") == "Qwen3-4B"
    assert _common.model_basename(None) is None and _common.model_basename("") is None
    assert _common.number("0.5") is None and _common.number(True) is None
    assert _common.number(float("nan")) is None and _common.number(3) == 3.0


def test_env_rank(monkeypatch):
    for v in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(v, raising=False)
    assert _common.env_rank() is None
    monkeypatch.setenv("SLURM_PROCID", "3")
    assert _common.env_rank() == 3


def test_set_config_skips_unknowns():
    ex = make_exporter("trl", port=None)
    try:
        done = set_config(ex, {"n_mini": 4, "max_grad_norm": None, "max_response_length": "auto"})
        assert done == {"n_mini": 4.0}
        series = scrape(ex)
        assert series[("rl_config_value", (("parameter", "n_mini"),))] == 4.0
        assert not any(dict(l).get("parameter") == "max_response_length" for n, l in series)
    finally:
        ex.close()
    assert set_config(None, {"n_mini": 1}) == {}


class Adapter(ExporterOwner):
    framework = "openrlhf"


def test_owner_closes_only_what_it_made_and_never_raises(caplog):
    a = Adapter()
    a._start({"n_mini": 2}, port=None)
    ex = a.exporter
    a._log({"policy_loss": 0.5}, 1)
    a.close()
    a.close()  # idempotent
    assert ex._closed and a._closed
    a._log({"policy_loss": 0.7}, 2)  # after close: dropped, no exception

    theirs = make_exporter("openrlhf", port=None)
    try:
        b = Adapter(theirs)
        b._log({"policy_loss": 0.25}, 1)
        b.close()
        assert not theirs._closed  # the caller's exporter stays open
        assert scrape(theirs)[("rl_policy_loss", ())] == 0.25
    finally:
        theirs.close()

    class Broken:
        def log(self, *a, **k):
            raise RuntimeError("boom")

    c = Adapter(Broken())
    with caplog.at_level(logging.ERROR, "rl_exporter"):
        c._log({"x": 1}, 1)
    assert "log failed" in caplog.text


def test_start_failure_is_logged_not_raised(monkeypatch, caplog):
    def boom(*a, **k):
        raise OSError("no")
    monkeypatch.setattr(_common, "make_exporter", boom)
    a = Adapter()
    with caplog.at_level(logging.ERROR, "rl_exporter"):
        assert a._start(port=None) is None
    assert "exporter not started" in caplog.text


def test_trl_config_values_from_real_grpo_config():
    trl = pytest.importorskip("trl")
    from exporter.integrations.trl import config_values
    args = trl.GRPOConfig(output_dir="/tmp/rlx-grpo", use_cpu=True, report_to="none", num_iterations=2,
                          gradient_accumulation_steps=2, steps_per_generation=4, max_grad_norm=0.3,
                          max_completion_length=256, per_device_train_batch_size=8, num_generations=8)
    # beta defaults to 0 at 1.16 (grpo_config.py:681): no KL term; generation on the trained model
    assert config_values(args) == {"n_mini": 4.0, "max_grad_norm": 0.3, "max_response_length": 256.0,
                                   "pi_old_from_rollout": 0.0, "kl_loss_coef": 0.0,
                                   "kl_reward_coef": 0.0, "async_training": 0.0, "colocated": 1.0}
    args.use_vllm = True
    args.vllm_gpu_memory_utilization = 0.45
    assert config_values(args)["rollout_gpu_memory_fraction"] == 0.45
    args.vllm_mode, args.beta = "server", 0.04
    got = config_values(args)
    assert got["colocated"] == 0.0 and got["kl_loss_coef"] == 0.04
    # ms-swift's rloo/reinforce++ put the KL into the reward (kl_in_reward) and may generate
    # one step ahead (async_generate)
    args.kl_in_reward, args.async_generate = True, True
    got = config_values(args)
    assert (got["kl_loss_coef"], got["kl_reward_coef"], got["async_training"]) == (0.0, 0.04, 1.0)
    dpo = trl.DPOConfig(output_dir="/tmp/rlx-dpo", use_cpu=True, report_to="none")
    assert "pi_old_from_rollout" not in config_values(dpo)  # offline: no rollouts
    on_policy = trl.GRPOConfig(output_dir="/tmp/rlx-grpo", use_cpu=True, report_to="none")
    assert config_values(on_policy)["n_mini"] == 1.0


def test_total_training_steps_is_captured_where_the_config_has_it():
    # RLRunStalled does not page on a run whose last step reached it (a finished run)
    from types import SimpleNamespace
    from exporter.integrations import trl, verl
    cfg = {"trainer": {"total_training_steps": 500}, "data": {"train_batch_size": 64},
           "actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 16}}}
    assert verl.config_values(cfg)["total_training_steps"] == 500.0
    assert "total_training_steps" not in verl.config_values({"trainer": {"total_training_steps": None}})
    args = SimpleNamespace(max_steps=-1, max_grad_norm=1.0)
    assert "total_training_steps" not in trl.config_values(args)          # epoch-based, not started
    assert trl.config_values(args, SimpleNamespace(max_steps=1200))["total_training_steps"] == 1200.0
    assert trl.config_values(SimpleNamespace(max_steps=300))["total_training_steps"] == 300.0


def test_register_once_patches_once_per_class_and_never_raises(monkeypatch, caplog):
    patched = []

    class Base:
        pass

    class Sub(Base):
        pass
    patch = patched.append
    assert _common.register_once("x", Base, None, patch, what="x") is Base
    assert _common.register_once("x", Base, None, patch, what="x") is Base  # marked: once
    assert _common.register_once("x", Sub, None, patch, what="x") is Sub   # its own mark
    assert patched == [Base, Sub]

    def missing():
        import no_such_framework  # noqa: F401
    with caplog.at_level(logging.ERROR, "rl_exporter"):
        assert _common.register_once("x", None, missing, patch, what="x's tracking") is None
    assert "x's tracking is not importable here" in caplog.text and "nothing registered" in caplog.text
    registry = {}
    for _ in range(2):  # idempotent itself: no mark on a dict
        assert _common.register_once("x", registry, None, lambda m: m.setdefault("k", 1),
                                     what="x", mark=False) is registry
    assert registry == {"k": 1}
    monkeypatch.setenv("RL_EXPORTER_DISABLE", "1")
    assert _common.register_once("x", None, missing, patch, what="x") is None
    assert patched == [Base, Sub]


def test_one_list_of_settings_for_the_integrations_and_the_sidecar():
    # a setting has one name whether the hook or the sidecar's config reader exports it
    from exporter.catalog.config_echo import SETTINGS
    assert set(_common.CONFIG_PARAMETERS) == set(SETTINGS)


def test_flags_and_switched_coefficients():
    assert [_common.flag(v) for v in (True, False, "True", "false", 1, 0, None, "auto")] == \
        [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, None, None]
    assert _common.coef_if(False, 0.1) == 0.0 and _common.coef_if(True, 0.1) == 0.1
    assert _common.coef_if(None, 0.1) is None


def test_the_settings_reach_the_spool_and_a_post_mortem_of_it(tmp_path):
    """An integration's settings (read from the trainer's config, never logged as keys) are
    in its spool, so doctor's replay of the spool has the rl_config_value series the live
    rules read (n_mini gates the on-policy clip rule, max_grad_norm the clip rules)."""
    from exporter.logs.read import Reader
    from exporter.postmortem.replay import Replay
    path = tmp_path / "run.jsonl"
    ex = make_exporter("trl", port=None, spool=str(path))
    try:
        assert set_config(ex, {"n_mini": 8, "max_grad_norm": 1.0}) == {"n_mini": 8.0, "max_grad_norm": 1.0}
        for step in (1, 2, 3):
            ex.log({"loss": 0.5, "grad_norm": 0.3}, step=step)
    finally:
        ex.close()
    replay = Replay("r", "trl")
    reader = Reader("spool", where=False)
    for line in path.read_text().splitlines():
        for r in reader.feed(line):
            replay.apply(r.frame.data, r.frame.step, 1.0)
    lines = replay.render()
    assert 'rl_config_value{parameter="n_mini",run="r"} 8.0' in lines, lines
    assert 'rl_config_value{parameter="max_grad_norm",run="r"} 1.0' in lines
    assert not [x for x in lines if "rl_unmapped_value" in x]
