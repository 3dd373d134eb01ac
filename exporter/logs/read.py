"""The one loop from a log's lines to its frames, used by `parse`, `doctor` and `backfill`
(and usable by the sidecar: `feed(line)` returns the frames that line completes).

    reader = Reader("auto")
    for line in fh:
        for r in reader.feed(line):     # r.line, r.frame, r.format, r.framework
            ...
    rest = reader.flush()

Per line: ANSI and carriage-return redraws cleaned, CRI partial lines rejoined, the line
handed to the format's parser (or to `auto`, which detects each line's format). Each frame
comes with the line number where its record opened (a veRL record wrapped over three
lines, an AReaL table) and the format and vocabulary that read it.

A document format (`trainer_state.json`) is read whole: `Reader.document(text)`;
`open_format(fmt, path, head)` (logs/detect.py) says which format a file is, by content
where `auto` (a JSON document with a `log_history` list is `hf_state`, whatever its name).
`make_parser(name)` is a format's parser, `auto`'s included.

Hostile lines cost one counted rejection each, never a neighbour and never a traceback:
a line longer than MAX_LINE_BYTES (`read_lines`, which never holds it whole; serve's
follower applies the same cap) is `rejected["line_too_long"]`, and a line a parser fails
on in any way is `rejected["malformed"]` (JSON errors, nesting too deep included, are
`bad_json` in the parsers themselves: logs/base.parse_json).

`starts` counts start-up banners seen (the HF Trainer's `***** Running training *****`,
a veRL config dump, a Megatron argument table): a second one after frames is a restart
inside the same file. Each Read carries the banners read since the reader's previous frame
(`Read.starts`), so the seam travels with the frame it belongs to (serve's pipelines count
them per run, exporter/core/worker.py).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from .auto import AutoParser
from .base import Frame, LineAssembler, Parser, clean
from .detect import open_format
from .registry import DOCUMENT_FORMATS, FORMATS, STARTUP_FORMATS, canonical_format

log = logging.getLogger("rl_exporter")

MAX_LINE_BYTES = 1 << 20  # the one line cap: serve (--max-line-bytes), doctor, backfill, baseline
_SKIP_CHUNK = 64 << 10
_BANNER = re.compile(r"\*{5} Running training \*{5}")


class Read(NamedTuple):
    line: int | None    # 1-based line where the record opened; None for a document
    frame: Frame
    format: str
    framework: str
    starts: int = 0     # start-up banners read since the previous frame (up to this one's line)


def make_parser(name: str) -> Parser:
    """A new parser for a format name or alias; `auto` detects each line's format."""
    name = canonical_format(name)
    if name == "auto":
        return AutoParser(make_parser)
    return FORMATS[name]()


class Reader:
    """`where=False`: frames carry the line that completed them, not the line their record
    opened on (saves a pending check per line when nobody shows line numbers)."""

    def __init__(self, fmt: str = "auto", where: bool = True):
        self.format = canonical_format(fmt)
        self.parser = make_parser(self.format)
        self.document_format = self.format in DOCUMENT_FORMATS
        self._asm = LineAssembler()
        self.lines = 0        # lines seen (fed or skipped)
        self._open = 0        # line where the record still being assembled opened
        self.starts = 0       # start-up banners seen
        self._told = 0        # of them, those already carried by a Read
        self._pending = False  # a record (or a CRI partial line) is open after the last line
        self._where = where

    @property
    def framework(self) -> str:
        return self.parser.framework

    @property
    def rejected(self):
        return self.parser.rejected

    @property
    def skipped(self) -> int:
        return self.parser.skipped

    @property
    def pending(self) -> bool:
        return self._pending if self._where else (self.parser.pending or self._asm.pending)

    def skip(self) -> None:
        """A line the caller leaves out (another run's spool record): counted, not read."""
        self.lines += 1

    def too_long(self) -> None:
        """A line over the line cap (read_lines gave None for it): counted, not read."""
        self.lines += 1
        self.parser.rejected["line_too_long"] += 1

    def feed(self, line: str) -> list[Read]:
        self.lines = n = self.lines + 1
        was_open = self._pending
        body = self._asm.feed(clean(line.rstrip("\r\n")))
        if body is None:
            self._pending = True
            return []
        try:
            got = self.parser.feed(body)
        except Exception as e:  # a line no parser should have failed on: that line only
            self._malformed(e)
            got = []
        if "*****" in body and _BANNER.search(body):
            self.starts += 1
        if not self._where:
            return self._tag(got, n) if got else []
        out = self._tag(got, self._open if was_open else n) if got else []
        self._pending = pending = self.parser.pending or self._asm.pending
        if pending and (got or not was_open):
            self._open = n
        return out

    def read(self, lines: Iterable[str]) -> Iterator[Read]:
        """Every frame of an iterable of lines, then what the end of input flushes."""
        for line in lines:
            yield from self.feed(line)
        yield from self.flush()

    def flush(self) -> list[Read]:
        """Frames still being assembled (the end of input, or a pause in a followed file)."""
        out = self._tag(self.parser.flush(), self._open or self.lines)
        self._pending = self.parser.pending or self._asm.pending
        return out

    def drop_partial(self) -> None:
        """Forget a partial line held for rejoining (the file it came from ended or was
        rewritten); the parser keeps what it has."""
        self._asm = LineAssembler()
        self._pending = self.parser.pending

    def document(self, text: str) -> list[Read]:
        try:
            return self._tag(self.parser.feed_document(text), None)
        except Exception as e:
            self._malformed(e)
            return []

    def _malformed(self, e: Exception) -> None:
        rej = self.parser.rejected
        rej["malformed"] += 1
        if rej["malformed"] == 1:
            log.warning("rl-exporter: a %s line could not be parsed (%s: %s); it is skipped and "
                        "counted as rejected{reason=\"malformed\"} (said once)", self.format,
                        type(e).__name__, str(e)[:200])

    def _tag(self, frames, line) -> list[Read]:
        if not frames:
            return []
        p = self.parser
        fmts = getattr(p, "formats", None)
        if p.format == "auto" and fmts is not None and len(fmts) == len(frames):
            rows = list(zip(frames, fmts, p.frameworks))
        else:
            rows = [(f, p.format, p.framework) for f in frames]
        self.starts += sum(1 for _, fm, _ in rows if fm in STARTUP_FORMATS)
        new, self._told = self.starts - self._told, self.starts
        return [Read(line, f, fm, fw, new if i == 0 else 0) for i, (f, fm, fw) in enumerate(rows)]


def read_lines(fh, max_line: int = MAX_LINE_BYTES):
    """The lines of a binary file, each decoded as UTF-8 with replacement (its newline kept);
    a line longer than max_line bytes (without its newline) comes as None, and is skipped
    without ever being held whole: memory stays bounded by the cap, whatever the file."""
    readline = fh.readline
    while True:
        raw = readline(max_line + 1)
        if not raw:
            return
        if len(raw) > max_line and raw[-1:] != b"\n":
            raw = None
            while True:  # the rest of the over-long line
                rest = readline(_SKIP_CHUNK)
                if not rest or rest[-1:] == b"\n":
                    break
            yield None
            continue
        yield raw.decode("utf-8", "replace")


def read_text(text: str, fmt: str = "auto", path: str | None = None) -> tuple[Reader, list[Read]]:
    """Every frame of a whole text (a file read at once, stdin)."""
    reader = Reader(open_format(fmt, path, text[:4096]))
    if reader.document_format:
        return reader, reader.document(text)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return reader, list(reader.read(lines))
