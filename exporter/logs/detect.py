"""Which format a line belongs to, decided on its content wherever it sits in the file.

`detect_format(line)` answers the format name or None (not a metric line of any known
format). `detect_line(line)` is the same without the auxiliary formats (veRL's validation
dict prints, W&B's end-of-run summary): it picks the one parser a follower locks onto, and
a veRL log prints its initial validation dict before its first step record.

Both are called on every line of an auto-detected file, so each test is a plain
substring check before its regular expression. Rules are tried most specific first: an
ms-swift dict is also a Python dict, a slime `step N: {...}` line also holds a dict, so
the generic HF dict rule comes last.

`near_miss(lines)` is for when no line matched: the format whose vocabulary a line shares
most, with that line, so `parse` can say what almost matched instead of nothing.
"""
from __future__ import annotations

import re

from . import (areal, config_dump, hf, llamafactory, ms_swift, openrlhf, slime, spool,
               verl_console, verl_jsonl, verl_validation, wandb_summary)


AUXILIARY = frozenset({"verl_validation", "wandb", "verl_config", "megatron_args"})


def detect_line(line: str) -> str | None:
    fmt = detect_format(line)
    return None if fmt in AUXILIARY else fmt


def detect_format(line: str) -> str | None:
    # Each format's shape is its module's detect(); here only their order, most specific
    # first, behind cheap substring gates (this runs on every line of an auto-detected file).
    if "step:" in line and verl_console.detect(line):
        return "verl_console"
    if "{" in line:
        if config_dump.detect_verl(line):
            return "verl_config"
        if line.lstrip()[:1] == "{":
            if spool.detect(line):
                return "spool"
            if verl_jsonl.detect(line):
                return "verl_jsonl"
            if llamafactory.detect(line):
                return "llamafactory"
        if ms_swift.detect(line):  # before hf: its dicts are HF's plus global_step
            return "ms_swift"
        if ": {" in line:
            if openrlhf.detect_dict(line):  # before slime: "Global step 12: {" ends like it
                return "openrlhf"
            fmt = slime.detect(line)
            if fmt:
                return fmt
            if verl_validation.detect(line):
                return "verl_validation"
        if openrlhf.detect_status(line):
            return "openrlhf"
        if hf.detect(line):
            return "hf"
    elif "global_step" in line and ms_swift.detect(line):  # a dict pasted without its braces
        return "ms_swift"
    if "arguments ---" in line and config_dump.detect_args(line):
        return "megatron_args"
    if "wandb:" in line and wandb_summary.detect(line):
        return "wandb"
    if areal.detect(line):
        return "areal"
    if "=" in line and openrlhf.detect_bar(line):
        return "openrlhf"
    if "|" in line and areal.detect_ascii(line):
        return "areal"
    return None


# ------------------------------------------------------------------ near misses
# Words each format's metric lines are made of; a line that has several of them but no
# format rule matched is the one to show the user.
_HINTS = {
    "verl_console": ("step:", "step ", "actor/", "critic/", "timing_s/", "response_length/",
                     "perf/", "val-core/", "training/global_step"),
    "hf": ("'loss'", "'epoch'", "'learning_rate'", "'grad_norm'", "'reward'", "eval_"),
    "ms_swift": ("global_step", "max_steps", "'memory(GiB)'", "train_speed", "frac_reward_zero_std"),
    "openrlhf": ("Global step", "policy_loss", "act_lr", "Episode [", "Train epoch ["),
    "slime": ("train/loss", "rollout/", "perf/", "step ", ": {"),
    "areal": ("ppo_actor/", "│", "StatsLogger", "Train step"),
    "wandb": ("wandb:", "Run summary", "Run history"),
}
_NUMBER = re.compile(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?")


def near_miss(lines) -> tuple[str, int, str] | None:
    """(format, 1-based line number, line) of the line most like a metric line of some
    format, or None when no line shares two of any format's words and holds a number."""
    best = None
    for n, line in enumerate(lines, 1):
        if len(line) > 4000:
            line = line[:4000]
        if not _NUMBER.search(line):
            continue
        for fmt, words in _HINTS.items():
            score = sum(1 for w in words if w in line)
            if score >= 2 and (best is None or score > best[0]):
                best = (score, fmt, n, line)
    return None if best is None else best[1:]
