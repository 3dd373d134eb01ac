"""A real TRL run with RLExporterCallback: GRPOTrainer and DPOTrainer on CPU, tiny random model.

No hub access: the tokenizer is built here with `tokenizers`, the model is a 2-layer Llama
initialised from a config and saved to a temp dir (TRL loads the policy and the reference model
from that path). The exporter serves on a free loopback port; the test scrapes that HTTP
endpoint (from a probe callback that runs just before ours at on_train_end, while /metrics is
still up) and checks every key TRL logged against trainer.state.log_history.

Run: python3 -m pytest -q tests/integration/test_trl_real.py   (about 15-25 s; skips without trl)
"""
from __future__ import annotations

import math
import os
import urllib.error
import urllib.request

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

trl = pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")


from exporter.catalog import CATALOG  # noqa: E402
from exporter.integrations.trl import RLExporterCallback  # noqa: E402
from tests.helpers import scrape_text, series  # noqa: E402

pytestmark = pytest.mark.integration

WORDS = "the a good bad cat dog runs sits on mat is very not yes no and or it this that".split()

# Keys whose canonical series are certain (named in the catalog's help texts and the issue).
EXPECT_CANONICAL = {
    "loss": "rl_loss",
    "grad_norm": "rl_grad_norm",
    "learning_rate": "rl_learning_rate",
    "reward": "rl_reward",
    "entropy": "rl_entropy",
    "completions/mean_length": "rl_response_length_tokens",
    "num_tokens": "rl_tokens_total",
    "rewards/margins": "rl_preference_reward_margin",
    "rewards/accuracies": "rl_preference_accuracy_ratio",
}


def _without_run(series: dict, run: str) -> dict:
    out = {}
    for (name, labels), v in series.items():
        d = dict(labels)
        if "run" in d:
            assert d.pop("run") == run, (name, labels)
        out[(name, tuple(sorted(d.items())))] = v
    return out


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<pad>", "<eos>", "<bos>", "<unk>"]
    vocab = {w: i for i, w in enumerate(special + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                     bos_token="<bos>", unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    d = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(cfg).save_pretrained(d)
    hf_tok.save_pretrained(d)
    return str(d), hf_tok


class Probe:
    """Registered before RLExporterCallback: scrapes /metrics at on_train_end, before ours closes."""

    def __init__(self, ours):
        self.ours = ours
        self.url = None
        self.series = None
        self.events = []

    def make(self):
        from transformers import TrainerCallback
        probe = self

        class _P(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):
                probe.events.append(("log", state.global_step))

            def on_train_end(self, args, state, control, **kw):
                ex = probe.ours.exporter
                assert ex is not None and ex.url, "the callback should be serving by now"
                ex.flush()
                probe.url = ex.url
                probe.series = series(scrape_text(ex.url), with_run=True)
        return _P()


def _run_with_exporter(trainer_factory, run):
    ours = RLExporterCallback(run=run, port=0)
    probe = Probe(ours)
    trainer = trainer_factory([probe.make(), ours])
    trainer.train()
    assert probe.series is not None, "on_train_end did not reach the probe"
    # on_train_end closed the exporter the callback created: /metrics is gone
    assert ours.exporter is None
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(probe.url, timeout=2).read()
    return trainer, _without_run(probe.series, run)


def _check_against_log_history(trainer, series, framework="trl"):
    """Every numeric key in log_history is on /metrics with the value TRL logged last
    (entries and keys in the order the callback exported them; the latest write wins when
    two keys share a series)."""
    expected, unmapped, canonical, last = {}, set(), {}, {}
    for entry in trainer.state.log_history:
        for key, value in entry.items():
            if key == "step" or value is None:
                continue
            r = CATALOG.resolve(key, framework)
            if r.ignored or r.step:
                continue
            last[key] = value
            if r.fallback:
                expected[("rl_unmapped_value", (("key", key),))] = (key, float(value))
                unmapped.add(key)
            else:
                expected[(r.metric.name, tuple(sorted(r.labels)))] = (key, float(value) * r.scale)
                canonical[key] = r.metric.name
    for sample, (key, value) in expected.items():
        assert sample in series, f"{key!r} logged by TRL ({value!r}) is not on /metrics as {sample}"
        got = series[sample]
        assert got == pytest.approx(value, rel=1e-12, abs=0.0) or (
            math.isnan(got) and math.isnan(value)), (key, got, value)
    # every key TRL logged has a canonical series (none falls back to rl_unmapped_value)
    assert not unmapped, f"TRL keys without a catalog entry: {sorted(unmapped)}"
    for key, metric in EXPECT_CANONICAL.items():
        if key in last:
            assert canonical.get(key) == metric, f"{key!r} should export as {metric}, not {canonical.get(key)}"
    # the step axis is the trainer's optimizer step
    assert series[("rl_training_step", ())] == trainer.state.global_step
    return sorted(last), sorted(unmapped), canonical


def test_grpo_trainer_exports_what_trl_logged(tiny_model_dir):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model_dir, tok = tiny_model_dir

    def reward_good(completions, **kw):  # rule-based: +1 per "good", -0.5 per "bad"
        return [float(c.split().count("good")) - 0.5 * c.split().count("bad") for c in completions]

    ds = Dataset.from_dict({"prompt": ["the cat", "a dog", "the mat is", "it runs"] * 4})

    def factory(callbacks):
        args = GRPOConfig(output_dir=os.path.join(model_dir, "grpo-out"), per_device_train_batch_size=4,
                          num_generations=2, max_completion_length=8, logging_steps=1, max_steps=3,
                          report_to="none", use_vllm=False, learning_rate=1e-2, beta=0.1,
                          save_strategy="no", disable_tqdm=True, use_cpu=True, seed=0)
        return GRPOTrainer(model=model_dir, reward_funcs=reward_good, args=args, train_dataset=ds,
                           processing_class=tok, callbacks=callbacks)

    trainer, series = _run_with_exporter(factory, "trl-grpo-test")
    checked, unmapped, canonical = _check_against_log_history(trainer, series)
    # the GRPO key set really was logged (TRL version drift would show here)
    for k in ("loss", "grad_norm", "learning_rate", "reward", "reward_std", "entropy", "kl",
              "num_tokens", "completions/mean_length", "completions/clipped_ratio",
              "frac_reward_zero_std", "rewards/reward_good/mean", "step_time"):
        assert k in checked, f"GRPOTrainer did not log {k!r} (TRL {trl.__version__})"
    info = [k for k in series if k[0] == "rl_run_info"]
    assert len(info) == 1 and ("framework", "trl") in info[0][1] and ("algorithm", "grpo") in info[0][1]
    # phases in progress: generation vs. the optimiser step, closed by now, with their medians
    for phase in ("generate", "training_step"):
        assert series[("rl_phase_recent_median_duration_seconds", (("phase", phase),))] > 0
        assert math.isnan(series[("rl_phase_in_progress_start_timestamp_seconds", (("phase", phase),))])
    print(f"\nTRL {trl.__version__} / transformers {transformers.__version__}: GRPO keys {sorted(checked)}"
          f"\n  canonical: {canonical}\n  unmapped on this branch: {unmapped}")


def test_dpo_trainer_exports_what_trl_logged(tiny_model_dir):
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    model_dir, tok = tiny_model_dir
    pairs = Dataset.from_dict({
        "prompt": ["the cat", "a dog", "the mat", "it"] * 2,
        "chosen": [" is good", " runs good", " is very good", " is good"] * 2,
        "rejected": [" is bad", " not good", " bad", " is not"] * 2,
    })

    def factory(callbacks):
        args = DPOConfig(output_dir=os.path.join(model_dir, "dpo-out"), per_device_train_batch_size=4,
                         logging_steps=1, max_steps=3, report_to="none", save_strategy="no",
                         disable_tqdm=True, use_cpu=True, learning_rate=1e-2, seed=0)
        return DPOTrainer(model=model_dir, args=args, train_dataset=pairs, processing_class=tok,
                          callbacks=callbacks)

    trainer, series = _run_with_exporter(factory, "trl-dpo-test")
    checked, unmapped, canonical = _check_against_log_history(trainer, series)
    for k in ("loss", "grad_norm", "learning_rate", "rewards/chosen", "rewards/rejected",
              "rewards/accuracies", "rewards/margins", "logps/chosen", "logps/rejected"):
        assert k in checked, f"DPOTrainer did not log {k!r} (TRL {trl.__version__})"
    info = [k for k in series if k[0] == "rl_run_info"]
    assert len(info) == 1 and ("algorithm", "dpo") in info[0][1]
    print(f"\nTRL {trl.__version__}: DPO keys {sorted(checked)}\n  canonical: {canonical}"
          f"\n  unmapped on this branch: {unmapped}")
