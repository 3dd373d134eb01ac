"""Follow a file like `tail -F`, and remember where we were.

A FileFollower owns one path. Each poll() reads what was appended and returns
events: ("line", text, start, end) for every complete line (a partial last line
waits for its newline), ("eof", None, pos, pos) when the old file of a rotation has
been read to its end, ("start", (gen, ino), off, off) when a file is opened (its lines
follow; gen and ino are the ones its lines belong to, even when the follower has moved
on to a newer file within the same poll), ("reset", (gen, ino), 0, 0) when the file
was truncated or replaced in place (veRL's JSONL is reopened with "wb" on every trainer
start). One poll reads at most about POLL_BUDGET bytes per file, so a backlog (a long
unread tail, a rotated file's rest) is delivered over several polls, never held in
memory at once.

Identity: device + inode, plus a content fingerprint (hash of the first up to 4 KiB)
so a file truncated and rewritten past our offset between two polls, or a new file
that reuses an inode, is still recognised as new. Rotation (rename + new file at the
path): the old file is read to its end through the open descriptor, then the new
one from its start; the old file's lines carry its own offsets and generation. Deleted: keep reading the old descriptor, wait for a new file.
Missing (or missing directory): wait. Lines longer than max_line_bytes are skipped
without being buffered (counted as line_too_long). Bytes are decoded as UTF-8 with
replacement, so binary garbage becomes unparseable text that parsers skip.

State: checkpoint() gives {dev, ino, offset, fp_len, fp, gen}; a follower built with
that dict resumes at offset if the file is the same one, follows the rotated file
(found by inode in the same directory) from there if it was rotated while we were
down, exactly as if the rotation had happened while we were reading it, and starts
from 0 otherwise. StateFile writes all followers' states atomically
(temp file, fsync, rename, fsync of the directory).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os

log = logging.getLogger("rl_exporter.sources")

FP_BYTES = 4096
READ_CHUNK = 1 << 20
POLL_BUDGET = 8 << 20  # bytes read from one file per poll


def _fp(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


class FileFollower:
    def __init__(self, path: str, *, max_line_bytes: int = 1 << 20, saved: dict | None = None):
        self.path = path
        self.max_line = max_line_bytes
        self.fd: int | None = None
        self.dev = self.ino = None
        self.offset = 0          # start of the first byte not yet returned as a line
        self.fp_len = 0
        self.fp = ""
        self.gen = 0             # bumped at every truncation / new file
        self.state = "waiting"   # waiting | following | deleted
        self.size = 0
        self._buf = bytearray()
        self._skipping = False   # inside an over-long line
        self._next: int | None = None  # the path's next file, held open while we lag
        self.saved = saved
        # counters
        self.bytes_read = 0
        self.rotations = 0
        self.truncations = 0
        self.too_long = 0
        self.unreadable = 0      # files known to have existed whose lines could not be read

    # ------------------------------------------------------------ state
    def checkpoint(self, offset: int | None = None) -> dict | None:
        if self.dev is None:
            return self.saved
        return {"dev": self.dev, "ino": self.ino, "offset": self.offset if offset is None else offset,
                "fp_len": self.fp_len, "fp": self.fp, "gen": self.gen}

    @property
    def lag(self) -> int:
        return max(0, self.size - self.offset) if self.fd is not None else 0

    @property
    def unread(self) -> int:
        """Bytes on disk not read yet: the lag less a last line held for its newline."""
        return max(0, self.lag - len(self._buf))

    def take_partial(self) -> list:
        """The writer is done with the file (rotated away, or serve --exit-when-idle): its
        last line, cut without a newline, as a line event; an over-long one being skipped is
        counted instead."""
        events = []
        if self._skipping:
            self._skipping = False
            self.too_long += 1
        elif self._buf:
            raw = bytes(self._buf)
            events.append(("line", raw.decode("utf-8", "replace"), self.offset, self.offset + len(raw)))
            self.offset += len(raw)
            self._buf.clear()
        return events

    def close(self) -> None:
        for fd in (self.fd, self._next):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.fd = self._next = None

    # ------------------------------------------------------------ opening
    def _open(self):
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            log.warning("cannot open %s: %s", self.path, e)
            return None
        return fd

    def _fingerprint_ok(self, fd, fp_len, fp) -> bool:
        if not fp_len:
            return True
        try:
            data = os.pread(fd, fp_len, 0)
        except OSError:
            return False
        return len(data) == fp_len and _fp(data) == fp

    def _start(self, fd, events) -> None:
        saved, self.saved = self.saved, None
        if saved:
            st = os.fstat(fd)
            if (saved.get("dev"), saved.get("ino")) != (st.st_dev, st.st_ino):
                old = self._find_rotated(saved)
                if old is not None:
                    # follow the rotated file from the saved offset; at its end the
                    # rotation is noticed like a live one (_check), then the new file
                    os.close(fd)
                    fd = old
                    log.info("%s was rotated while we were down: finishing the old file first",
                             self.path)
        st = os.fstat(fd)
        self.fd, self.dev, self.ino, self.size = fd, st.st_dev, st.st_ino, st.st_size
        self._buf.clear()
        self._skipping = False
        self.offset, self.fp_len, self.fp = 0, 0, ""
        if saved:
            self.gen = int(saved.get("gen", 0))
            same = (saved.get("dev"), saved.get("ino")) == (st.st_dev, st.st_ino)
            if same and st.st_size >= saved["offset"] and \
                    self._fingerprint_ok(fd, saved.get("fp_len", 0), saved.get("fp", "")):
                self.offset, self.fp_len, self.fp = saved["offset"], saved.get("fp_len", 0), \
                    saved.get("fp", "")
                log.info("resuming %s at byte %d", self.path, self.offset)
            elif same:
                self.truncations += 1
                self.gen += 1
                log.info("%s was truncated or rewritten while we were down: reading from the start",
                         self.path)
            else:
                self.rotations += 1
                self.gen += 1
                self.unreadable += 1
                log.warning("%s was replaced while we were down and the old file is gone: "
                            "its unread tail (after byte %d) is lost", self.path, saved["offset"])
        self.state = "following"
        os.lseek(fd, self.offset, os.SEEK_SET)
        events.append(("start", (self.gen, self.ino), self.offset, self.offset))

    def _find_rotated(self, saved):
        d = os.path.dirname(self.path) or "."
        try:
            entries = list(os.scandir(d))
        except OSError:
            return None
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (saved.get("dev"), saved.get("ino")) and \
                    st.st_size >= saved["offset"]:
                try:
                    fd = os.open(e.path, os.O_RDONLY)
                except OSError:
                    return None
                if self._fingerprint_ok(fd, saved.get("fp_len", 0), saved.get("fp", "")):
                    return fd
                os.close(fd)
        return None

    # ------------------------------------------------------------ reading
    def poll(self, budget: int | None = None) -> list:
        budget = POLL_BUDGET if budget is None else budget
        events: list = []
        if self.fd is None:
            fd = self._open()
            if fd is None:
                self.state = "waiting"
                return events
            self._start(fd, events)
        if not self._verify(events):  # truncated/rewritten: never read stale offsets into it
            got = self._read(self.fd, events, budget)
            if got < budget:  # at EOF: look for rotation, deletion
                self._check(events, budget)
            else:
                self._watch()
        return events

    def _watch(self) -> None:
        """Behind (a backlog, a long line): hold the path's next file open as soon as it
        appears, so one rotated in and deleted again before we get to it is still read.
        Only a file that lives and dies within one poll stays invisible, as to tail -F."""
        if self._next is not None:
            return
        try:
            pst = os.stat(self.path)
        except OSError:
            return
        if (pst.st_dev, pst.st_ino) == (self.dev, self.ino):
            return
        fd = self._open()
        if fd is None:
            return
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (self.dev, self.ino):
            os.close(fd)
            return
        self._next = fd

    def _verify(self, events) -> bool:
        """Before reading: is the open file still the one we were reading? True if it was
        truncated or rewritten in place (then it has been re-read from the start)."""
        try:
            st = os.fstat(self.fd)
        except OSError:
            return False
        self.size = st.st_size
        if st.st_size < self.offset + len(self._buf) or not self._check_fp(self.fd, st.st_size):
            self._truncated(events, "truncated")
            return True
        return False

    def _read(self, fd, events, budget) -> int:
        total = 0
        buf = self._buf
        while total < budget:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError as e:
                log.warning("read %s: %s", self.path, e)
                break
            if not chunk:
                break
            total += len(chunk)
            self.bytes_read += len(chunk)
            start = 0
            if self._skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    self.offset += len(chunk)
                    continue
                self._skipping = False
                self.too_long += 1
                self.offset += nl + 1
                start = nl + 1
            last_nl = chunk.rfind(b"\n")
            if last_nl < start:
                buf += chunk[start:] if start else chunk
            else:
                data = bytes(buf) + chunk[start:last_nl] if buf else chunk[start:last_nl]
                buf.clear()
                buf += chunk[last_nl + 1:]
                pos = self.offset
                max_line = self.max_line
                for raw in data.split(b"\n"):
                    end = pos + len(raw) + 1
                    if len(raw) > max_line:
                        self.too_long += 1
                    else:
                        events.append(("line", raw.decode("utf-8", "replace"), pos, end))
                    pos = end
                self.offset = pos
            if len(buf) > self.max_line:  # an over-long line: stop buffering it
                self.offset += len(buf)
                buf.clear()
                self._skipping = True
        self.size = max(self.size, self.offset + len(buf))
        return total

    def _check(self, events, budget: int) -> None:
        fd = self.fd
        try:
            pst = os.stat(self.path)
            ident = (pst.st_dev, pst.st_ino)
        except (FileNotFoundError, NotADirectoryError):
            ident = None
        except OSError:
            return
        if ident is None and self._next is None:
            self.state = "deleted"
            return
        if ident != (self.dev, self.ino):
            # rotated or deleted+recreated: finish the old file, then switch; a long
            # rest of it is left for the next polls (bounded memory)
            if self._read(fd, events, budget) >= budget:
                return
            events += self.take_partial()  # the old file may end without a newline
            events.append(("eof", None, 0, 0))
            os.close(fd)
            self.fd = None
            self.rotations += 1
            self.gen += 1
            self.dev = None
            log.info("%s was rotated or replaced: following the new file", self.path)
            nfd, self._next = self._next, None  # a successor seen while we lagged comes first
            if nfd is None:
                nfd = self._open()
            if nfd is not None:
                self._start(nfd, events)
                self._read(self.fd, events, budget)
        else:
            self.state = "following"

    def _check_fp(self, fd, size) -> bool:
        want = min(FP_BYTES, size)
        if want <= 0:
            return True
        if self.fp_len >= want and self.fp_len == FP_BYTES:
            data = os.pread(fd, self.fp_len, 0)
            return _fp(data) == self.fp
        data = os.pread(fd, want, 0)
        if self.fp_len and _fp(data[:self.fp_len]) != self.fp:
            return False
        self.fp_len, self.fp = len(data), _fp(data)
        return True

    def _truncated(self, events, reason) -> None:
        self.truncations += 1
        self.gen += 1
        log.info("%s was %s: reading from the start", self.path, reason)
        events.append(("reset", (self.gen, self.ino), 0, 0))
        self._buf.clear()
        self._skipping = False
        self.offset = 0
        self.fp_len, self.fp = 0, ""
        os.lseek(self.fd, 0, os.SEEK_SET)
        self._read(self.fd, events, POLL_BUDGET)


class StateFile:
    """{key: state dict} persisted atomically as JSON."""

    def __init__(self, path: str):
        self.path = path
        self.problem: str | None = None  # why the last load() found no usable state

    def load(self) -> dict:
        """The saved states, {} if there are none. A file that exists but cannot be used
        (corrupt, truncated, empty, unknown layout) also gives {}, with `problem` set:
        the caller says what it does instead (resume from the spool, or from scratch)."""
        self.problem = None
        try:
            with open(self.path, encoding="utf-8") as f:
                obj = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            self.problem = f"unreadable ({e})"
            return {}
        if not isinstance(obj, dict) or obj.get("version") != 1 or \
                not isinstance(obj.get("sources", {}), dict):
            self.problem = "of an unknown layout"
            return {}
        return obj.get("sources", {})

    def save(self, sources: dict) -> None:
        d = os.path.dirname(os.path.abspath(self.path))
        tmp = f"{self.path}.tmp.{os.getpid()}"
        data = json.dumps({"version": 1, "sources": sources}, separators=(",", ":"),
                          allow_nan=False, default=str)
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError:
            try:  # a full disk: leave no partial temp file behind, keep the last good state
                os.unlink(tmp)
            except OSError:
                pass
            raise
        try:
            dfd = os.open(d, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
