"""One source of `rl-exporter serve`: a file, a glob of files or a document (trainer_state.json)
in one format, followed, parsed and handed to its sidecar's pipelines, with its own health
(what it is reading, how far behind, and what it could not read)."""
from __future__ import annotations

import fnmatch
import glob as globmod
import logging
import os
import time
from collections import Counter

from .. import spool
from ..core.lifecycle import TOTAL_PARAMETER, event_frame
from ..logs import DOCUMENT_FORMATS, canonical_format, detect_line
from ..logs.base import clean
from ..logs.ending import Endings, trainer_state
from ..logs.read import Reader
from .track import DocTrack, FileTrack

log = logging.getLogger("rl_exporter.sidecar")

_GLOB_CHARS = set("*?[")
_NO_FRAME_LINES = 200         # lines without a frame, some shaped like another format: say so
_NO_FRAME_ANY = 100_000       # lines without a frame at all (not even one before a restart)


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


class SourceSpec:
    """`FORMAT:PATH[,run=RUN]` (PATH may be a glob)."""

    def __init__(self, text: str, default_run: str):
        spec, run = text, default_run
        if ",run=" in spec:
            spec, run = spec.rsplit(",run=", 1)
        fmt, sep, path = spec.partition(":")
        if not sep or not path:
            raise ValueError(f"--source {text!r}: expected FORMAT:PATH (e.g. verl_console:/logs/train.log)")
        self.format = canonical_format(fmt)
        self.pattern = os.path.expanduser(path)
        self.run = run
        self.name = path  # the `source` label

    def __repr__(self):
        return f"{self.format}:{self.pattern}"


class Source:
    def __init__(self, spec: SourceSpec, sidecar, saved: dict):
        self.spec = spec
        self.sidecar = sidecar
        self.saved = saved or {}
        self.tracks: dict[str, FileTrack] = {}
        self.docs: dict[str, DocTrack] = {}
        self.doc_reader = self.doc_parser = None
        if spec.format in DOCUMENT_FORMATS:
            self.doc_reader = Reader(spec.format)
            self.doc_parser = self.doc_reader.parser
            self.doc_parser.restore(self.saved.get("doc", {}))
        self.is_glob = bool(_GLOB_CHARS & set(spec.pattern))
        self.lines = 0
        self.frames = 0
        self.rejected: Counter = Counter()
        self.errors: Counter = Counter()   # rl_exporter_source_errors_total, by kind
        self._looks_like: Counter = Counter()  # formats detected in lines while no frame came
        self.last_frame_ts = float("nan")
        # The last frame applied, kept in the state file so a restart shows it at once.
        self.last: dict | None = self.saved.get("last")
        # How each file ends (exporter/logs/ending.py): the end applied to the run (kept in
        # the state file, as the total steps the log printed), per file
        self.endings: dict[str, Endings] = {}
        self.ended: dict | None = self.saved.get("ended")  # the last end applied
        self.total = self.saved.get("total")                # the total steps the log printed
        self._applied: dict[str, tuple] = {}
        self._next_glob = 0.0
        self._said: set = set()  # what this source has told the log it waits for, once each
        self.spool_last: dict = {}  # path -> (gen, off, record): the spool's last frame of it

    # ------------------------------------------------------------ files
    def paths(self) -> list[str]:
        if not self.is_glob:
            return [self.spec.pattern]
        now = time.monotonic()
        if now >= self._next_glob:
            self._next_glob = now + 1.0
            self._glob = sorted(globmod.glob(self.spec.pattern))
        return self._glob

    def poll(self, now: float) -> bool:
        """One pass over this source's files. True if anything was read."""
        busy = False
        if self.doc_parser is not None:
            for p in self.paths():
                busy |= self._poll_doc(p)
            return busy
        files = self.saved.get("files", {})
        paths = self.paths()
        if not paths:
            self._say_once("nomatch", "source %s: waiting for a file matching %s", self.spec.name,
                           self.spec.pattern)
        for p in paths:
            t = self.tracks.get(p)
            if t is None:
                t = self.tracks[p] = FileTrack(p, self.spec.format, files.get(p),
                                            self.sidecar.max_line_bytes, self.spool_last.get(p))
            busy |= self._poll_file(t, now)
        if self.is_glob and len(self.tracks) > len(paths):
            busy |= self._retire(set(paths), now)
        return busy

    def _retire(self, listed: set, now: float) -> bool:
        """Files of a glob that no longer match (deleted, renamed away): read what their
        open descriptor still holds, then close them and drop their tracks, so deleted
        logs neither hold a descriptor nor their disk space. One that vanished before it
        could be opened is counted (file_unreadable)."""
        busy = False
        for p, t in list(self.tracks.items()):
            if p in listed:
                continue
            f = t.follower
            if f.fd is None:  # never opened: whatever it held was not read
                if f.state == "waiting" and not f.bytes_read:
                    self.errors["file_unreadable"] += 1
                    self.sidecar.log_error("file_unreadable",
                                        f"source {self.spec.name}: {p} was gone before it could "
                                        "be read; counted in rl_exporter_source_errors_total"
                                        "{kind=\"file_unreadable\"}")
                del self.tracks[p]
                continue
            if self._poll_file(t, now):
                busy = True
            elif f.state == "deleted" and not f.lag and not t.open:
                f.close()
                del self.tracks[p]
        return busy

    def _poll_file(self, t: FileTrack, now: float) -> bool:
        f = t.follower
        too_long, read = f.too_long, f.bytes_read
        events = f.poll()
        self.rejected["line_too_long"] += f.too_long - too_long
        if not events:
            if f.bytes_read != read:  # inside a long line: busy, not idle (no pause between polls)
                t.last_data = now
                return True
            if f.fd is None:
                self._say_once(("waiting", t.path), "source %s: waiting for %s to appear",
                               self.spec.name, t.path)
            elif t.reader is None and self.lines and not self.frames and not f.unread:
                # read to its end and no line in a format: start-up output so far, or a format
                # serve does not read (doctor and parse say the same of a finished file)
                self._say_once(("unknown", t.path), "source %s: %d lines read from %s, none "
                               "in a known metrics format so far (start-up output, or a format "
                               "serve does not read: `rl-exporter parse %s` shows each line)",
                               self.spec.name, self.lines, t.path, t.path)
            if t.open and now - t.last_data >= self.sidecar.idle_flush:
                self._apply(t, t.on_idle(), t.resume)
                if t.rewind:
                    self._events(t, self._rewind(t))
            self._ending(t, now)
            return False
        t.last_data = now
        self._events(t, events)
        self._ending(t, now)
        return True

    def _rewind(self, t: FileTrack) -> list:
        t.on_rewind()
        f = t.follower
        if f.ino != t.ino:  # already on the next file (a rotation in the same poll)
            f.lost += 1
            log.warning("%s: the rotated file was rewritten while serve was down and cannot be "
                        "read again: what it held before the mismatch is lost (counted in "
                        "rl_exporter_source_errors_total{kind=\"truncated_unread\"})", t.path)
            return []
        self.endings[t.path] = Endings()  # read again from the start: its ending too
        return f.rewind("rewritten while serve was down")

    def _events(self, t: FileTrack, events: list) -> None:
        ends = self.endings.get(t.path)
        if ends is None:
            ends = self.endings[t.path] = Endings()
        for kind, text, start, end in events:
            if kind == "line":
                self.lines += 1
                ends.line(text)
                frames = t.on_line(text, start, end)
                for r in frames:
                    ends.record(r.frame.step, r.frame.data)
                self._apply(t, frames, t.resume if end else None)
                if t.rewind:  # the rest of this poll's lines are of the content verified
                    return self._events(t, self._rewind(t))
                if not self.frames and "no_frames" not in self.errors:
                    self._no_frames_yet(text)
            elif kind == "eof":
                self._apply(t, t.on_eof(start), None)
                self.sidecar.checkpoint_soon()
            elif kind == "start":
                if ("waiting", t.path) in self._said and ("appeared", t.path) not in self._said:
                    self._said.add(("appeared", t.path))
                    log.info("source %s: %s appeared: following it", self.spec.name, t.path)
                # the record open before a restart, whose bytes were destroyed while down
                self._apply(t, t.rescue(), None)
                t.on_start(start, text)
                # The file's identity is on disk before its first frame is spooled: a crash
                # after a spool write can then always resume past it (apply_spool_offsets).
                self.sidecar.checkpoint()
            elif kind == "reset":
                # the record left open by the old content; no resume offset (its bytes
                # are gone), so the spool record is not a resume point either
                self._apply(t, t.on_reset(text), None)
                self.endings[t.path] = ends = Endings()  # a new log: a new ending
                self._applied.pop(t.path, None)
                self.sidecar.checkpoint_soon()

    # ------------------------------------------------------------ the run's end
    def _ending(self, t: FileTrack, now: float) -> None:
        """The total steps the log printed, and how it ends, to the run: a finished marker or
        a sure crash at once, a bare traceback once the file has been quiet for
        sidecar.crash_quiet seconds (a trainer may log one and go on). Each end once; the run
        reads as live again when its log goes on with new steps (core/lifecycle.py)."""
        ends = self.endings.get(t.path)
        if ends is None or t.reader is None:
            return
        if ends.total is not None and ends.total != self.total:
            self.total = ends.total
            served = self.sidecar.run_for(self.spec.run, t.parser.framework, self)
            if served is not None:
                self._set_total(served)
        e = ends.ending
        if e is None:
            return
        key = (e.state, e.line)
        if self._applied.get(t.path) == key:
            return
        if not e.sure and now - t.last_data < self.sidecar.crash_quiet:
            return
        served = self.sidecar.run_for(self.spec.run, t.parser.framework, self)
        if served is None:
            return
        self._applied[t.path] = key
        ts = time.time()
        self.ended = {"event": e.state, "step": e.step, "exception": e.exception,
                      "message": e.message, "ts": ts, "framework": t.parser.framework}
        served.pipeline.log(event_frame(e.state, e.exception, e.message), step=e.step, ts=ts)
        sc = self.sidecar
        if sc.spool_out is not None:
            sc.write_spool_event(self, self.spec.run, t.parser.framework, self.ended)
        log.info("source %s: %s: the run %s%s (%s)", self.spec.name, t.path, e.state,
                 f" ({e.exception}: {e.message})" if e.exception else "",
                 (e.marker or "")[:160])
        sc.checkpoint_soon()

    def _set_total(self, served) -> None:
        served.store.set("rl_config_value", float(self.total), {"parameter": TOTAL_PARAMETER})

    def _no_frames_yet(self, text: str) -> None:
        """Many lines, not one frame: say once that the format is likely wrong (with the
        format the lines look like), and count it (errors{kind="no_frames"})."""
        if self.spec.format != "auto" and sum(self._looks_like.values()) < 20:
            fmt = detect_line(clean(text))
            if fmt is not None and fmt != self.spec.format:
                self._looks_like[fmt] += 1
        # start-up noise (vLLM, NCCL) is not a wrong format: lines shaped like another
        # format are, and so is a very long log without a single frame, ever
        hinted = sum(self._looks_like.values()) >= 20 and self.lines >= _NO_FRAME_LINES
        if not hinted and (self.lines < _NO_FRAME_ANY or self.last is not None):
            return
        self.errors["no_frames"] += 1
        hint = ""
        if self._looks_like:
            hint = f"; they look like {self._looks_like.most_common(1)[0][0]} (or try auto)"
        log.warning("source %s: %d lines read and not one %s record%s (counted in "
                    "rl_exporter_source_errors_total{kind=\"no_frames\"}; logged once)",
                    self.spec.name, self.lines, self.spec.format, hint)

    def _apply(self, t, reads, offset) -> None:
        """Hand the frames read (logs/read.py `Read`s) to the run's pipeline, each with the
        start-up banners read before it (one after training is a restart)."""
        if not reads:
            return
        parser = t.parser if isinstance(t, FileTrack) else self.doc_parser
        served = self.sidecar.run_for(self.spec.run, parser.framework, self)
        if served is None:
            self.rejected["run_conflict"] += len(reads)
            return
        sc = self.sidecar
        for r in reads:
            fr = r.frame
            if sc.spool_out is not None:
                extra = {"ts": time.time(), "run": self.spec.run, "framework": parser.framework}
                if isinstance(t, FileTrack):
                    # the file these lines came from, not the one the follower is on now
                    extra.update(src=t.path, off=offset, gen=t.gen, ino=t.ino)
                sc.write_spool(self, fr, extra)
            served.pipeline.log(fr.data, step=fr.step, starts=r.starts)
            self.frames += 1
            sc.backpressure(served)
        self.last_frame_ts = now = time.time()
        fr = reads[-1].frame
        self.last = {"framework": parser.framework, "step": fr.step, "ts": now,
                     "data": {k: spool.encode_value(v) for k, v in fr.data.items()}}

    def restore_last(self) -> None:
        """Put the last frame exported before a restart back on /metrics (with its own
        time, so a run that hung before the restart still looks stalled); it is not
        counted again and not re-read: the resume offset is past it."""
        last = self.last
        if not last:
            return
        try:
            data = spool.decode_data(last["data"])
            step, ts, fw = last.get("step"), float(last["ts"]), last["framework"]
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("source %s: the saved last frame is unreadable; not restored",
                        self.spec.name)
            self.last = None
            return
        served = self.sidecar.run_for(self.spec.run, fw, self) if data is not None else None
        if served is None:
            return
        served.pipeline.restore(data, step, ts)
        self.last_frame_ts = ts
        log.info("source %s: restored the last frame (step %s) from the state file",
                 self.spec.name, step)
        if isinstance(self.total, (int, float)):
            self._set_total(served)
        ended = self.ended
        if isinstance(ended, dict) and ended.get("event") in ("finished", "crashed"):
            try:
                served.pipeline.restore(event_frame(ended["event"], ended.get("exception"),
                                                    ended.get("message")),
                                        ended.get("step"), float(ended["ts"]))
            except (TypeError, ValueError, KeyError):
                self.ended = None

    def _poll_doc(self, path: str) -> bool:
        d = self.docs.get(path)
        if d is None:
            d = self.docs[path] = DocTrack(path)
        try:
            st = os.stat(path)
        except OSError:
            d.state = "waiting"
            return False
        d.state = "following"
        sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if sig == d.sig:
            return False
        if sig != d.pending_sig:  # changed since last look: wait until it stops changing
            d.pending_sig = sig
            return True
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            return False
        d.sig = sig
        before = sum(self.doc_parser.rejected.values())
        reads = self.doc_reader.document(text)
        if sum(self.doc_parser.rejected.values()) > before:
            d.sig = None  # maybe still being written; retry when it changes
        self.lines += text.count("\n")
        self._apply(d, reads, None)
        if reads:
            self.sidecar.checkpoint_soon()
        self._document_ending(path, text)
        return True

    def _document_ending(self, path: str, text: str) -> None:
        """trainer_state.json: its max_steps is the total, and it says itself whether the
        loop stopped (exporter/logs/ending.py trainer_state)."""
        import json
        try:
            e, total = trainer_state(json.loads(text))
        except ValueError:
            return
        served = self.sidecar.run_for(self.spec.run, self.doc_parser.framework, self)
        if served is None:
            return
        if total is not None and total != self.total:
            self.total = total
            self._set_total(served)
        if e is None or self._applied.get(path) == (e.state, e.step):
            return
        self._applied[path] = (e.state, e.step)
        self.ended = {"event": e.state, "step": e.step, "exception": None, "message": None,
                      "ts": time.time(), "framework": self.doc_parser.framework}
        served.pipeline.log(event_frame(e.state), step=e.step, ts=self.ended["ts"])
        if self.sidecar.spool_out is not None:
            self.sidecar.write_spool_event(self, self.spec.run, self.doc_parser.framework,
                                           self.ended)
        log.info("source %s: %s: the run finished (%s)", self.spec.name, path, e.marker)

    def _say_once(self, what, message: str, *args) -> None:
        if what not in self._said:
            self._said.add(what)
            log.info(message, *args)

    def finish(self) -> None:
        """The writers are done: a last line cut without its newline is a line, and the
        records still open at the end of the files are complete as they are; the files end
        as they are (a bare traceback at the end is a crash: nothing more will come)."""
        for t in self.tracks.values():
            ends = self.endings.setdefault(t.path, Endings())
            for _, text, start, end in t.follower.take_partial():
                self.lines += 1
                ends.line(text)
                frames = t.on_line(text, start, end)
                for r in frames:
                    ends.record(r.frame.step, r.frame.data)
                self._apply(t, frames, t.resume)
            if t.open:
                frames = t.on_idle()
                for r in frames:
                    ends.record(r.frame.step, r.frame.data)
                self._apply(t, frames, t.resume)
            self._ending(t, float("inf"))

    def nothing_read(self) -> str | None:
        """Why this source never gave a frame (none before a restart either), or None if it
        did: what `serve --exit-when-idle` says before exiting non-zero."""
        if self.frames or self.last is not None:
            return None
        name = f"source {self.spec.format}:{self.spec.pattern}"
        if self.doc_parser is not None:
            if not any(d.state == "following" for d in self.docs.values()):
                return f"{name}: no such file" if not self.is_glob else f"{name}: no file matches"
            return f"{name}: no {self.spec.format} record in it"
        if not self.tracks:
            return f"{name}: no file matches"
        if all(t.follower.dev is None and not t.follower.bytes_read for t in self.tracks.values()):
            return f"{name}: no such file" if not self.is_glob else f"{name}: no file matches"
        if not any(t.follower.bytes_read for t in self.tracks.values()):
            return f"{name}: the file is empty"
        if all(t.reader is None for t in self.tracks.values()):
            return (f"{name}: {_lines(self.lines)}, none in a known metrics format "
                    "(`rl-exporter parse FILE` shows each line)")
        fmt = "/".join(sorted({t.format for t in self.tracks.values() if t.reader is not None}))
        return f"{name}: {_lines(self.lines)} and not one {fmt} record"

    # ------------------------------------------------------------ state
    def checkpoint(self) -> dict:
        out: dict = {"files": {p: t.checkpoint() for p, t in self.tracks.items()
                               if t.follower.dev is not None or t.follower.saved}}
        if self.doc_parser is not None:
            out["doc"] = self.doc_parser.checkpoint()
        if self.last is not None:
            out["last"] = self.last
        if self.ended is not None:
            out["ended"] = self.ended
        if self.total is not None:
            out["total"] = self.total
        return out

    def apply_spool_offsets(self, offsets: dict) -> None:
        """Move resume offsets forward to what the spool says was already written (the
        process died between a spool write and the checkpoint); the spool's record is
        then also the last frame to restore. A spool record of a later generation (the
        file was truncated or rotated, and frames of the new content spooled, before the
        checkpoint that says so was on disk) is resumed from like a state rebuilt from
        the spool: its offset is proved by reading up to it (follow.py, track.py)."""
        files = self.saved.setdefault("files", {})
        self.spool_last.update(offsets)
        for path, (gen, off, rec) in offsets.items():
            entry = files.get(path) or {}
            st = entry.get("file")
            if not st:
                continue
            if st.get("gen", 0) == gen and off > st.get("offset", 0):
                log.info("%s: the spool is ahead of the checkpoint (byte %d > %d): resuming there",
                         path, off, st["offset"])
                st["offset"] = off
            elif gen > st.get("gen", 0) and isinstance(rec.get("ino"), int):
                new = self._spool_file_state(path, gen, off, rec)
                if new is None:
                    continue
                log.info("%s: the spool is a generation ahead of the checkpoint (%d > %d): "
                         "resuming after its last record (byte %d), once proved", path, gen,
                         st.get("gen", 0), off)
                entry["file"] = new
            else:
                continue
            self.last = {k: rec.get(k) for k in ("framework", "step", "ts", "data")}

    @staticmethod
    def _spool_file_state(path: str, gen: int, off: int, rec: dict) -> dict | None:
        """A follower's saved state from a spool record of the file: its identity and
        offset, no fingerprint (so the follower proves the offset before trusting it)."""
        try:
            st = os.stat(path)
        except OSError:
            st = None
        ino = rec.get("ino")
        if not isinstance(ino, int):  # a spool written before records carried the inode
            if st is None or st.st_size < off:
                return None
            ino = st.st_ino
        try:
            dev = st.st_dev if st is not None and st.st_ino == ino else \
                os.stat(os.path.dirname(path) or ".").st_dev
        except OSError:
            return None
        return {"dev": dev, "ino": ino, "offset": off, "fp_len": 0, "fp": "", "gen": gen}

    def resume_from_spool(self, offsets: dict) -> None:
        """The state file was lost: rebuild each file's resume point from the last spool
        record of it (its generation, inode and offset), so what the spool holds is not
        read again. A file whose inode is no longer at its path is found rotated in its
        directory, as after a normal restart; one that is gone is read from the start.
        Without a fingerprint the offset is proved by reading up to it (follow.py)."""
        files = self.saved.setdefault("files", {})
        newest = None
        for path, (gen, off, rec) in offsets.items():
            if not (path == self.spec.pattern or
                    (self.is_glob and fnmatch.fnmatchcase(path, self.spec.pattern))):
                continue
            fs = self._spool_file_state(path, gen, off, rec)
            if fs is None:
                continue
            files[path] = {"file": fs, "format": self.spec.format}
            self.spool_last[path] = (gen, off, rec)
            if newest is None or (rec.get("ts") or 0) >= (newest.get("ts") or 0):
                newest = rec
        if newest is not None:
            self.last = {k: newest.get(k) for k in ("framework", "step", "ts", "data")}

    def parser_rejections(self) -> Counter:
        c = Counter(self.rejected)
        for t in self.tracks.values():
            if t.parser is not None:
                c.update(t.parser.rejected)
        if self.doc_parser is not None:
            c.update(self.doc_parser.rejected)
        return c

    def health(self) -> dict:
        files = []
        for p, t in self.tracks.items():
            f = t.follower
            files.append({"path": p, "state": f.state, "format": t.format, "offset": f.offset,
                          "lag_bytes": f.lag, "rotations": f.rotations,
                          "truncations": f.truncations})
        for p, d in self.docs.items():
            files.append({"path": p, "state": d.state, "format": self.spec.format})
        if not files:
            state = "waiting"
        elif all(x["state"] == "waiting" for x in files):
            state = "waiting"
        else:
            state = "following"
        return {"source": self.spec.name, "format": self.spec.format, "run": self.spec.run,
                "state": state, "lag_bytes": sum(x.get("lag_bytes", 0) for x in files),
                "frames": self.frames, "files": files}
