"""AReaL StatsLogger output: a `Train step N/T done.` line, then one or more tables
printed by `tabulate(rows, floatfmt=".4e", tablefmt="fancy_grid")` with key/value column
pairs:

    (AReaL) 20260822-09:03:26.123 StatsLogger INFO: Epoch 1/3 Step 5/100 Train step 5/300 done.
    ╒══════════════════════════╤════════════╤═════ ...
    │ ppo_actor/advantages/avg │ 1.2340e-03 │ ppo_actor/update/actor_loss/avg │ -4.6100e-03 │
    ├──────────────────────────┼────────────┼───── ...
    ╘══════════════════════════╧════════════╧═════ ...

Each table is one frame; its step is AReaL's backend step (the 1-based `Train step N`
minus one, as AReaL logs to W&B/TensorBoard). ASCII `grid`/`github` tables (`|`, `+---+`)
are read too; a table ends at its bottom border or the first line that is not part of it.
"""
from __future__ import annotations

import re

from .base import NOT_A_NUMBER, Frame, Parser, number

FORMAT = "areal"
FRAMEWORK = "areal"

_TRAIN_STEP = re.compile(r"Train step (\d+)/\d+ done")
_PREFIX = re.compile(r"^\(AReaL\) \S+ \S+ \w+: ?")
_BORDER_CHARS = set("╒╞╘├╤╪╧┼═─╕╡╛┤+-|:= ")


class ArealParser(Parser):
    format = FORMAT
    framework = FRAMEWORK

    def __init__(self):
        super().__init__()
        self.step = None
        self._rows: dict | None = None

    @property
    def pending(self) -> bool:
        return self._rows is not None

    def feed(self, line: str) -> list[Frame]:
        s = line
        if s.startswith("(AReaL)"):
            s = _PREFIX.sub("", s, count=1)
        s = s.strip()
        if s[:1] in ("│", "|") and s[-1:] in ("│", "|"):
            if self._rows is None:
                self._rows = {}
            self._row(s)
            return []
        if s and s[0] in "╒╞╘├+" and set(s) <= _BORDER_CHARS:
            if s[0] == "╒" and self._rows is not None:  # a new table without a closing border
                out = self.flush()
                self._rows = {}
                return out
            if self._rows is None:
                self._rows = {}
            if s[0] == "╘":
                return self.flush()
            return []
        out = self.flush() if self._rows is not None else []
        m = _TRAIN_STEP.search(s)
        if m:
            self.step = int(m.group(1)) - 1
        else:
            self.skipped += 1
        return out

    def _row(self, s: str) -> None:
        cells = [c.strip() for c in re.split(r"[│|]", s)[1:-1]]
        for i in range(0, len(cells) - 1, 2):
            k, v = cells[i], cells[i + 1]
            if not k and not v:
                continue
            if not k or set(k) <= set("-=:"):
                continue  # github-style separator row
            val = number(v)
            if val is NOT_A_NUMBER:
                if v:
                    self.rejected["malformed_value"] += 1
                continue
            self._rows[k] = val

    def flush(self) -> list[Frame]:
        rows, self._rows = self._rows, None
        if not rows:
            return []
        return [Frame(self.step, rows)]

    def reset(self) -> None:
        self._rows = None
