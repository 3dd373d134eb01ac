"""veRL's validation dicts, printed (pprint) by the trainer around the step records:

    (main_task pid=54569) "Initial validation metrics: {'test_score/openai/gsm8k': 0.00076}"
    (TaskRunner pid=1) "Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': 0.92}"

Initial metrics are the ones veRL logs at step 0 (before training); final ones repeat the
last step's validation, so they take the last step seen in a `step:N` record when the
same parser saw one, else none. A pprint wrapped over two lines is not rejoined (the
step record carries the same values).
"""
from __future__ import annotations

import re

from .base import Frame, Parser, parse_pydict

FORMAT = "verl_validation"
FRAMEWORK = "verl"

_DICT = re.compile(r"(Initial|Final) validation metrics: (\{.*\})")


class VerlValidationParser(Parser):
    format = FORMAT
    framework = FRAMEWORK

    def __init__(self):
        super().__init__()
        self.last_step = None

    def feed(self, line: str) -> list[Frame]:
        m = _DICT.search(line) if "validation metrics: {" in line else None
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
