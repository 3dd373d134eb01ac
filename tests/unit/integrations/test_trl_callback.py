"""RLExporterCallback's behaviour without transformers: the event methods, called the way
transformers' CallbackHandler calls them (args, state, control, **kwargs)."""
from __future__ import annotations

from types import SimpleNamespace

from exporter.hook import Exporter
from exporter.integrations import trl as rlx_trl
from exporter.testing import scrape


def state(step, main=True):
    return SimpleNamespace(global_step=step, is_world_process_zero=main)


class GRPOConfig:  # name-only stand-in: algorithm_of() reads the config class's name
    run_name = None
    output_dir = "/out/grpo-run-7"
    process_index = 0



def test_algorithm_from_config_class():
    assert rlx_trl.algorithm_of(GRPOConfig()) == "grpo"
    assert rlx_trl.algorithm_of(object()) is None


def test_main_process_exports_with_global_step_and_closes_its_exporter():
    cb = rlx_trl._CallbackImpl(port=None)
    args = GRPOConfig()
    cb.on_train_begin(args, state(0), None)
    ex = cb.exporter
    assert ex.run == "grpo-run-7"
    cb.on_step_end(args, state(1), None)
    cb.on_log(args, state(1), None, logs={"loss": 0.5, "reward": 0.25, "completions/mean_length": 12.0})
    cb.on_step_end(args, state(2), None)           # logging_steps=2: no log this step
    series = scrape(ex)
    assert series[("rl_training_step", ())] == 2.0
    info = [k for k in series if k[0] == "rl_run_info"][0][1]
    assert ("algorithm", "grpo") in info and ("framework", "trl") in info
    cb.on_train_end(args, state(2), None)
    assert cb.exporter is None and ex._closed


def test_other_ranks_do_not_export_unless_asked():
    cb = rlx_trl._CallbackImpl(port=None)
    cb.on_train_begin(GRPOConfig(), state(0, main=False), None)
    cb.on_log(GRPOConfig(), state(1, main=False), None, logs={"loss": 1.0})
    assert cb.exporter is None
    cb2 = rlx_trl._CallbackImpl(port=None, all_processes=True)
    cb2.on_train_begin(GRPOConfig(), state(0, main=False), None)
    assert cb2.exporter is not None
    cb2.on_train_end(GRPOConfig(), state(0, main=False), None)


def test_callers_exporter_is_flushed_not_closed():
    ex = Exporter(run="mine", framework="trl", serve=False)
    cb = rlx_trl._CallbackImpl(exporter=ex)
    cb.on_log(GRPOConfig(), state(3), None, logs={"loss": 0.1, "not_a_metric": [1, 2]})
    cb.on_train_end(GRPOConfig(), state(3), None)
    assert not ex._closed and cb.exporter is ex
    assert scrape(ex)[("rl_training_step", ())] == 3.0
    ex.close()
