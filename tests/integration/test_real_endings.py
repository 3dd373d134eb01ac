"""The end-of-training lines of the released packages, printed by the packages themselves and
read back by serve (exporter/logs/ending.py): a transformers Trainer on CPU (its train()
summary, `Total optimization steps`, trainer_state.json; and a run whose callback raises), and
AReaL's own StatsLogger (`Train step N/M done.`, `Training completes!`). Each runs in a child
process whose console output goes to a file, as a trainer's log does.

Run: python -m pytest -q tests/integration/test_real_endings.py   (about 30 s; skips without
the packages)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from exporter.logs.ending import trainer_state
from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec
from tests.integration.real_packages import need

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HF_TRAIN = textwrap.dedent("""
    import os, sys
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments
    out, mode = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2,
                                         num_key_value_heads=2, max_position_embeddings=32))
    data = [{"input_ids": torch.randint(0, 32, (8,)), "labels": torch.randint(0, 32, (8,))}
            for _ in range(8)]

    class Boom(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if mode == "raise" and state.global_step == 2:
                raise RuntimeError("reward server went away at step 2")

    args = TrainingArguments(output_dir=out, max_steps=3, per_device_train_batch_size=2,
                             logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                             log_level="info", disable_tqdm=False)
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[Boom()])
    trainer.train()
    trainer.save_state()
""")

AREAL_RUN = textwrap.dedent("""
    import sys
    from areal.api import cli_args, io_struct
    from areal.utils import stats_logger
    from tests.integration.test_real_areal import YAML
    root, steps = sys.argv[1], int(sys.argv[2])
    path = root + "/grpo.yaml"
    open(path, "w").write(YAML.format(root=root))
    cfg, _ = cli_args.load_expr_config(["--config", path], cli_args.GRPOConfig)
    sl = stats_logger.StatsLogger(cfg, io_struct.FinetuneSpec(total_train_epochs=1,
                                                              dataset_size=32, train_batch_size=8))
    for step in range(steps):
        sl.commit(0, step, step, {"ppo_actor/update/actor_loss/avg": 0.1 * step})
    sl.close()
""")


def run_to_log(code: str, log, *argv) -> subprocess.CompletedProcess:
    with open(log, "w") as fh:
        return subprocess.run([sys.executable, "-c", code, *map(str, argv)], cwd=ROOT,
                              stdout=fh, stderr=subprocess.STDOUT, timeout=300,
                              env=dict(os.environ, PYTHONPATH=ROOT))


def serve(log, fmt="auto"):
    sc = Sidecar([SourceSpec(f"{fmt}:{log}", "r")], run="r", port=None, gpu=False)
    sc.run_until_idle()
    [served] = sc.runs.values()
    served.flush()
    return sc, served


def test_transformers_trainer_end_and_crash(tmp_path):
    need("transformers")
    need("torch")
    log = tmp_path / "train.log"
    r = run_to_log(HF_TRAIN, log, tmp_path / "out", "finish")
    assert r.returncode == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "'train_runtime': " in text and "Total optimization steps = 3" in text
    sc, served = serve(log)
    try:
        assert served.lifecycle.state == "finished"
        assert served.store.get("rl_config_value", {"parameter": "total_training_steps"}) == 3
    finally:
        sc.close()
    got, total = trainer_state(json.loads((tmp_path / "out" / "trainer_state.json").read_text()))
    assert got.state == "finished" and total == 3

    crashed = tmp_path / "crash.log"
    r = run_to_log(HF_TRAIN, crashed, tmp_path / "out2", "raise")
    assert r.returncode == 1
    sc, served = serve(crashed)
    try:
        snap = served.lifecycle.snapshot()
        assert snap["state"] == "crashed" and snap["crash"] == {
            "exception": "RuntimeError", "message": "reward server went away at step 2"}
    finally:
        sc.close()


def test_areal_stats_logger_end(tmp_path):
    need("areal.utils.stats_logger")
    log = tmp_path / "areal.log"
    r = run_to_log(AREAL_RUN, log, tmp_path, 4)  # 32 samples / 8 per batch: 4 steps
    assert r.returncode == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "Train step 4/4 done." in text and "Training completes! Total time elapsed" in text
    sc, served = serve(log)
    try:
        assert served.lifecycle.state == "finished"
        assert served.store.get("rl_config_value", {"parameter": "total_training_steps"}) == 4
    finally:
        sc.close()
    short = tmp_path / "short"
    short.mkdir()
    log = short / "areal.log"
    assert run_to_log(AREAL_RUN, log, short, 2).returncode == 0  # closed after 2 of 4 steps
    sc, served = serve(log)
    try:
        assert served.lifecycle.state != "finished"  # `Training completes!` short of the total
    finally:
        sc.close()
