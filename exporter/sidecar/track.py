"""One followed file of a source: its follower, its parser, and where a restart resumes.

All offset bookkeeping of the sidecar lives here, under one invariant:

    `resume` is the offset of the first byte whose line has not yet been turned into
    frames that reached an exporter, and it is never past the first line of a record
    that the parser or the line assembler still holds open.

So a restart from `resume` re-reads exactly the records whose frames were not applied,
and none that were. Every event method below returns the frames it completed (as the
reader's `Read`s: each with the start-up banners read before it); the caller applies them
before the next event, and a checkpoint is only ever taken between polls, when that has
happened.
"""
from __future__ import annotations

import logging
import time

from ..logs import detect_line
from ..logs.base import clean
from ..logs.read import Reader
from .follow import FileFollower

log = logging.getLogger("rl_exporter.sidecar")


class FileTrack:
    def __init__(self, path: str, fmt: str, saved: dict | None, max_line: int):
        saved = saved or {}
        self.path = path
        self.follower = FileFollower(path, max_line_bytes=max_line, saved=saved.get("file"))
        self.format = fmt if fmt != "auto" else saved.get("format", "auto")
        # the one lines -> frames loop (logs/read.py), once the file's format is known
        self.reader = Reader(self.format, where=False) if self.format != "auto" else None
        self.resume = self.follower.saved["offset"] if self.follower.saved else 0
        # generation and inode of the file the lines being applied come from (the
        # follower may already be on a newer file): the spool's tags, see Source._apply
        fs = self.follower.saved or {}
        self.gen, self.ino = int(fs.get("gen", 0)), fs.get("ino")
        self.last_data = time.monotonic()

    @property
    def parser(self):
        return self.reader.parser if self.reader is not None else None

    @property
    def open(self) -> bool:
        """A record is being assembled (its first line is at `resume`)."""
        return self.reader is not None and self.reader.pending

    def checkpoint(self) -> dict:
        return {"file": self.follower.checkpoint(self.resume), "format": self.format}

    # ------------------------------------------------------------ follower events
    def on_start(self, offset: int, ident: tuple | None = None) -> None:
        """A file was (re)opened at offset: nothing before it is pending. ident: the
        (generation, inode) its lines belong to."""
        self.resume = offset
        if ident is not None:
            self.gen, self.ino = ident

    def on_line(self, text: str, start: int, end: int) -> list:
        """A complete line [start, end). end == 0: a line of a file rotated away while we
        were down, whose offsets belong to that file: it never moves `resume`."""
        if self.reader is None:
            fmt = detect_line(clean(text))
            if fmt is None:  # noise before the first metric line
                if end:
                    self.resume = end
                return []
            log.info("%s: detected format %s", self.path, fmt)
            self.format, self.reader = fmt, Reader(fmt, where=False)
        was_open = self.open
        frames = self.reader.feed(text)
        if end == 0:
            return frames
        if not self.open:
            self.resume = end              # everything up to here is applied
        elif frames or not was_open:
            self.resume = start            # this line opened the record now pending
        return frames                      # (a continuation line leaves `resume` alone)

    def on_idle(self) -> list:
        """No new bytes for a while: the open record is complete as it is."""
        frames = self._flush()
        self.resume = self.follower.offset
        return frames

    def _flush(self) -> list:
        """The open record as it is, and no partial line kept."""
        if self.reader is None:
            return []
        frames = self.reader.flush()
        self.reader.drop_partial()
        return frames

    def on_eof(self) -> list:
        """The rotated-away file is read to its end: its last record is complete. The new
        file's `start` event sets `resume` next."""
        return self._flush()

    def on_reset(self, ident: tuple | None = None) -> list:
        """Truncated or rewritten in place: everything restarts at byte 0. The record
        still open is complete as it is (its file ended, as at a rotation's eof): its
        frames are returned before the new generation begins."""
        frames = self._flush()
        if self.reader is not None:
            self.reader.parser.reset()
        if ident is not None:
            self.gen, self.ino = ident
        self.resume = 0
        return frames


class DocTrack:
    """A document source file (trainer_state.json): re-read whole when it changes."""

    def __init__(self, path: str):
        self.path = path
        self.sig = None
        self.pending_sig = None
        self.state = "waiting"
