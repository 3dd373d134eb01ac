"""What every log parser shares: the Frame type, line cleaning, value parsing.

A parser turns text lines into frames: `Frame(step, data)` where step is an int/
float or None (the parser could not tell) and data maps the trainer's raw key to
a float, int, str, or None (a null: NaN written as null by orjson). NaN and
+/-Inf are kept as floats: they are data, not errors.

Parsers are stateful (a veRL line hard-wrapped by a terminal, an AReaL table
spanning several lines): `feed(line)` returns the frames that line completes,
`flush()` the frame still being assembled (end of input, or the follower saw no
new data for a while), and `pending` says whether a record is open, so the
follower never checkpoints past its first line. Rejected lines are counted in
`rejected[reason]`; lines that are simply not metrics are counted in `skipped`.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple


class Frame(NamedTuple):
    step: int | float | None
    data: dict


# ANSI CSI/OSC escape sequences (colour codes, cursor moves, hyperlinks).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# A Ray worker's line prefix: `(MegatronTrainRayActor pid=1) ` (slime, Miles, OpenRLHF under Ray).
RAY_PREFIX = r"\((?:[\w.:-]+ )?pid=\d+[^)]*\)\s*"
# CRI container log line (Kubernetes /var/log/pods): "<RFC3339> stdout|stderr F|P <msg>".
_CRI = re.compile(r"^\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:?\d\d) (?:stdout|stderr) ([FP]) ")


def clean(line: str) -> str:
    """Strip ANSI escapes and carriage-return redraws (keep what a terminal would show last,
    but never drop a redraw that carries metrics: tqdm bars are redrawn with CR). Leading
    NUL bytes go too: `copytruncate` under a writer without O_APPEND leaves a hole of NULs
    before its next line."""
    if line[:1] == "\x00":
        line = line.lstrip("\x00")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        parts = [p for p in line.split("\r") if p.strip()]
        line = "".join(parts[-1:]) if len(parts) <= 1 else _pick_redraw(parts)
    return line


def _pick_redraw(parts: list[str]) -> str:
    # The last redraw is what the terminal shows; a dict written by tqdm.write() between bar
    # redraws is a separate segment: prefer the last segment that holds a dict or step record.
    for p in reversed(parts):
        if "{" in p or "step:" in p or "│" in p:
            return p
    if len(parts) > 2 and "=" not in parts[-1] and _written_between(parts):
        # a bar history in which tqdm.write cleared the bar (the same redraw on both sides
        # of the blank): the HF parser reads where each dict was written from it
        return " ".join(p.strip() for p in parts)
    return parts[-1]


def _written_between(parts: list[str]) -> bool:
    prev = None
    for p in parts:
        p = p.strip()
        if p == prev and "/" in p and "[" in p:
            return True
        prev = p
    return False


class LineAssembler:
    """Rejoins CRI partial lines (tag P) so parsers see whole records; other lines pass."""

    __slots__ = ("_parts",)

    def __init__(self):
        self._parts: list[str] | None = None

    def feed(self, line: str) -> str | None:
        if line[:1].isdigit():
            m = _CRI.match(line)
            if m:
                body = line[m.end():]
                if m.group(1) == "P":
                    if self._parts is None:
                        self._parts = []
                    self._parts.append(body)
                    return None
                if self._parts is not None:
                    self._parts.append(body)
                    body = "".join(self._parts)
                    self._parts = None
                return body
        if self._parts is not None:  # a P run not closed by F: deliver what we have, then this line
            self._parts = None
        return line

    @property
    def pending(self) -> bool:
        return self._parts is not None


# ------------------------------------------------------------------ values
_WRAPPED = re.compile(r"^(?:np|numpy|torch)?\.?\w*\((.*)\)$")
_SPECIAL = {"nan": math.nan, "NaN": math.nan, "+nan": math.nan, "-nan": math.nan,
            "inf": math.inf, "+inf": math.inf, "Infinity": math.inf, "+Infinity": math.inf,
            "-inf": -math.inf, "-Infinity": -math.inf, "None": None, "null": None,
            "True": 1, "False": 0, "true": 1, "false": 0}


def number(tok: str):
    """A printed number -> float/int; NumPy/torch reprs unwrapped; None when not a number."""
    try:
        return float(tok)  # handles 1e-06, -0.0, nan, inf, Infinity
    except ValueError:
        pass
    tok = tok.strip()
    if tok in _SPECIAL:
        return _SPECIAL[tok]
    m = _WRAPPED.match(tok)
    if m:  # np.float64(0.12), np.int64(3), tensor(0.5), tensor(0.5, device='cuda:0')
        inner = m.group(1).split(",", 1)[0].strip()
        if inner != tok:
            return number(inner)
    return _NOT_A_NUMBER


# A string that is a number and nothing else ("0.001621", "-1e-05", "nan"): TRL on
# transformers 5.x prints every logged value quoted. "1_000", " 1", "0x1f", "1/94" stay text.
_NUMERIC = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:nan|inf|infinity)$",
                      re.IGNORECASE)


def numeric(v):
    """A value as a parser keeps it: a string that is fully a number becomes that number."""
    if isinstance(v, str) and _NUMERIC.match(v):
        return float(v)
    return v


class _NotANumber:
    __slots__ = ()

    def __repr__(self):
        return "<not a number>"


_NOT_A_NUMBER = _NotANumber()
NOT_A_NUMBER = _NOT_A_NUMBER


# ------------------------------------------------------------------ Python dict reprs
# One "'key': value" pair of a dict repr. Values: quoted strings, wrapped reprs
# (np.float64(...)), or a bare token up to the next comma/closing brace.
_PAIR = re.compile(
    r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*:\s*"""
    r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[\w.]+\([^()]*\)|[^,{}\[\]()]+?)\s*(?:,|$)""")


def brackets(text: str, start: int = 0):
    """(index, character) of every bracket from `start` on that is not inside a quoted string
    (a backslash escapes the next character inside quotes)."""
    quote, i, n = "", start, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "{[()]}":
            yield i, c
        i += 1


def dict_end(text: str, start: int) -> int:
    """Index of the brace that closes the dict opening at `start` (quotes and nesting kept
    apart), or -1 when it does not close on this line. A dict printed inside another record
    (a Kaggle notebook log's JSON "data" string) is followed by that record's own braces."""
    depth = 0
    for i, c in brackets(text, start):
        depth += 1 if c in "{[(" else -1
        if depth == 0:
            return i if c == "}" else -1
    return -1


def parse_pydict(text: str) -> tuple[dict | None, int]:
    """Parse a flat Python dict repr ("{'loss': 0.1, 'eval_x': nan, 'name': 'a'}").

    Returns (data, bad) where bad counts pairs that could not be read (nested containers,
    unknown reprs); None if the text is not a dict at all."""
    text = text.strip()
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        return None, 0
    body = text[1:-1].strip()
    data: dict = {}
    if not body:
        return data, 0
    pos, n, bad = 0, len(body), 0
    match = _PAIR.match
    while pos < n:
        m = match(body, pos)
        if m is None or m.end() == pos:
            # skip one malformed item (e.g. a nested list) up to the next top-level comma
            bad += 1
            depth, i = 0, pos
            while i < n:
                c = body[i]
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    depth -= 1
                elif c == "," and depth <= 0:
                    break
                i += 1
            pos = i + 1
            continue
        key = m.group(1) if m.group(1) is not None else m.group(2)
        if "\\" in key:
            key = key.encode().decode("unicode_escape", "replace")
        raw = m.group(3)
        if raw[:1] in "'\"":
            val = numeric(raw[1:-1])
        else:
            val = number(raw)
            if val is _NOT_A_NUMBER:
                bad += 1
                pos = m.end()
                continue
        data[key] = val
        pos = m.end()
    return data, bad


class Rule(NamedTuple):
    """One shape of a format's lines, for detection. Every format's rules are tried in one
    order, lowest `priority` first (logs/registry.py), on lines holding `gate`: a plain
    substring that `test` implies, so most lines cost a substring check per rule. `example`
    is a line of that shape: tests/unit/logs/test_registry.py checks that this rule, and no
    earlier one, claims it."""
    priority: int
    gate: str
    test: Callable[[str], bool]
    example: str


class Parser:
    """Base class: subclasses implement feed(); multi-line ones also flush()/pending.

    A parser class describes its format; the registry (logs/registry.py) finds every one in
    the package's modules and derives detection, the CLI's format lists and the docs from it."""

    format = "?"
    framework = "auto"
    aliases: tuple = ()    # other names users may pass to --format
    document = False       # read as one document (feed_document), not line by line
    summary = ""           # what it reads, for docs/sidecar.md's table (markdown)
    rules: tuple = ()      # Rule(priority, gate, test): how `auto` knows its lines
    hints: tuple = ()      # words its metric lines are made of: a near miss shows the line
    auxiliary = False      # a side print (validation dict, W&B summary, config): names a
                           # file's format only when nothing else is there
    startup = False        # its frames are a start-up print (a configuration), a restart
    context = False        # reads state from lines of no format (HF's bars, AReaL's steps)
    steps_from = ""        # in `auto`: a format whose last record step its frames may take

    def __init__(self):
        self.rejected: Counter = Counter()
        self.skipped = 0

    def feed(self, line: str) -> list[Frame]:  # pragma: no cover - abstract
        raise NotImplementedError

    def flush(self) -> list[Frame]:
        return []

    @property
    def pending(self) -> bool:
        return False

    def reset(self) -> None:
        """The file was truncated or replaced: forget any half-assembled record."""
        self.flush()

    def json_record(self, line: str) -> dict | None:
        """A JSONL line's object when it has a `data` object; else None, counted
        (blank lines are not counted; other text is skipped; bad JSON and shape rejected)."""
        s = line.strip()
        if not s.startswith("{"):
            if s:
                self.skipped += 1
            return None
        try:
            obj = parse_json(s)
        except ValueError:
            self.rejected["bad_json"] += 1
            return None
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
            self.rejected["schema"] += 1
            return None
        return obj


def parse_json(text: str):
    """json.loads for a line (or document) of a log: every way hostile text fails to parse,
    bad JSON or nesting deeper than the interpreter can recurse, is one ValueError. The one
    JSON parse error path of the parsers (a RecursionError used to abort the sidecar's
    poll, losing the lines after it, and doctor with a traceback)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def step_of(v):
    """A step value from a key/number; None unless a finite number."""
    if v is None or isinstance(v, str):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    if f != f or f in (math.inf, -math.inf):
        return None
    return int(f) if f == int(f) else f
