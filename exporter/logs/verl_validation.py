"""veRL's validation dicts, printed (pprint) by the trainer around the step records:

    (main_task pid=54569) "Initial validation metrics: {'test_score/openai/gsm8k': 0.00076}"
    (TaskRunner pid=1) "Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': 0.92}"

Initial metrics are the ones veRL logs at step 0 (before training); final ones repeat the
last step's validation, so they take the last step seen in a `step:N` record when the
same parser saw one, else none.

A string too long for one line is pprinted as implicitly concatenated pieces in parentheses,
each line behind the same Ray prefix (the pieces split anywhere, even inside a key):

    (TaskRunner pid=1) ("Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': "
    (TaskRunner pid=1)  "0.821076573161486, 'val-aux/openai/gsm8k/reward/std@1': 0.0, "
    (TaskRunner pid=1)  "'val-aux/openai/gsm8k/reward/worst@1/mean': 0.821076573161486}")

Those pieces are rejoined (lines of other actors pass by) before the dict is read.
"""
from __future__ import annotations

import ast
import re

from .base import Frame, Parser, Rule, parse_pydict

FORMAT = "verl_validation"
FRAMEWORK = "verl"


def detect(line: str) -> bool:
    return "validation metrics: {" in line


_DICT = re.compile(r"(Initial|Final) validation metrics: (\{.*\})")
_RAY = re.compile(r"^\((\w+) pid=\d+(?:, ip=[\d.]+)?\) ?")
_WRAPPED_START = re.compile(r"""^\s*\(["'](?:Initial|Final) validation metrics: \{""")
_MAX_PIECES = 64


class VerlValidationParser(Parser):
    format = FORMAT
    framework = FRAMEWORK
    auxiliary = True  # printed around the step records: a veRL log's format is verl_console
    steps_from = "verl_console"  # the Final print repeats the last step record's validation
    summary = ("veRL's `\"Initial validation metrics: {...}\"` / `\"Final validation metrics: "
               "{...}\"` prints (step 0 / the last step)")
    # before hf: the print holds a Python dict
    rules = (Rule(900, "validation metrics: {", detect,
                  "(TaskRunner pid=1) \"Final validation metrics: {'val-core/gsm8k/acc': 0.92}\""),)

    def __init__(self):
        super().__init__()
        self.last_step = None
        self._pieces: list[str] | None = None
        self._actor: str | None = None

    @property
    def pending(self) -> bool:
        return self._pieces is not None

    def feed(self, line: str) -> list[Frame]:
        if self._pieces is not None:
            m = _RAY.match(line)
            actor, body = (m.group(1), line[m.end():]) if m else (None, line)
            if actor != self._actor:
                return []  # another actor's line in the middle of the print
            self._pieces.append(body)
            if body.rstrip().endswith(")"):
                return self._wrapped()
            if len(self._pieces) >= _MAX_PIECES:
                self.rejected["unclosed_dict"] += 1
                self.reset()
            return []
        if "validation metrics: {" not in line:
            self.skipped += 1
            return []
        m = _RAY.match(line)
        actor, body = (m.group(1), line[m.end():]) if m else (None, line)
        if _WRAPPED_START.match(body) and not body.rstrip().endswith(")"):
            self._pieces, self._actor = [body], actor
            return []
        return self._read(line)

    def _wrapped(self) -> list[Frame]:
        text = "\n".join(self._pieces)
        self.reset()
        try:
            s = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            self.rejected["malformed"] += 1
            return []
        if not isinstance(s, str):
            self.rejected["malformed"] += 1
            return []
        return self._read(s)

    def _read(self, text: str) -> list[Frame]:
        m = _DICT.search(text)
        if m is None:
            self.skipped += 1
            return []
        data, bad = parse_pydict(m.group(2))
        if data is None or not data:
            self.rejected["malformed"] += 1
            return []
        if bad:
            self.rejected["malformed_value"] += bad
        data = {k: v for k, v in data.items() if not isinstance(v, str)}
        step = 0 if m.group(1) == "Initial" else self.last_step
        return [Frame(step, data)]

    def flush(self) -> list[Frame]:
        if self._pieces is not None:
            self.rejected["unclosed_dict"] += 1
            self.reset()
        return []

    def reset(self) -> None:
        self._pieces, self._actor = None, None
