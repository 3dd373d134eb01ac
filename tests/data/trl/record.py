"""Records real TRL GRPOTrainer runs (CPU, tiny local model) as rl-exporter spool files.

    python3 tests/data/trl/record.py                 # every run, about 10 min on 2 cores
    python3 tests/data/trl/record.py healthy lr_x1000 --steps 200

Each run writes tests/data/trl/<run>.spool (what RLExporterCallback(spool=...) saw: every
dict TRL logged, at its optimizer step) and <run>.json (the trainer settings rl-exporter
captures as rl_config_value, TRL/torch versions, wall time). Replay a spool with
`rl-exporter parse` / `serve --source spool:PATH`.

No hub: the tokenizer is a word-level `tokenizers` model over a 24-word vocabulary and the
policy a 2-layer Llama built from a config, pre-trained here for a few seconds on short
sentences that end in <eos> (so, like a real instruct model, it stops on its own: a healthy
run is not truncated). Runs:

  healthy          reward 1 when the completion holds the prompt's target word (+0.5 when
                   short), beta 0.1, lr 1e-4, 8 prompts x 4 generations per step, 12-token
                   limit. (A first recording at lr 5e-4 with 2 prompts per step jumped its
                   KL to the reference from 0.016 to 0.23 within 15 steps, seed 001's own
                   example of a sharp turn, and its per-step reward over 8 samples was far
                   noisier than a real run's; this one learns gradually: reward 0.17 -> 0.79,
                   grad norm within seed 002's 0.35-4.95.)
  lr_x1000         the same with lr 0.1
  constant_reward  every completion gets reward 1: zero advantage, no learning signal
  truncation       the healthy setup with max_completion_length 2
  entropy_collapse reward = share of "good" tokens (one token is the whole answer), beta 0
                   (no KL anchor), lr 3e-3
  reward_zero      the reward looks for an answer the model cannot write (a word outside its
                   vocabulary): every sample scores 0, a broken reward
  reward_unwired   the task reward reads a dataset column the dataset does not have (never a
                   hit), plus a 0.5 format bonus every completion earns: every sample scores 0.5
  lr_x10000        the healthy setup with lr 1.0: broken from the first update (KL and gradient
                   norm far above any healthy run's from the first logged steps)
  beta_x10000      lr 0.1 and beta 1000: the KL term dominates the loss (a loss magnitude no
                   healthy run has)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "..")))

WORDS = "the a good bad cat dog runs sits on mat is very not yes no and or it this that".split()
PROMPTS = ["the cat", "a dog", "the mat is", "it runs", "this is", "that dog", "a cat sits", "no"]


def build_model(out_dir: str, seed: int = 0, pretrain_steps: int = 300):
    """Tokenizer + 2-layer Llama, pre-trained on random short sentences ending in <eos>."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<pad>", "<eos>", "<bos>", "<unk>"]
    vocab = {w: i for i, w in enumerate(special + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                     bos_token="<bos>", unk_token="<unk>")
    torch.manual_seed(seed)
    rng = random.Random(seed)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=64, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    model = LlamaForCausalLM(cfg)
    # "Pre-training": prompt + 1-5 random words + <eos>, so completions end by themselves.
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(pretrain_steps):
        rows = []
        for _ in range(32):
            words = rng.choice(PROMPTS).split() + [rng.choice(WORDS) for _ in range(rng.randint(1, 5))]
            rows.append([vocab[w] for w in words] + [1])
        n = max(map(len, rows))
        ids = torch.tensor([r + [0] * (n - len(r)) for r in rows])
        labels = ids.masked_fill(ids == 0, -100)
        loss = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    model.save_pretrained(out_dir)
    hf_tok.save_pretrained(out_dir)
    return hf_tok, float(loss.detach())


# Each prompt has its own target word, so the task is learnable but not solved in a few
# steps, and groups stay informative (like a real dataset of mixed difficulty).
TARGET = {"cat": "sits", "dog": "runs", "mat": "good", "runs": "good", "this": "yes", "no": "not"}


def _target(prompt: str) -> str:
    for w in reversed(prompt.split()):
        if w in TARGET:
            return TARGET[w]
    return "good"


def says_target(prompts, completions, **kw):
    """1 when the completion contains the prompt's target word, 0.5 more when it is short."""
    out = []
    for p, c in zip(prompts, completions):
        words = c.split()
        hit = _target(p) in words
        out.append((1.0 if hit else 0.0) + (0.5 if hit and len(words) <= 3 else 0.0))
    return out


def constant(completions, **kw):
    return [1.0 for _ in completions]


def says_zebra(completions, **kw):
    """1 when the completion says "zebra": a word the tokenizer cannot produce (a reward looking
    for the wrong answer format)."""
    return [1.0 if "zebra" in c.split() else 0.0 for c in completions]


def reads_missing_answer(completions, **kw):
    """A task reward comparing the completion with the dataset's `answer` column, which this
    dataset does not have (TRL hands a reward function the dataset's extra columns as keyword
    arguments; a missing one is simply absent): the task part is always 0, and only the 0.5
    format bonus for a completion of at most 12 words remains."""
    answers = kw.get("answer") or [None] * len(completions)
    return [(1.0 if a is not None and a in c.split() else 0.0) + (0.5 if len(c.split()) <= 12 else 0.0)
            for a, c in zip(answers, completions)]


def good_token_share(completions, **kw):
    """The share of completion tokens that are "good": best answer is "good" and nothing else."""
    return [c.split().count("good") / max(1, len(c.split())) for c in completions]


HEALTHY_LR = 1e-4
HEALTHY_BETA = 0.1
RUNS = {
    "healthy": dict(reward=says_target, learning_rate=HEALTHY_LR, beta=HEALTHY_BETA),
    "lr_x1000": dict(reward=says_target, learning_rate=HEALTHY_LR * 1000, beta=HEALTHY_BETA),
    "constant_reward": dict(reward=constant, learning_rate=HEALTHY_LR, beta=HEALTHY_BETA),
    "truncation": dict(reward=says_target, learning_rate=HEALTHY_LR, beta=HEALTHY_BETA, max_completion_length=2),
    "entropy_collapse": dict(reward=good_token_share, learning_rate=3e-3, beta=0.0),
    "reward_zero": dict(reward=says_zebra, learning_rate=HEALTHY_LR, beta=HEALTHY_BETA),
    "reward_unwired": dict(reward=reads_missing_answer, learning_rate=HEALTHY_LR, beta=HEALTHY_BETA),
    "lr_x10000": dict(reward=says_target, learning_rate=HEALTHY_LR * 10000, beta=HEALTHY_BETA),
    "beta_x10000": dict(reward=says_target, learning_rate=HEALTHY_LR * 1000, beta=HEALTHY_BETA * 10000),
}


def record(name: str, model_dir: str, tok, steps: int, out_dir: str, seed: int = 0) -> dict:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from exporter.integrations.trl import RLExporterCallback, config_values

    spec = dict(RUNS[name])
    reward = spec.pop("reward")
    label = name if seed == 0 else f"{name}_seed{seed}"  # another sampling seed, same setup
    spool = os.path.join(out_dir, f"{label}.spool")
    if os.path.exists(spool):
        os.remove(spool)
    ds = Dataset.from_dict({"prompt": PROMPTS * 8})
    args = GRPOConfig(
        output_dir=os.path.join(model_dir, f"out-{name}"), per_device_train_batch_size=32,
        num_generations=4, max_completion_length=spec.pop("max_completion_length", 12),
        logging_steps=1, max_steps=steps, report_to="none", use_vllm=False, save_strategy="no",
        disable_tqdm=True, use_cpu=True, seed=seed, lr_scheduler_type="constant", warmup_steps=0,
        **spec)
    cb = RLExporterCallback(run=f"trl-{label}", port=None, spool=spool)
    trainer = GRPOTrainer(model=model_dir, reward_funcs=reward, args=args, train_dataset=ds,
                          processing_class=tok, callbacks=[cb])
    t0 = time.time()
    trainer.train()
    wall = time.time() - t0
    import torch
    import trl
    meta = {"run": f"trl-{label}", "steps": steps, "seed": seed, "wall_s": round(wall, 1),
            "trl": trl.__version__, "torch": torch.__version__,
            "reward": reward.__name__, "settings": {k: v for k, v in spec.items()},
            "max_completion_length": args.max_completion_length,
            "rl_config_value": config_values(args)}
    with open(os.path.join(out_dir, f"{label}.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return meta


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", help=f"some of {', '.join(RUNS)} (default: all)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out", default=HERE)
    p.add_argument("--seed", type=int, default=0,
                   help="the trainer's sampling seed (the model is the same); files get _seed<N>")
    a = p.parse_args(argv)
    unknown = sorted(set(a.runs) - set(RUNS))
    if unknown:
        p.error(f"unknown runs {unknown}; known: {', '.join(RUNS)}")
    import torch
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        tok, loss = build_model(d)
        print(f"pre-trained tiny model: final LM loss {loss:.3f}", flush=True)
        for name in a.runs or list(RUNS):
            meta = record(name, d, tok, a.steps, a.out, a.seed)
            print(f"{name}: {meta['steps']} steps in {meta['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
