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

from .base import NOT_A_NUMBER, number
from .config_dump import ARGS_START as _ARGS_START
from .config_dump import VERL_START as _VERL_CONFIG
from .llamafactory import detect as _llamafactory
from .openrlhf import STATUS_KEYS as _OPENRLHF_STATUS
from .wandb_summary import ROW as _WANDB_ROW

_SPOOL = re.compile(r'^\s*\{.*"spool":\s*1\b')
_VERL_JSONL = re.compile(r'^\s*\{\s*"step"\s*:\s*-?\d+\s*,\s*"data"\s*:\s*\{')
_VERL = re.compile(r"(?:^|\s)step:-?\d+ - [^\s:]+:\S")
# one metric per line: "step:1" alone (behind any prefix), then " - key:value" lines
_VERL_HEAD = re.compile(r"(?:^|\s)step:-?\d+\s*$")
_SLIME = re.compile(r"(?:^|[\s\]:-])(?:step|rollout|perf|eval|multi_turn|passrate) \d+: \{['\"]")
_MILES_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ [^\]\s]+\]")
_OPENRLHF = re.compile(r"Global step \d+: \{|global_step \d+, eval_metrics: \{")
# a tqdm bar with a k=v postfix: "| 5/10 [01:00<01:00, 12.0s/it, act_loss=-0.0012, ...]"
_POSTFIX = re.compile(r"\d+/\d+ \[[^\]]*?, [\w/.@-]+=[-+]?(?:\d|nan|inf)")
_HF_KEYS = ("'loss': ", "'epoch': ", "'eval_", "'train_runtime': ", "'learning_rate': ",
            "'grad_norm': ", '"loss": ', '"epoch": ', '"eval_')
# stats keys always have a "/" (ppo_actor/..., timeperf/...): a rich-printed table of
# completions between TRL's dicts (│ prompt │ completion │ 1.0 │) is not a stats table
_AREAL = re.compile(r"^\(AReaL\) |Train step \d+/\d+ done|[╒╘╞]═"
                    r"|│\s*[^\s│/]+/[^\s│]*\s*│\s*[-+]?(?:\d|nan|inf)")
_ASCII_ROW = re.compile(r"^\s*\|\s*[^\s|/]+/[^\s|]*\s*\|\s*[-+]?(?:\d|nan|inf)[^|]*\|")


AUXILIARY = frozenset({"verl_validation", "wandb", "verl_config", "megatron_args"})


def detect_line(line: str) -> str | None:
    fmt = detect_format(line)
    return None if fmt in AUXILIARY else fmt


def detect_format(line: str) -> str | None:
    if "step:" in line and (_VERL.search(line) or _VERL_HEAD.search(line)):
        return "verl_console"
    if "{" in line:
        if _VERL_CONFIG in line:  # the start-up config dump, before any record
            return "verl_config"
        head = line.lstrip()[:1] == "{"
        if head and '"spool"' in line and _SPOOL.match(line):
            return "spool"
        if head and '"data"' in line and _VERL_JSONL.match(line):
            return "verl_jsonl"
        if head and '"current_steps"' in line and _llamafactory(line):
            return "llamafactory"
        # HF's own log dicts never hold global_step; ms-swift 2.x added it (3.x: .../max_steps)
        if "global_step/max_steps" in line or "'global_step': " in line:
            return "ms_swift"
        if ": {" in line:
            if _OPENRLHF.search(line):  # before slime: "Global step 12: {" ends like "step 12: {"
                return "openrlhf"
            if _SLIME.search(line):
                return "miles" if _MILES_PREFIX.search(line) else "slime"
            if "validation metrics: {" in line:
                return "verl_validation"
        # OpenRLHF's early status dict: the bar's short names (glen, tlen, cri, k_coef)
        if "{'" in line and any(k in line for k in _OPENRLHF_STATUS):
            return "openrlhf"
        if ("{'" in line or '{"' in line) and any(k in line for k in _HF_KEYS):
            return "hf"
    elif "global_step/max_steps" in line:  # a dict pasted without its braces
        return "ms_swift"
    if "arguments ---" in line and _ARGS_START.match(line):
        return "megatron_args"
    if "wandb:" in line:
        m = _WANDB_ROW.search(line)
        if m and number(m.group(2)) is not NOT_A_NUMBER:  # not a "Run history" sparkline
            return "wandb"
    if ("│" in line or "═" in line or "AReaL" in line or "Train step" in line) \
            and _AREAL.search(line):
        return "areal"
    if "=" in line and "/" in line and _POSTFIX.search(line):
        return "openrlhf"
    if line[:1] in " |" and "|" in line and _ASCII_ROW.match(line):
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
