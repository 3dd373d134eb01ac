"""The trainer's configuration as it prints it at start-up, reduced to the settings the alert
rules reason about:

    config/n_mini                          PPO mini-batches (optimizer steps) per training step
    config/max_grad_norm                   gradient clipping threshold
    config/max_response_length             response length limit, tokens
    config/rollout_gpu_memory_utilization  GPU memory fraction the rollout engine reserves
    config/total_training_steps            steps the run is configured for (veRL; /status ETA)

Two print shapes, each read into one frame (no step: a configuration holds from the start):

- veRL's pprint of the whole Hydra config, one dict over hundreds of lines, every line behind
  the same Ray prefix while other actors interleave their own lines:

      (TaskRunner pid=1888103) {'actor_rollout_ref': {'actor': {'checkpoint': {'contents': ['model',
      (TaskRunner pid=1888103)                                  'clip_ratio': 0.2,
      ...
      (TaskRunner pid=1888103)              'val_before_train': True}}

  n_mini = data.train_batch_size / actor.ppo_mini_batch_size * actor.ppo_epochs (both batch
  sizes count prompts);
- the Megatron-style argument table slime and Miles print (`  clip_grad ....... 1.0`) between
  `---- arguments ----` and `---- end of arguments ----`; n_mini is num_steps_per_rollout, or
  rollout_batch_size * n_samples_per_prompt / global_batch_size when that is None.

A setting the print does not hold is left out; a dump that does not close within
_MAX_LINES lines, or does not evaluate, is counted in rejected, never raised.
"""
from __future__ import annotations

import ast
import re

from .base import Frame, Parser, Rule, brackets, number

VERL_FORMAT = "verl_config"
ARGS_FORMAT = "megatron_args"

VERL_START = "{'actor_rollout_ref': {"
_RAY = re.compile(r"^\((\w+) pid=\d+(?:, ip=[\d.]+)?\) ?")
_MAX_LINES = 5000

ARGS_START = re.compile(r"^-{8,} arguments -{8,}\s*$")
_ARGS_END = re.compile(r"^-{8,} end of arguments -{8,}\s*$")
_ARG = re.compile(r"^\s+([A-Za-z_]\w*) \.+ (.*?)\s*$")


def detect_verl(line: str) -> bool:
    """veRL's start-up config dump, before any record."""
    return VERL_START in line


def detect_args(line: str) -> bool:
    return "arguments ---" in line and ARGS_START.match(line) is not None


def _dig(d, *path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _num(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return v
    got = number(str(v))
    return got if isinstance(got, (int, float)) and not isinstance(got, bool) else None


def _put(out: dict, key: str, value) -> None:
    v = _num(value)
    if v is not None:
        out["config/" + key] = v


def _depth(text: str, depth: int) -> int:
    """Bracket depth after text, brackets inside quoted strings not counted."""
    return depth + sum(1 if c in "{[(" else -1 for _, c in brackets(text))


def verl_settings(cfg: dict) -> dict:
    out: dict = {}
    actor = _dig(cfg, "actor_rollout_ref", "actor") or {}
    train = _num(_dig(cfg, "data", "train_batch_size"))
    mini = _num(actor.get("ppo_mini_batch_size"))
    epochs = _num(actor.get("ppo_epochs"))
    if train and mini:
        _put(out, "n_mini", train / mini * (epochs or 1))
    _put(out, "max_grad_norm", actor.get("grad_clip"))
    resp = _dig(cfg, "data", "max_response_length")
    if resp is None:
        resp = _dig(cfg, "actor_rollout_ref", "rollout", "response_length")
    _put(out, "max_response_length", resp)
    _put(out, "rollout_gpu_memory_utilization",
         _dig(cfg, "actor_rollout_ref", "rollout", "gpu_memory_utilization"))
    total = _num(_dig(cfg, "trainer", "total_training_steps"))
    if total is not None and total > 0:  # -1 / None: veRL derives it from the epochs
        out["config/total_training_steps"] = total
    return out


def megatron_settings(args: dict) -> dict:
    out: dict = {}
    steps = _num(args.get("num_steps_per_rollout"))
    if steps is None:
        rollout, n, gbs = (_num(args.get(k)) for k in
                           ("rollout_batch_size", "n_samples_per_prompt", "global_batch_size"))
        if rollout and n and gbs:
            steps = rollout * n / gbs
    if steps is not None:
        out["config/n_mini"] = steps
    _put(out, "max_grad_norm", args.get("clip_grad"))
    _put(out, "max_response_length", args.get("rollout_max_response_len"))
    _put(out, "rollout_gpu_memory_utilization", args.get("sglang_mem_fraction_static"))
    return out


class VerlConfigParser(Parser):
    """Rejoins the pprinted config of one Ray actor; lines of other actors pass by."""

    format = VERL_FORMAT
    framework = "verl"
    auxiliary = startup = True
    summary = ("veRL's start-up pprint of the whole Hydra config (hundreds of lines behind one Ray "
               "prefix, other actors' lines interleaved) -> one frame without a step: "
               "`config/n_mini` (train_batch_size / ppo_mini_batch_size * ppo_epochs), "
               "`config/max_grad_norm`, `config/max_response_length`, "
               "`config/rollout_gpu_memory_utilization`")
    # before the dict formats (spool, verl_jsonl, llamafactory, ms_swift, hf): its first line
    # is a Python dict whose settings may hold their keys
    rules = (Rule(200, VERL_START, detect_verl,
                  "(TaskRunner pid=1) {'actor_rollout_ref': {'actor': {'checkpoint': {"),)

    def __init__(self):
        super().__init__()
        self._lines: list[str] | None = None
        self._actor: str | None = None
        self._depth = 0

    @property
    def pending(self) -> bool:
        return self._lines is not None

    def feed(self, line: str) -> list[Frame]:
        m = _RAY.match(line)
        actor, body = (m.group(1), line[m.end():]) if m else (None, line)
        if self._lines is None:
            if not body.startswith(VERL_START):
                self.skipped += 1
                return []
            self._lines, self._actor, self._depth = [], actor, 0
        elif actor != self._actor:
            return []  # another actor's line in the middle of the dump
        self._lines.append(body)
        self._depth = _depth(body, self._depth)
        if self._depth > 0:
            if len(self._lines) >= _MAX_LINES:
                self.rejected["unclosed_config"] += 1
                self.reset()
            return []
        text = "\n".join(self._lines)
        self.reset()
        try:
            cfg = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            self.rejected["malformed"] += 1
            return []
        data = verl_settings(cfg) if isinstance(cfg, dict) else {}
        return [Frame(None, data)] if data else []

    def flush(self) -> list[Frame]:
        if self._lines is not None:
            self.rejected["unclosed_config"] += 1
            self.reset()
        return []

    def reset(self) -> None:
        self._lines, self._actor, self._depth = None, None, 0


class MegatronArgsParser(Parser):
    """slime/Miles argument table: `  name ..... value` rows between two ruler lines."""

    format = ARGS_FORMAT
    framework = "slime"
    auxiliary = startup = True
    summary = ("slime/Miles start-up argument table (`  clip_grad ...... 1.0` between the "
               "`arguments` rulers) -> the same four `config/*` keys (n_mini = "
               "num_steps_per_rollout, or rollout_batch_size * n_samples_per_prompt / "
               "global_batch_size)")
    # a ruler line has no other format's shape: anywhere after the dict formats
    rules = (Rule(1100, "arguments ---", detect_args, "-------- arguments --------"),)

    def __init__(self):
        super().__init__()
        self._args: dict | None = None

    @property
    def pending(self) -> bool:
        return self._args is not None

    def feed(self, line: str) -> list[Frame]:
        if self._args is None:
            if ARGS_START.match(line):
                self._args = {}
            else:
                self.skipped += 1
            return []
        if _ARGS_END.match(line):
            args, self._args = self._args, None
            data = megatron_settings(args)
            return [Frame(None, data)] if data else []
        m = _ARG.match(line)
        if m:
            self._args[m.group(1)] = m.group(2)
            if len(self._args) >= _MAX_LINES:
                self.rejected["unclosed_config"] += 1
                self._args = None
        return []

    def flush(self) -> list[Frame]:
        if self._args is not None:
            self.rejected["unclosed_config"] += 1
            self._args = None
        return []

    def reset(self) -> None:
        self._args = None
