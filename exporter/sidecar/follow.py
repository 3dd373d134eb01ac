"""Follow a file like `tail -F`, and remember where we were.

A FileFollower owns one path. Each poll() reads what was appended and returns
events: ("line", text, start, end) for every complete line (a partial last line
waits for its newline), ("eof", None, pos, pos) when the old file of a rotation has
been read to its end (at offset pos), ("start", (gen, ino), off, off) when a file is opened (its lines
follow; gen and ino are the ones its lines belong to, even when the follower has moved
on to a newer file within the same poll), ("reset", (gen, ino), 0, 0) when the file
was truncated or replaced in place (veRL's JSONL is reopened with "wb" on every trainer
start). One poll reads at most about POLL_BUDGET bytes per file, so a backlog (a long
unread tail, a rotated file's rest) is delivered over several polls, never held in
memory at once.

Identity: device + inode, plus a content fingerprint (hash of the first up to 4 KiB,
taken when a file is opened, before its first byte is read) so a file truncated and
rewritten past our offset between two polls, or a new file that reuses an inode, is
still recognised as new. A checkpoint also fingerprints the 4 KiB read just before its
offset (`tail`): a rewrite that keeps the head (a trainer's identical start-up print)
but not what we had read is recognised too. Rotation (rename + new file at the
path): the old file is read to its end through the open descriptor, then the new
one from its start; the old file's lines carry its own offsets and generation. Deleted: keep reading the old descriptor, wait for a new file.
Missing (or missing directory): wait. Lines longer than max_line_bytes are skipped
without being buffered (counted as line_too_long). Bytes are decoded as UTF-8 with
replacement, so binary garbage becomes unparseable text that parsers skip.

State: checkpoint() gives {dev, ino, offset, fp_len, fp, gen, size, tail_at, tail_len,
tail}; a
follower built with that dict resumes at offset if the file is provably the same one
(its fingerprints cover what was read before offset and match), follows the rotated
file (found by inode in the same directory) from there if it was rotated while we were
down, exactly as if the rotation had happened while we were reading it, and starts
from 0 otherwise. A saved offset its fingerprint does not cover (a state rebuilt from
the spool, or one saved before the fingerprint was taken) cannot be proved: the file
is read from 0 with `unverified` set to that offset, and the reader drops what it
already exported (track.py), or, if the content turns out to differ, rewind()s.

Losses that cannot be avoided are counted: `unreadable` (a file replaced while we
were down, whose old file is gone), `lost` (a file truncated or rewritten while bytes
of it we had seen were still unread: a lagging sidecar).

StateFile writes all followers' states atomically (temp file, fsync, rename, fsync of
the directory).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os

from ..logs.read import MAX_LINE_BYTES

log = logging.getLogger("rl_exporter.sources")

FP_BYTES = 4096
RECENT_BYTES = 64 << 10   # the bytes read last, kept to fingerprint a checkpoint's tail
READ_CHUNK = 1 << 20
POLL_BUDGET = 8 << 20  # bytes read from one file per poll


def _fp(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


class FileFollower:
    def __init__(self, path: str, *, max_line_bytes: int = MAX_LINE_BYTES,
                 saved: dict | None = None):
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
        self._next_size = 0      # its size when last looked at, and its head's fingerprint
        self._next_fp = None
        self._next_gone = 0      # bytes of it seen and destroyed before we got to it
        self._recent = bytearray()  # the last bytes read, ending at offset
        self.unverified: int | None = None  # a saved offset that could not be proved
        self.destroyed = False   # the saved file's content was gone at restart (track.py rescues)
        self.saved = saved
        # counters
        self.bytes_read = 0
        self.rotations = 0
        self.truncations = 0
        self.too_long = 0
        self.unreadable = 0      # files known to have existed whose lines could not be read
        self.lost = 0            # files truncated or rewritten while bytes we saw were unread

    # ------------------------------------------------------------ state
    def checkpoint(self, offset: int | None = None) -> dict | None:
        if self.dev is None:
            return self.saved
        offset = self.offset if offset is None else offset
        out = {"dev": self.dev, "ino": self.ino, "offset": offset,
               "fp_len": self.fp_len, "fp": self.fp, "gen": self.gen, "size": self.size}
        tail = self._tail_before(offset)
        if tail is not None:  # (tail_at: the spool may move `offset` on, not the tail)
            out["tail_at"], out["tail_len"], out["tail"] = offset, len(tail), _fp(tail)
        return out

    def _tail_before(self, offset: int) -> bytes | None:
        """The up to FP_BYTES bytes before `offset` as they were read (from the bytes kept
        from the last reads; else from the file)."""
        n = min(FP_BYTES, offset)
        if n <= 0:
            return None
        start = self.offset - len(self._recent)
        if start <= offset - n and offset <= self.offset:
            i = offset - start
            return bytes(self._recent[i - n:i])
        if self.fd is None:
            return None
        try:
            data = os.pread(self.fd, n, offset - n)
        except OSError:
            return None
        return data if len(data) == n else None

    def pending_bytes(self, resume: int) -> bytes | None:
        """The bytes read from `resume` on (the record a reader still holds open, and a
        partial last line), when the kept bytes have them all."""
        if resume >= self.offset and not self._buf:
            return None
        start = self.offset - len(self._recent)
        if resume < start or resume > self.offset:
            return None
        data = bytes(self._recent[resume - start:]) + bytes(self._buf)
        return data if len(data) <= RECENT_BYTES else None

    def _keep_recent(self, data) -> None:
        """`data` was read up to `self.offset`, right after the bytes kept so far (the
        kept bytes are always the ones just before `offset`; a jump clears them)."""
        rec = self._recent
        if len(data) >= RECENT_BYTES:
            rec[:] = data[-RECENT_BYTES:]
        else:
            rec += data
            if len(rec) > RECENT_BYTES:
                del rec[:len(rec) - RECENT_BYTES]

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
        self._recent.clear()
        self._skipping = False
        self.offset, self.fp_len, self.fp = 0, 0, ""
        if saved:  # what the restart found (the track takes each once: a rotation may follow
            self.unverified, self.destroyed = None, False  # in the same poll)
            self.gen = int(saved.get("gen", 0))
            off = int(saved.get("offset", 0))
            fp_len, fp = int(saved.get("fp_len", 0)), saved.get("fp", "")
            same = (saved.get("dev"), saved.get("ino")) == (st.st_dev, st.st_ino)
            if same and st.st_size >= off and self._fingerprint_ok(fd, fp_len, fp) and \
                    self._tail_ok(fd, saved, off):
                if off > 0 and fp_len < min(off, FP_BYTES):
                    # the fingerprint does not cover what was read before off (a state
                    # rebuilt from the spool, or saved before the file's first poll): the
                    # file may have been rewritten in place. Read it from the start; what
                    # was exported already is recognised and dropped (track.py).
                    self.unverified = off
                    log.warning("%s: the saved position (byte %d) cannot be proved to be in "
                                "the same content: reading from the start, dropping what was "
                                "exported already", self.path, off)
                else:
                    self.offset, self.fp_len, self.fp = off, fp_len, fp
                    log.info("resuming %s at byte %d", self.path, self.offset)
            elif same:
                self.truncations += 1
                self.gen += 1
                self.destroyed = True
                log.info("%s was truncated or rewritten while we were down: reading from the start",
                         self.path)
                self._lost_while_down(saved, off)
            else:
                self.rotations += 1
                self.gen += 1
                self.unreadable += 1
                self.destroyed = True
                log.warning("%s was replaced while we were down and the old file is gone: "
                            "its unread tail (after byte %d) is lost", self.path, saved["offset"])
        # the identity of what is about to be read, before the first byte of it is: a
        # checkpoint taken after this poll can always prove where it was
        self._check_fp(fd, st.st_size)
        self.state = "following"
        os.lseek(fd, self.offset, os.SEEK_SET)
        events.append(("start", (self.gen, self.ino), self.offset, self.offset))

    def _lost_while_down(self, saved: dict, off: int) -> None:
        """The file was destroyed while we were down: the bytes the checkpoint had seen past
        its offset, beyond the open record it kept (track.py rescues that), are lost."""
        seen = saved.get("size")
        kept = saved.get("pending_bytes", 0) if saved.get("pending_at") == off else 0
        if isinstance(seen, int) and isinstance(kept, int) and seen > off + kept:
            self._lost(seen - off - kept, "truncated or rewritten while serve was down")

    @staticmethod
    def _tail_ok(fd, saved: dict, off: int) -> bool:
        """The bytes before the saved offset are the ones read then (when it says)."""
        n, at = saved.get("tail_len"), saved.get("tail_at", off)
        if not n:
            return True
        if not isinstance(n, int) or not isinstance(at, int) or n > at or at > off:
            return False
        try:
            data = os.pread(fd, n, at - n)
        except OSError:
            return False
        return len(data) == n and _fp(data) == saved.get("tail")

    def rewind(self, why: str) -> list:
        """Read the file again from its start, as a new generation (its content turned out
        not to be what was read before the restart)."""
        events: list = []
        self.unverified = None
        if self.fd is not None:
            self._truncated(events, why)
        return events

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
            self._next_changed()
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
        self._next, self._next_size, self._next_fp = fd, 0, None
        self._next_changed()

    def _next_changed(self) -> int:
        """Bytes of the held next file seen before and since destroyed (it was truncated or
        rewritten before we got to it); what it holds now is remembered for the next look."""
        try:
            size = os.fstat(self._next).st_size
            head = os.pread(self._next, min(FP_BYTES, size), 0)
        except OSError:
            return 0
        gone = 0
        if size < self._next_size:
            gone = self._next_size - size
        elif self._next_fp is not None and _fp(head[:self._next_fp[0]]) != self._next_fp[1]:
            gone = self._next_size
        if gone:
            self._next_gone += gone
        self._next_size, self._next_fp = size, (len(head), _fp(head))
        return gone

    def _verify(self, events) -> bool:
        """Before reading: is the open file still the one we were reading? True if it was
        truncated or rewritten in place (then it has been re-read from the start)."""
        try:
            st = os.fstat(self.fd)
        except OSError:
            return False
        seen, self.size = self.size, st.st_size
        if st.st_size < self.offset + len(self._buf) or not self._check_fp(self.fd, st.st_size):
            if seen > self.offset + len(self._buf):
                self._lost(seen - self.offset - len(self._buf), "truncated or rewritten")
            self._truncated(events, "truncated")
            return True
        return False

    def _lost(self, nbytes: int, how: str) -> None:
        """Bytes we saw in the file were destroyed before we could read them (we lagged)."""
        self.lost += 1
        log.warning("%s was %s while %d byte(s) of it were still unread: they are lost "
                    "(counted in rl_exporter_source_errors_total{kind=\"truncated_unread\"})",
                    self.path, how, nbytes)

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
                self._recent.clear()
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
                self._keep_recent(data)
                self._recent += b"\n"
            if len(buf) > self.max_line:  # an over-long line: stop buffering it
                self.offset += len(buf)
                buf.clear()
                self._recent.clear()
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
            events.append(("eof", None, self.offset, self.offset))
            os.close(fd)
            self.fd = None
            self.rotations += 1
            self.gen += 1
            self.dev = None
            log.info("%s was rotated or replaced: following the new file", self.path)
            if self._next is not None:
                self._next_changed()
            nfd, self._next = self._next, None  # a successor seen while we lagged comes first
            if nfd is not None:
                if self._next_gone:  # truncated while we were still on the old file
                    self.truncations += 1
                    self._lost(self._next_gone, "truncated or rewritten")
                self._next_size, self._next_fp, self._next_gone = 0, None, 0
            else:
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
        self._recent.clear()
        self._skipping = False
        self.offset = 0
        self.fp_len, self.fp = 0, ""
        try:
            self._check_fp(self.fd, os.fstat(self.fd).st_size)
        except OSError:
            pass
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
