"""One followed file of a source: its follower, its parser, and where a restart resumes.

All offset bookkeeping of the sidecar lives here, under one invariant:

    `resume` is the offset of the first byte whose line has not yet been turned into
    frames that reached an exporter, and it is never past the first line of a record
    that the parser or the line assembler still holds open.

So a restart from `resume` re-reads exactly the records whose frames were not applied,
and none that were. A restart whose saved offset cannot be proved (the follower's
`unverified`) re-reads the file from its start without applying anything up to the
spool's last record of it; reaching that record unchanged proves the content is the one
exported, and reading goes on from there. A different record there means the file was
rewritten while we were down: `rewind` asks for it to be read again, as new. Every event
method below returns the frames it completed (as the reader's `Read`s: each with the
start-up banners read before it); the caller applies them before the next event, and a
checkpoint is only ever taken between polls, when that has happened.
"""
from __future__ import annotations

import logging
import time

from .. import spool
from ..logs import detect_line
from ..logs.base import clean
from ..logs.read import Reader
from .follow import FileFollower

log = logging.getLogger("rl_exporter.sidecar")


class FileTrack:
    def __init__(self, path: str, fmt: str, saved: dict | None, max_line: int,
                 spool_last: tuple | None = None):
        saved = saved or {}
        self.path = path
        self._saved = saved.get("file")   # what a checkpoint says while it is being verified
        self.spool_last = spool_last      # (gen, off, record): the spool's last frame of it
        self.verify: tuple | None = None  # (offset, record) an unverified re-read must reach
        self.rewind = False               # the content differs: read it again, as new
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
        if self.verify is not None:  # a crash meanwhile verifies again
            return {"file": self._saved, "format": self.format}
        f = self.follower
        fs = f.checkpoint(self.resume)
        if f.dev is not None:
            # the record still open (read, not yet exported): should the trainer truncate
            # or replace the file while we are down, a restart exports it from here
            pend = f.pending_bytes(self.resume)
            if pend:
                fs["pending"], fs["pending_at"] = pend.decode("utf-8", "replace"), self.resume
                fs["pending_bytes"] = len(pend)
        return {"file": fs, "format": self.format}

    def rescue(self) -> list:
        """At a restart that found the saved file truncated, rewritten or gone: the frames of
        the record that was open then (its bytes kept in the state file), as they were."""
        f, saved = self.follower, self._saved or {}
        if not f.destroyed:
            return []
        f.destroyed = False
        text = saved.get("pending")
        if not isinstance(text, str) or saved.get("pending_at") != saved.get("offset"):
            return []  # none open, or the spool shows it was exported (it is past it)
        frames = []
        for line in text.split("\n"):
            if line:
                frames += self.on_line(line, 0, 0)  # end 0: never moves `resume`
        frames += self._flush()
        if self.reader is not None:
            self.reader.parser.reset()
        log.info("%s: the record open at byte %d when serve stopped was destroyed meanwhile: "
                 "exported from the state file (%d frame(s))", self.path, saved["offset"],
                 len(frames))
        return frames

    # ------------------------------------------------------------ follower events
    def on_start(self, offset: int, ident: tuple | None = None) -> None:
        """A file was (re)opened at offset: nothing before it is pending. ident: the
        (generation, inode) its lines belong to."""
        self.resume = offset
        if ident is not None:
            self.gen, self.ino = ident
        unverified, self.follower.unverified = self.follower.unverified, None  # taken once
        if unverified is not None:
            sl = self.spool_last
            if sl is not None and sl[0] == self.gen and sl[2].get("ino", self.ino) == self.ino \
                    and 0 < sl[1] <= unverified:
                self.verify = (sl[1], sl[2])
            else:
                log.warning("%s: no spool record to recognise what was exported before the "
                            "restart: the file is exported again from its start", self.path)

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
        if self.verify is not None:        # (a continuation line leaves `resume` alone)
            return self._verified(frames)
        return frames

    def _verified(self, frames: list) -> list:
        """While an unverified re-read is below the spool's last record: nothing is applied
        (the spool holds it). At that record: the same frame proves the content; anything
        else means the file was rewritten, and it is read again from its start, as new."""
        target, rec = self.verify
        if self.resume < target or (self.resume == target and not frames):
            return []
        if self.resume == target and _same(frames[-1], rec):
            log.info("%s: the content up to byte %d is the one exported before the restart: "
                     "reading on from there", self.path, target)
        else:
            log.warning("%s: the file was rewritten while we were down (byte %d no longer ends "
                        "the record exported last): reading it from the start, as new",
                        self.path, target)
            self.rewind = True
        self.verify = None
        return []

    def on_rewind(self) -> None:
        """Before the follower reads the file again: the verification pass's record and
        partial line are dropped."""
        self.rewind = False
        self.verify = None
        if self.reader is not None:
            self.reader.parser.reset()
            self.reader.drop_partial()

    def on_idle(self) -> list:
        """No new bytes for a while: the open record is complete as it is."""
        frames = self._flush()
        self.resume = self.follower.offset
        if self.verify is not None:
            return self._verified(frames)
        return frames

    def _flush(self) -> list:
        """The open record as it is, and no partial line kept."""
        if self.reader is None:
            return []
        frames = self.reader.flush()
        self.reader.drop_partial()
        return frames

    def on_eof(self, end: int = 0) -> list:
        """The rotated-away file is read to its end (`end`): its last record is complete.
        The new file's `start` event sets `resume` next. Still being verified: that record
        ends the verification (the file cannot be read again: at worst it is exported
        twice, never lost)."""
        frames = self._flush()
        if self.verify is not None:
            target, rec = self.verify
            self.verify = None
            if frames and end == target and _same(frames[-1], rec):
                return []
        return frames

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


def _same(read, rec: dict) -> bool:
    """A frame read again (a reader's Read) is the spool's record of it."""
    frame = read.frame
    return rec.get("step") == frame.step and \
        rec.get("data") == {k: spool.encode_value(v) for k, v in frame.data.items()}


class DocTrack:
    """A document source file (trainer_state.json): re-read whole when it changes."""

    def __init__(self, path: str):
        self.path = path
        self.sig = None
        self.pending_sig = None
        self.state = "waiting"
