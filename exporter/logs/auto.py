"""One parser for a file of unknown or mixed content: each line goes to the parser of the
format `detect_format` finds in it, so a file that starts with hundreds of lines of Ray,
vLLM or NCCL noise, or interleaves several formats (Ray actors writing to one log), yields
the frames of every format it holds.

Lines that match no format are continuation lines (a hard-wrapped veRL record, the rows
of an open table) for the parsers that have a record open, and context (tqdm counters,
`Train step N/T done`) for the parsers already in use. After each `feed`, `formats` names
the format of each frame it returned, `frameworks` the vocabulary of each.
"""
from __future__ import annotations

from .base import Frame, Parser
from .detect import detect_format
from .registry import CONTEXT_FORMATS, FORMATS

FORMAT = "auto"
# formats whose last record step another format's frames take (Parser.steps_from)
_STEP_SOURCES = frozenset(p.steps_from for p in FORMATS.values() if p.steps_from)


class AutoParser(Parser):
    format = FORMAT
    framework = "auto"
    summary = ("`parse`, `doctor`: every line goes to the parser of the format found in it, "
               "anywhere in the file (hundreds of lines of Ray/vLLM/NCCL noise first, several "
               "formats interleaved); `serve`: the format of the first line that looks like "
               "metrics")

    def __init__(self, make):
        super().__init__()
        self._make = make
        self.parsers: dict[str, Parser] = {}
        self.counts: dict[str, int] = {}  # frames per format
        self.formats: list[str] = []
        self.frameworks: list[str] = []
        self._last = None  # the format of the last detected line: tried first
        self._held = None  # the last line no format claimed: context for a parser made next

    def _parser(self, fmt: str) -> Parser:
        p = self.parsers.get(fmt)
        if p is None:
            p = self.parsers[fmt] = self._make(fmt)
            if fmt in CONTEXT_FORMATS and self._held is not None:
                # the line just before a format's first record may be its context (the HF
                # bar history that says where the first dicts were written)
                p.feed(self._held)
                p.skipped -= 1
        self._held = None
        return p

    @property
    def pending(self) -> bool:
        for p in self.parsers.values():
            if p.pending:
                return True
        return False

    def feed(self, line: str) -> list[Frame]:
        self.formats, self.frameworks = [], []
        fmt = detect_format(line)
        out: list = []
        if fmt is None:
            used = False
            for name, p in self.parsers.items():
                if p.pending or name in CONTEXT_FORMATS:
                    self._take(name, p, p.feed(line), out)
                    used = True
            if not used:
                self.skipped += 1
                self._held = line
            return out
        for name, p in self.parsers.items():
            if name != fmt and p.pending:  # another format's line closes an open record
                self._take(name, p, p.feed(line), out)
        p = self._parser(fmt)
        if p.steps_from:
            p.last_step = getattr(self.parsers.get(p.steps_from), "last_step", None)
        self._take(fmt, p, p.feed(line), out)
        return out

    def _take(self, name, p, frames, out) -> None:
        for f in frames:
            out.append(f)
            self.formats.append(name)
            self.frameworks.append(p.framework)
            self.counts[name] = self.counts.get(name, 0) + 1
            if f.step is not None and name in _STEP_SOURCES:
                p.last_step = f.step

    def flush(self) -> list[Frame]:
        self.formats, self.frameworks = [], []
        out: list = []
        for name, p in self.parsers.items():
            self._take(name, p, p.flush(), out)
        return out

    def reset(self) -> None:
        for p in self.parsers.values():
            p.reset()

    @property
    def rejected(self):
        from collections import Counter
        total = Counter(self._rejected)
        for p in self.parsers.values():
            total.update(p.rejected)
        return total

    @rejected.setter
    def rejected(self, value):
        self._rejected = value
