"""slime and Miles console lines: a logging prefix, then `{tag}{kind} {n}: {dict}`.

    [2026-08-21 17:14:19] model.py:918 - step 7: {'train/loss': -0.0031, 'train/step': 7}
    [2026-08-21 18:09:36.123 actor_cell0_rank0] log_utils.py:542 - step 7: {...}   (Miles)
    [2026-08-21 17:15:02] rollout.py:120 - perf 3: {'perf/rollout_time': 41.2, ...}

kind is one of step, rollout, perf, eval, multi_turn, passrate; n is the train step
(step) or the rollout id (others); the frame's step is n. Whatever precedes the kind (a Ray
actor prefix, another logger's format) is ignored.
"""
from __future__ import annotations

import re

from .base import Frame, Parser, parse_pydict

FORMAT = "slime"
MILES_FORMAT = "miles"
_DETECT = re.compile(r"(?:^|[\s\]:-])(?:step|rollout|perf|eval|multi_turn|passrate) \d+: \{['\"]")
_MILES_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ [^\]\s]+\]")


def detect(line: str) -> str | None:
    """"slime" or "miles" (Miles's logging prefix) for a `step N: {...}` record line."""
    if _DETECT.search(line) is None:
        return None
    return MILES_FORMAT if _MILES_PREFIX.search(line) else FORMAT

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

    def __init__(self):
        super().__init__()
        self._open: list[str] | None = None

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
        return [Frame(int(m.group(2)), data)]


class MilesParser(SlimeParser):
    format = MILES_FORMAT
    framework = "miles"
