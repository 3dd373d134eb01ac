"""slime and Miles console lines: a logging prefix, then `{tag}{kind} {n}: {dict}`.

    [2026-08-21 17:14:19] model.py:918 - step 7: {'train/loss': -0.0031, 'train/step': 7}
    [2026-08-21 18:09:36.123 actor_cell0_rank0] log_utils.py:542 - step 7: {...}   (Miles)
    [2026-08-21 17:15:02] rollout.py:120 - perf 3: {'perf/rollout_time': 41.2, ...}

kind is one of step, rollout, perf, eval, multi_turn, passrate; n is the train step
(step) or the rollout id (others). A `step` record's frame step is n; another record's is the
last train step read, once there is one: a rollout id counts rollouts, and with more than one
train step per rollout (rollout_batch_size x n_samples_per_prompt > global_batch_size) rollout
3 comes after train step 5, which read as a restart. Whatever precedes the kind (a Ray actor
prefix, another logger's format) is ignored.
"""
from __future__ import annotations

import re

from .base import Frame, Parser, Rule, parse_pydict

FORMAT = "slime"
MILES_FORMAT = "miles"
_DETECT = re.compile(r"(?:^|[\s\]:-])(?:step|rollout|perf|eval|multi_turn|passrate) \d+: \{['\"]")
_MILES_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ [^\]\s]+\]")


def detect(line: str) -> bool:
    """A `step N: {...}` record line (slime's, or Miles')."""
    return _DETECT.search(line) is not None


def detect_miles(line: str) -> bool:
    """A record line behind Miles's logging prefix (`[... 18:09:36.123 actor_cell0_rank0]`)."""
    return _MILES_PREFIX.search(line) is not None and _DETECT.search(line) is not None

_MSG = re.compile(r"(?:^|[\s\]:-])(step|rollout|perf|eval|multi_turn|passrate) (\d+): (\{.*\})\s*$")
KINDS = ("step", "rollout", "perf", "eval", "multi_turn", "passrate")


_OPEN = re.compile(r"(?:^|[\s\]:-])(?:step|rollout|perf|eval|multi_turn|passrate) \d+: \{['\"]")
_MAX_WRAPPED = 16  # lines a hard-wrapped dict may span


class SlimeParser(Parser):
    """A dict the terminal (or a paste) broke over several lines is rejoined: a record line
    whose dict is not closed stays open, and the next lines are appended as they are
    (the break can fall inside a number) until one closes it."""

    format = FORMAT
    framework = "slime"
    summary = ("`step N: {...}` / `rollout N:` / `perf N:` / `eval N:` behind any prefix (`[ts] "
               "file.py:line - `, `(RolloutManager pid=...)`, another logger's); a dict broken "
               "over lines is rejoined")
    # before verl_validation and hf: a record's dict is a Python dict behind a message
    rules = (Rule(810, ": {", detect, "[2026-08-21 17:14:19] model.py:918 - step 7: {'a/b': 1}"),)
    hints = ("train/loss", "rollout/", "perf/", "step ", ": {")

    def __init__(self):
        super().__init__()
        self._open: list[str] | None = None
        self._train: int | None = None  # the last `step N` record's N

    @property
    def pending(self) -> bool:
        return self._open is not None

    def feed(self, line: str) -> list[Frame]:
        if self._open is not None:
            if _OPEN.search(line) is None and len(self._open) < _MAX_WRAPPED:
                self._open.append(line)
                if line.rstrip().endswith("}"):
                    return self._record("".join(self._open))
                return []
            out = self.flush()
            return out + self.feed(line)
        if ": {" not in line:
            self.skipped += 1
            return []
        if not line.rstrip().endswith("}") and _OPEN.search(line):
            self._open = [line]
            return []
        return self._record(line)

    def flush(self) -> list[Frame]:
        if self._open is None:
            return []
        self._open = None
        self.rejected["unclosed_dict"] += 1
        return []

    def reset(self) -> None:
        self._open = None
        self._train = None

    def _record(self, line: str) -> list[Frame]:
        self._open = None
        m = _MSG.search(line)
        if m is None:
            self.skipped += 1
            return []
        data, bad = parse_pydict(m.group(3))
        if data is None:
            self.rejected["malformed"] += 1
            return []
        if bad:
            self.rejected["malformed_value"] += bad
        n = int(m.group(2))
        if m.group(1) == "step":
            self._train = n
        elif self._train is not None:
            n = self._train  # a rollout id: the records between train steps belong to the last
        return [Frame(n, data)]


class MilesParser(SlimeParser):
    format = MILES_FORMAT
    framework = "miles"
    summary = ("slime's records behind Miles's logging prefix (`[2026-08-21 18:09:36.123 "
               "actor_cell0_rank0]`)")
    # before slime: a Miles record is a slime record with Miles's logging prefix
    rules = (Rule(800, ": {", detect_miles,
                  "[2026-08-21 18:09:36.123 actor_cell0_rank0] utils.py:542 - step 7: {'a/b': 1}"),)
    hints = ()
