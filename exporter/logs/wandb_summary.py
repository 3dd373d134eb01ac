"""W&B's end-of-run console block, printed by every trainer that logs to wandb:

    (TaskRunner pid=132393) wandb: Run history:
    (TaskRunner pid=132393) wandb:   actor/entropy █▆▆▄▄▃▂▂▂▂▂▁▁
    (TaskRunner pid=132393) wandb:
    (TaskRunner pid=132393) wandb: Run summary:
    (TaskRunner pid=132393) wandb:   actor/entropy 0.06955
    (TaskRunner pid=132393) wandb: training/global_step 105

"Run history" rows are sparklines (no numbers) and are skipped; each run of consecutive
"key number" rows is one frame: the run's last value of every key. Its step is the
value of a step key when the summary has one (`training/global_step`, `train/global_step`,
`global_step`, `_step`, `step`), else unknown. Keys belong to whichever framework wrote
them, so they resolve with the automatic vocabulary.
"""
from __future__ import annotations

import re

from .base import NOT_A_NUMBER, Frame, Parser, Rule, number, step_of

FORMAT = "wandb"
FRAMEWORK = "auto"
_STEP_KEYS = ("training/global_step", "train/global_step", "global_step", "_step", "step")

ROW = re.compile(r"(?:^|\s)wandb:\s+([^\s:][^\s]*)\s+(\S+)\s*$")


def detect(line: str) -> bool:
    """A `wandb: key value` summary row (not a "Run history" sparkline)."""
    if "wandb:" not in line:
        return False
    m = ROW.search(line)
    return m is not None and number(m.group(2)) is not NOT_A_NUMBER


class WandbSummaryParser(Parser):
    format = FORMAT
    framework = FRAMEWORK
    auxiliary = True  # every trainer that logs to wandb prints it at the end of its own log
    summary = ("W&B's end-of-run `wandb: Run summary:` rows (`wandb: actor/entropy 0.41`); "
               "`Run history` sparklines skipped; its keys are any trainer's (auto vocabulary)")
    # after the dict formats: a summary row has no other format's shape
    rules = (Rule(1200, "wandb:", detect, "(TaskRunner pid=13239) wandb:   actor/entropy 0.06955"),)
    hints = ("wandb:", "Run summary", "Run history")

    def __init__(self):
        super().__init__()
        self._rows: dict | None = None

    @property
    def pending(self) -> bool:
        return self._rows is not None

    def feed(self, line: str) -> list[Frame]:
        m = ROW.search(line) if "wandb:" in line else None
        if m is not None:
            val = number(m.group(2))
            if val is not NOT_A_NUMBER and val is not None:
                if self._rows is None:
                    self._rows = {}
                self._rows[m.group(1)] = val
                return []
        self.skipped += 1
        return self.flush()

    def flush(self) -> list[Frame]:
        rows, self._rows = self._rows, None
        if not rows:
            return []
        step = None
        for k in _STEP_KEYS:
            if k in rows:
                step = step_of(rows[k])
                break
        return [Frame(step, rows)]

    def reset(self) -> None:
        self._rows = None
