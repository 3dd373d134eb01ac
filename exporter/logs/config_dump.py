"""The trainer's configuration as it prints it at start-up, reduced to the settings the alert
rules reason about, `config/{name}` for each name of exporter/catalog/config_echo.py SETTINGS
(n_mini, max_grad_norm, max_response_length, rollout_gpu_memory_fraction,
total_training_steps, pi_old_from_rollout, kl_loss_coef, kl_reward_coef, async_training,
colocated, update_weights_interval). The values come from the same functions the framework
integrations read a live config with (exporter/integrations/verl.py and slime.py
config_values), so a setting means the same whether the sidecar or the hook exports it.

Two print shapes, each read into one frame (no step: a configuration holds from the start):

- veRL's pprint of the whole Hydra config, one dict over hundreds of lines, every line behind
  the same Ray prefix while other actors interleave their own lines:

      (TaskRunner pid=1888103) {'actor_rollout_ref': {'actor': {'checkpoint': {'contents': ['model',
      (TaskRunner pid=1888103)                                  'clip_ratio': 0.2,
      ...
      (TaskRunner pid=1888103)              'val_before_train': True}}

  n_mini = actor.ppo_epochs * ceil(data.train_batch_size / actor.ppo_mini_batch_size) (both
  batch sizes count prompts). A line of the dump's actor with another process's Ray prefix
  spliced into it (`'experiment_name': 'x',(pid=934604) libgomp: ...`: two writers on one
  stream) is cut at the splice. A line lost from the middle of the dump (a corpus run's
  log has `commit:` where `'param_offload': False},` was) is found by pprint's indentation,
  which puts every item at the column after its open bracket: a line indented left of the
  innermost open bracket closes it (counted in rejected{reason="config_line_lost"});
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
# another process's Ray prefix inside a line: `(pid=934604)`, `(WorkerDict pid=1, ip=10.0.0.1)`
_SPLICE = re.compile(r"\((?:[\w:.-]+ )*pid=\d+(?:, ip=[\d.]+)?\)")
_MAX_LINES = 5000

ARGS_START = re.compile(r"^-{8,} arguments -{8,}\s*$")
_ARGS_END = re.compile(r"^-{8,} end of arguments -{8,}\s*$")
# `  name ....... value`; a name too long for the dots is followed by two spaces
_ARG = re.compile(r"^\s+([A-Za-z_]\w*)(?: \.+ |\s{2,})(.*?)\s*$")


def detect_verl(line: str) -> bool:
    """veRL's start-up config dump, before any record."""
    return VERL_START in line


def detect_args(line: str) -> bool:
    return "arguments ---" in line and ARGS_START.match(line) is not None


_CLOSER = {"{": "}", "[": "]", "(": ")"}


def _prefixed(values: dict) -> dict:
    return {"config/" + k: v for k, v in values.items()}


def verl_settings(cfg: dict) -> dict:
    from ..integrations.verl import config_values
    return _prefixed(config_values(cfg))


_LITERALS = {"True": True, "False": False, "None": None}


def _arg_value(text: str):
    """A printed argument: True/False/None, a number, else the text."""
    if text in _LITERALS:
        return _LITERALS[text]
    got = number(text)
    return got if isinstance(got, (int, float)) else text


def megatron_settings(args: dict) -> dict:
    from types import SimpleNamespace
    from ..integrations.slime import config_values
    return _prefixed(config_values(SimpleNamespace(**{k: _arg_value(v) for k, v in args.items()})))


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
        self._open: list[tuple[str, int]] = []  # (closer, content column) of each open bracket

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
            self._lines, self._actor, self._open = [], actor, []
        elif actor != self._actor:
            return []  # another actor's line in the middle of the dump
        cut = _SPLICE.search(body)
        if cut is not None:
            body = body[:cut.start()]  # another writer's line spliced into this one
        if self._lines:  # pprint indents an item to the column after its open bracket
            indent = len(body) - len(body.lstrip(" "))
            if self._open and indent < self._open[-1][1]:
                self.rejected["config_line_lost"] += 1
                while self._open and indent < self._open[-1][1]:
                    self._lines[-1] += self._open.pop()[0]  # its closing line was lost
                if self._open:
                    self._lines[-1] += ","  # the next item follows in the enclosing bracket
        if self._lines and not self._open:
            self._lines.append(body)
            return self._finish()
        self._lines.append(body)
        for i, c in brackets(body):
            if c in _CLOSER:
                self._open.append((_CLOSER[c], i + 1))
            elif self._open:
                self._open.pop()
        if self._open:
            if len(self._lines) >= _MAX_LINES:
                self.rejected["unclosed_config"] += 1
                self.reset()
            return []
        return self._finish()

    def _finish(self) -> list[Frame]:
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
        self._lines, self._actor, self._open = None, None, []


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
