"""veRL console lines (LocalLogger / concat_dict_to_str):

    step:1 - actor/entropy:0.52 - actor/pg_loss:np.float64(-0.00461) - training/global_step:1

optionally behind a Ray prefix `(main_task pid=123) ` or `(TaskRunner pid=1, ip=10.0.0.1) `
(or any log prefix ending just before `step:`). Values: repr of numbers, incl. `nan`,
`inf`, scientific notation and NumPy 2 reprs. Keys may contain `@`, `-`, `(1e-4)`.

Hard wraps (a terminal or collector splitting one record over several lines): the
record stays open until the next line. A line that continues it (no whitespace but
the ` - ` separators, and the joined record parses cleanly where they meet) is
appended; anything else closes the record, so a fragment is either rejoined or
skipped (counted as `fragment`), never attributed to another key or step.
Duplicate keys: the last value wins (counted as `duplicate_key`). A segment with no
value (`- actor/pg_loss:` at the end of a cut record) is dropped (`no_value`).
"""
from __future__ import annotations

import re

from .base import NOT_A_NUMBER, Frame, Parser, Rule, number

FORMAT = "verl_console"
FRAMEWORK = "verl"

# Detection: "step:N - key:value ..." on one line, or
# "step:N" alone (behind any prefix) with one " - key:value" per following line.
_DETECT = re.compile(r"(?:^|\s)step:-?\d+ - [^\s:]+:\S")
_DETECT_HEAD = re.compile(r"(?:^|\s)step:-?\d+\s*$")


def detect(line: str) -> bool:
    return "step:" in line and (_DETECT.search(line) is not None
                                or _DETECT_HEAD.search(line) is not None)

_SEP = " - "
# A continuation fragment: tokens without whitespace joined by " - ", possibly starting
# or ending inside a separator.
_FRAGMENT = re.compile(r"^(?: - |- | |-)?\S+(?: - \S+)*(?: -| - | )?$")
# What a number repr can look like before it is complete.
_NUMBER_PREFIX = re.compile(
    r"^(?:[-+]?(?:\d[\d.]*(?:[eE][-+]?\d*)?)?|[-+]?(?:n|na|i|in)|"
    r"(?:np|numpy|torch)(?:\.\w*(?:\([-+]?(?:\d[\d.]*(?:[eE][-+]?\d*)?|n|na|i|in|nan|inf)?)?)?)$")


# NumPy 2 scalar reprs: np.float64(0.5), np.int64(3), np.float32(...), ...
_NP_WRAPPER = re.compile(r"np\.[a-z]+[0-9]*\(")


def split_record(text: str, counts=None):
    """'step:N - k:v - ...' -> (step, data, bad) ; step None if the head is not 'step:N'.

    Fast path, all in C loops: drop NumPy 2 wrappers with one regex substitution (their
    closing parenthesis is the one just before a separator or at the end), turn every
    " - " into ":" and split once, so keys and values are the odd/even slices; dict(zip(
    keys, map(float, values))). It applies only when the shape is exact (one ':' per
    segment, every value a plain float); anything irregular takes the per-segment path."""
    orig = text
    if "np." in text:
        text = _NP_WRAPPER.sub("", text).replace(") - ", _SEP)
        if text[-1:] == ")":
            text = text[:-1]
    nseg = text.count(_SEP)
    flat = text.replace(_SEP, ":").split(":")
    if len(flat) == 2 * nseg + 2 and flat[1].isdigit():
        keys = flat[2::2]
        try:
            data = dict(zip(keys, map(float, flat[3::2])))
        except ValueError:
            pass
        else:
            if len(data) == nseg and "" not in data:
                return int(flat[1]), data, 0
            if counts is not None and len(data) != nseg:
                counts["duplicate_key"] += nseg - len(data)
            if "" not in data:
                return int(flat[1]), data, 0
    return _split_careful(orig.split(_SEP), counts)


def _split_careful(parts, counts):
    head = parts[0]
    try:
        step = int(head[5:])
    except ValueError:
        step = number(head[5:])
        if step is NOT_A_NUMBER or step is None:
            return None, None, 1
    data = {}
    bad = 0
    for seg in parts[1:]:
        k, sep, v = seg.rpartition(":")
        if not k:
            bad += 1
            if counts is not None:
                counts["malformed"] += 1
            continue
        try:
            val = float(v)
        except ValueError:
            if not v.strip():
                bad += 1
                if counts is not None:
                    counts["no_value"] += 1
                continue
            val = number(v)
            if val is NOT_A_NUMBER:
                bad += 1
                if counts is not None:
                    counts["malformed"] += 1
                continue
        if counts is not None and k in data:
            counts["duplicate_key"] += 1
        data[k] = val
    return step, data, bad


class VerlConsoleParser(Parser):
    format = FORMAT
    aliases = ("verl",)
    framework = FRAMEWORK
    summary = ("`step:N - key:value - ...`, with or without Ray prefixes `(TaskRunner pid=1, "
               "ip=...)`; `nan`/`inf`, NumPy 2 reprs `np.float64(x)`; hard-wrapped records "
               "rejoined; one metric per line (`step:N` alone, then ` - key:value` lines)")
    # first of all: its shape is the most specific, and the commonest line of a veRL log
    rules = (Rule(100, "step:", detect, "step:1 - actor/entropy:0.52 - actor/pg_loss:np.float64(0.1)"),)
    hints = ("step:", "step ", "actor/", "critic/", "timing_s/", "response_length/", "perf/",
             "val-core/", "training/global_step")

    def __init__(self):
        super().__init__()
        self._pending: str | None = None
        self._prefix: str | None = None  # Ray prefix of the open record, if any

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def _body(self, line: str):
        """(prefix, text from 'step:') when the line starts a record, else None."""
        if line.startswith("step:"):
            return "", line
        i = line.find("step:")
        if i <= 0:
            return None
        if line[i - 1] != " ":
            return None
        return line[:i], line[i:]

    def feed(self, line: str) -> list[Frame]:
        line = line.rstrip("\n")
        if "step:" in line:
            hit = self._body(line)
            if hit is not None and hit[1][5:6].lstrip("-")[:1].isdigit():
                out = self._finish() if self._pending is not None else []
                self._prefix, self._pending = hit
                return out
        if self._pending is not None:
            frag = line
            if self._prefix and frag.startswith(self._prefix):
                frag = frag[len(self._prefix):]  # wrapped before Ray added its prefix
            if frag and _FRAGMENT.match(frag) and self._joins(frag):
                self._pending += frag
                return []
            out = self._finish()
            if frag and _FRAGMENT.match(frag) and ":" in frag:
                self.rejected["fragment"] += 1
            else:
                self.skipped += 1
            return out
        self.skipped += 1
        return []

    def _joins(self, frag: str) -> bool:
        """Does appending frag keep the record well-formed where they meet?"""
        joined = self._pending + frag
        cut = self._pending.rfind(_SEP)
        tail = joined[cut + len(_SEP):] if cut >= 0 else joined[joined.find(_SEP) + 3:] \
            if _SEP in joined else ""
        if not tail:
            return False
        segs = tail.split(_SEP)
        for i, seg in enumerate(segs):
            k, sep, v = seg.rpartition(":")
            last = i == len(segs) - 1
            if not k:
                if last:  # the record may still be open ("actor/pg_lo"): allowed at the end
                    continue
                return False
            if v == "" and last:
                continue
            if number(v) is NOT_A_NUMBER:
                if last and _NUMBER_PREFIX.match(v):
                    continue  # cut inside the value ("np.float64(-0.0", "1e-"): still open
                return False
        return True

    def _finish(self) -> list[Frame]:
        text, self._pending, self._prefix = self._pending, None, None
        step, data, bad = split_record(text, self.rejected)
        if step is None or data is None:
            self.rejected["malformed"] += 1
            return []
        return [Frame(step, data)]

    def flush(self) -> list[Frame]:
        return self._finish() if self._pending is not None else []

    def reset(self) -> None:
        self._pending = self._prefix = None
