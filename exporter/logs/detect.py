"""Which format a line, a sample of lines or a file belongs to, decided on content wherever
it sits in the file, from the rules each format's parser declares (logs/registry.py).

`detect_format(line)` answers the format name or None (not a metric line of any known
format). `detect_line(line)` is the same without the auxiliary formats (veRL's validation
dict prints, W&B's end-of-run summary, start-up config prints): it picks the one parser a
follower locks onto, and a veRL log prints its initial validation dict before its first step
record.

Both are called on every line of an auto-detected file, so each rule is a plain substring
check (its gate) before its regular expression, and since most lines of a log hold no `{`
while most formats' records are dicts, a line without one is tried only on the rules whose
gate has none. Rules are tried most specific first (each format's `rules` say before which
format they must come and why): an ms-swift dict is also a Python dict, a slime `step N:
{...}` line also holds a dict, so the generic HF dict rule comes late.

`detect(lines, path)` is a sample's format (a document format by name or content, else the
most frequent per-line match); `open_format(fmt, path, head)` the format to read a file with;
`near_miss(lines)` is for when no line matched: the format whose words a line shares most,
with that line, so `parse` can say what almost matched instead of nothing.
"""
from __future__ import annotations

import os
import re

from .base import clean
from .registry import AUXILIARY, DOCUMENT_FORMATS, FORMATS, HINTS, RULES, canonical_format


# the rules a line without "{" can pass (the others' gates hold one)
_PLAIN_RULES = tuple(r for r in RULES if "{" not in r[0])


def detect_format(line: str) -> str | None:
    for gate, test, fmt in (RULES if "{" in line else _PLAIN_RULES):
        if gate in line and test(line):
            return fmt
    return None


def detect_line(line: str) -> str | None:
    fmt = detect_format(line)
    return None if fmt in AUXILIARY else fmt


def open_format(fmt: str, path: str | None = None, head: str | None = None) -> str:
    """The format to read a file with: `fmt` itself, or where auto, a document format its
    name or content shows (else "auto")."""
    fmt = canonical_format(fmt)
    if fmt != "auto":
        return fmt
    for name in DOCUMENT_FORMATS:
        cls = FORMATS[name]
        if path and os.path.basename(path) in getattr(cls, "file_names", ()):
            return name
        if head is not None and cls.detect_document(head):
            return name
    return fmt


def detect(lines, path: str | None = None) -> str | None:
    """The format of a sample of lines (and the file name): a document format by name or
    content, else the most frequent per-line match (the more specific format on a tie); None
    if nothing looks like metrics yet."""
    lines = list(lines)
    doc = open_format("auto", path, "".join(lines[:200]))
    if doc != "auto":
        return doc
    votes: dict[str, int] = {}
    aux: dict[str, int] = {}  # auxiliary prints: the format only when nothing else is there
    for line in lines:
        name = detect_format(clean(line))
        if name:
            box = aux if name in AUXILIARY else votes
            box[name] = box.get(name, 0) + 1
    votes = votes or aux
    if not votes:
        return None
    order = list(FORMATS)
    return max(votes, key=lambda n: (votes[n], -order.index(n)))


# ------------------------------------------------------------------ near misses
_NUMBER = re.compile(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?")


def near_miss(lines) -> tuple[str, int, str] | None:
    """(format, 1-based line number, line) of the line most like a metric line of some
    format (the words of each format's `hints`), or None when no line shares two of any
    format's words and holds a number."""
    best = None
    for n, line in enumerate(lines, 1):
        if len(line) > 4000:
            line = line[:4000]
        if not _NUMBER.search(line):
            continue
        for fmt, words in HINTS:
            score = sum(1 for w in words if w in line)
            if score >= 2 and (best is None or score > best[0]):
                best = (score, fmt, n, line)
    return None if best is None else best[1:]
