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

Tables of earlier releases (the realhf master worker) arrive behind Ray prefixes and with
colour codes whose ESC byte was lost on the way (`[36m(MasterWorker pid=11559) [0m │ ...`),
sometimes with a row split over two lines or cut at either end. So a table line is any line
holding `│`; its key/value pairs are read wherever a key-like cell (no spaces, not a number)
is followed by a number cell, whatever precedes the first `│` or shifts the columns.
"""
from __future__ import annotations

import re

from .base import NOT_A_NUMBER, Frame, Parser, Rule, number

FORMAT = "areal"
FRAMEWORK = "areal"
# stats keys always have a "/" (ppo_actor/..., timeperf/...): a rich-printed table of
# completions between TRL's dicts (│ prompt │ completion │ 1.0 │) is not a stats table
_DETECT = re.compile(r"^\(AReaL\) |Train step \d+/\d+ done|[╒╘╞]═"
                     r"|│\s*[^\s│/]+/[^\s│]*\s*│\s*[-+]?(?:\d|nan|inf)")
_DETECT_ASCII = re.compile(r"^\s*\|\s*[^\s|/]+/[^\s|]*\s*\|\s*[-+]?(?:\d|nan|inf)[^|]*\|")


def detect(line: str) -> bool:
    """A fancy_grid stats table line, the StatsLogger prefix or `Train step N/T done`."""
    return ("│" in line or "═" in line or "AReaL" in line or "Train step" in line) \
        and _DETECT.search(line) is not None


def detect_ascii(line: str) -> bool:
    """An ASCII grid table row (tried last: any `| a/b | 1 |` row looks like it)."""
    return line[:1] in " |" and "|" in line and _DETECT_ASCII.match(line) is not None

_TRAIN_STEP = re.compile(r"Train step (\d+)/\d+ done")
_PREFIX = re.compile(r"^\(AReaL\) \S+ \S+ \w+: ?")
_MAX_GAP = 200
_BORDER_CHARS = set("╒╞╘├╤╪╧┼═─╕╡╛┤+-|:= ")


class ArealParser(Parser):
    format = FORMAT
    framework = FRAMEWORK
    context = True  # a `Train step N/T done.` line before a table gives its step
    summary = ("StatsLogger `Train step N/T done.` + `fancy_grid` stats tables (step = N-1, "
               "AReaL's backend step); earlier releases' master-worker tables behind "
               "`(MasterWorker pid=...)` prefixes, colour-code residue, rows split or shifted")
    rules = (
        # after the dict formats: a table cell may hold a dict-looking value (no gate: four
        # characters mark its lines, detect() checks them)
        Rule(1300, "", detect, "│ ppo_actor/advantages/avg │ 1.2340e-03 │ ppo_actor/lr │ 1e-06 │"),
        # last of all: any `| a/b | 1 |` row looks like an ASCII table row
        Rule(1500, "|", detect_ascii, "| ppo_actor/advantages/avg | 1.2340e-03 |"),
    )
    hints = ("ppo_actor/", "│", "StatsLogger", "Train step")

    def __init__(self):
        super().__init__()
        self.step = None
        self._rows: dict | None = None
        self._fancy = False  # the open table began with a fancy_grid top border
        self._gap = 0        # non-table lines seen inside it

    @property
    def pending(self) -> bool:
        return self._rows is not None

    def feed(self, line: str) -> list[Frame]:
        s = line
        if s.startswith("(AReaL)"):
            s = _PREFIX.sub("", s, count=1)
        s = s.strip()
        if "╒" in s:  # a new table: the previous one ended without its bottom border
            out = self.flush()
            self._rows = {}
            self._fancy = True
            return out
        if "╘" in s:
            if "│" in s and self._rows is not None:
                self._row(s)
            return self.flush()
        if "│" in s or (s[:1] == "|" and s[-1:] == "|"):
            if self._rows is None:
                self._rows = {}
            self._row(s)
            return []
        if s and s[0] in "╞├+" and set(s) <= _BORDER_CHARS:
            if self._rows is None:
                self._rows = {}
            return []
        m = _TRAIN_STEP.search(s)
        if self._fancy and m is None and self._gap < _MAX_GAP:
            # other Ray actors' lines interleave inside a bordered table: it ends at its border
            self._gap += 1
            self.skipped += 1
            return []
        out = self.flush() if self._rows is not None else []
        if m:
            self.step = int(m.group(1)) - 1
        else:
            self.skipped += 1
        return out

    def _row(self, s: str) -> None:
        cells = [c.strip() for c in s.split("│" if "│" in s else "|")]
        i, n = 0, len(cells) - 1
        while i < n:
            k, v = cells[i], cells[i + 1]
            if _is_key(k):
                val = number(v)
                if val is not NOT_A_NUMBER:
                    self._rows[k] = val
                    i += 2
                    continue
            i += 1

    def flush(self) -> list[Frame]:
        rows, self._rows = self._rows, None
        self._fancy, self._gap = False, 0
        if not rows:
            return []
        return [Frame(self.step, rows)]

    def reset(self) -> None:
        self._rows = None
        self._fancy, self._gap = False, 0


def _is_key(cell: str) -> bool:
    """A stats key: one token with a "/" (ppo_actor/..., timeperf/...), not a number, not a
    run of border characters; so a rich table of completions is never read as stats."""
    if not cell or " " in cell or "/" not in cell or set(cell) <= _BORDER_CHARS:
        return False
    return number(cell) is NOT_A_NUMBER
