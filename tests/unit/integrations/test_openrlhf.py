"""OpenRLHF 0.11: RLExporterLogger driven exactly as OpenRLHF's trainers drive their loggers.

`Trainer` reproduces the logger plumbing of openrlhf/trainer/ppo_trainer.py (OpenRLHF/OpenRLHF 3c3be6234e0c, 0.11.0; the released 0.11.2 path runs for real in tests/integration/test_real_openrlhf.py):
`self.wandb_logger = WandbLogger(args) if args.logger.wandb.key else None`,
`self.tensorboard_logger = TensorboardLogger(args) if args.logger.tensorboard_dir else None`,
save_logs_and_checkpoints() -> `log_train(global_step, logs_dict)` on each set logger every
`args.logger.logging_steps`; evaluation -> `log_eval(global_step, eval_logs)`; end -> `close()`.
The status dict carries OpenRLHF's real keys (plus `generated_samples`, a [text, reward] pair
that OpenRLHF's loggers drop or turn into a table).
"""
from __future__ import annotations

from types import SimpleNamespace

from exporter.integrations.openrlhf import RLExporterLogger, TeeLogger, attach
from exporter.testing import scrape

from ._check import assert_exported, numeric_frame
from tests.helpers import framework_keys

OPENRLHF_KEYS = framework_keys("openrlhf")

TRAIN_KEYS = [k for k in OPENRLHF_KEYS if not k.startswith(("eval_", "eval/", "train/"))]
EVAL_KEYS = [k for k in OPENRLHF_KEYS if k.startswith("eval_")]


class RecordingTensorboardLogger:  # stands in for openrlhf TensorboardLogger (records add_scalar calls)
    def __init__(self, args):
        self.scalars, self.closed = [], False

    def log_train(self, global_step, logs_dict):
        for k, v in logs_dict.items():
            if k != "generated_samples" and v is not None:
                self.scalars.append((f"train/{k}", v, global_step))

    def log_eval(self, global_step, logs_dict):
        for k, v in logs_dict.items():
            self.scalars.append((f"eval/{k}", v, global_step))

    def close(self):
        self.closed = True


def make_args(tb_dir=None, logging_steps=1):
    return SimpleNamespace(logger=SimpleNamespace(logging_steps=logging_steps, tensorboard_dir=tb_dir,
                                                  wandb=SimpleNamespace(key=None, run_name="ppo-llama-a")),
                           algo=SimpleNamespace(advantage=SimpleNamespace(estimator="group_norm")),
                           actor=SimpleNamespace(model_name_or_path="/ckpt/Llama-3-8B"))


class Trainer:
    def __init__(self, args):
        self.args = args
        self.wandb_logger = None
        self.tensorboard_logger = RecordingTensorboardLogger(args) if args.logger.tensorboard_dir else None

    def save_logs_and_checkpoints(self, global_step, logs_dict=None, client_states=None):
        logs_dict = logs_dict or {}
        if global_step % self.args.logger.logging_steps == 0:
            if self.wandb_logger:
                self.wandb_logger.log_train(global_step, logs_dict)
            if self.tensorboard_logger:
                self.tensorboard_logger.log_train(global_step, logs_dict)

    def evaluate(self, global_step, logs):
        if self.wandb_logger:
            self.wandb_logger.log_eval(global_step, logs)
        if self.tensorboard_logger:
            self.tensorboard_logger.log_eval(global_step, logs)

    def fit(self, steps, eval_every=2):
        sent = []
        for global_step in range(1, steps + 1):
            status = numeric_frame(TRAIN_KEYS, global_step)
            status["generated_samples"] = ["the answer is 4", 1.0]
            status["vllm_kl"] = None  # absent this step
            self.save_logs_and_checkpoints(global_step, status, {"consumed_samples": global_step * 64})
            sent.append(status)
            if global_step % eval_every == 0:
                ev = numeric_frame(EVAL_KEYS, global_step, seed=100.0)
                self.evaluate(global_step, ev)
                sent.append(ev)
        return sent

    def close(self):
        if self.wandb_logger:
            self.wandb_logger.close()
        if self.tensorboard_logger:
            self.tensorboard_logger.close()


def test_attach_tees_existing_tensorboard_logger():
    trainer = Trainer(make_args(tb_dir="/tmp/tb"))
    theirs = trainer.tensorboard_logger
    ours = attach(trainer, port=None)
    assert isinstance(trainer.tensorboard_logger, TeeLogger)
    sent = trainer.fit(steps=4)
    series = scrape(ours.exporter)
    assert_exported(series, [{k: v for k, v in f.items() if k != "generated_samples"} for f in sent],
                     "openrlhf")
    assert series[("rl_training_step", ())] == 4.0
    assert not any(k[0] == "rl_unmapped_value" and ("key", "generated_samples") in k[1] for k in series)
    assert series[("rl_exporter_values_rejected_total", (("reason", "type"),))] == 0
    info = [k for k in series if k[0] == "rl_run_info"][0][1]
    assert ("algorithm", "group_norm") in info and ("model", "Llama-3-8B") in info
    assert ours.exporter.run == "ppo-llama-a"
    # their logger got every call too
    assert ("train/policy_loss", sent[0]["policy_loss"], 1) in theirs.scalars
    assert any(s[0].startswith("eval/") for s in theirs.scalars)
    trainer.close()
    assert theirs.closed and ours.exporter._closed


def test_attach_into_empty_slot_and_logging_steps():
    trainer = Trainer(make_args(tb_dir=None, logging_steps=2))
    ours = attach(trainer, port=None)
    assert trainer.tensorboard_logger is ours
    trainer.fit(steps=3, eval_every=10)
    series = scrape(ours.exporter)
    assert series[("rl_training_step", ())] == 2.0  # steps 1 and 3 were not logging steps
    trainer.close()
    trainer.close()  # idempotent


def test_log_eval_prefixes_bare_keys():
    lg = RLExporterLogger(make_args(), port=None)
    lg.log_eval(5, {"acc_mean": 0.7, "eval_loss": 0.3})
    series = scrape(lg.exporter)
    lg.close()
    keys = {dict(lbl).get("key") for (n, lbl) in series if n == "rl_unmapped_value"}
    # either mapped (split="eval") or, while unmapped, visible under its eval_ name
    assert "acc_mean" not in keys
