"""The sidecar: follow sources, parse them, feed the frames into pipelines.

One Pipeline (exporter/core/pipeline.py: queue, worker, store) per (run, framework), the
same pipeline the hook runs, so the canonical series are identical; their stores are
rendered by one StoreCollector on the sidecar's registry (so every family is emitted once),
next to a SourceCollector for the per-source self-metrics (the
rl_exporter_source_lines_total family and its siblings, labelled run and source).

No loss, no duplicates: every file's identity and the offset of the first byte not
yet applied (never past the first line of a record still being assembled) are
checkpointed atomically every checkpoint_interval and at shutdown. With spool_out,
each frame is also appended to a spool JSONL with the offset after it (and the
generation and inode of the file it came from); on start the spool's tail is read so a
crash between the spool write and the checkpoint does not replay frames, and a lost or
corrupt state file resumes each file from there: the spool holds every frame exactly
once. Nothing here stops on a full disk or an unwritable state file: such errors are
counted per source (rl_exporter_source_errors_total{kind}) and said rarely.
"""
from __future__ import annotations

import fnmatch
import glob as globmod
import logging
import os
import threading
import time
from collections import Counter

from prometheus_client import CollectorRegistry

from ..core.collector import StoreCollector
from ..core.store import Store
from ..core.endpoint import Endpoint
from ..core.otel import Telemetry
from ..core.pipeline import Pipeline, env_rank, run_info
from .. import spool
from ..logs import DOCUMENT_FORMATS, canonical_format, detect_line, make_parser
from ..logs.base import clean
from .follow import StateFile
from .source_metrics import SourceCollector
from .track import DocTrack, FileTrack

log = logging.getLogger("rl_exporter.sidecar")

_GLOB_CHARS = set("*?[")
_BACKPRESSURE_EVERY = 256  # frames between waits for the exporter's worker
_PROGRESS_MIN_LAG = 64 << 20  # a backlog worth a progress line
_PROGRESS_EVERY = 5.0         # seconds between progress lines
_SAY_AGAIN_S = 600.0          # a recurring error is said again at most this often
_NO_FRAME_LINES = 200         # lines without a frame, some shaped like another format: say so
_NO_FRAME_ANY = 100_000       # lines without a frame at all (not even one before a restart)


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
    def __init__(self, spec: SourceSpec, sidecar: "Sidecar", saved: dict):
        self.spec = spec
        self.sidecar = sidecar
        self.saved = saved or {}
        self.tracks: dict[str, FileTrack] = {}
        self.docs: dict[str, DocTrack] = {}
        self.doc_parser = None
        if spec.format in DOCUMENT_FORMATS:
            self.doc_parser = make_parser(spec.format)
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
        self._next_glob = 0.0

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
        for p in paths:
            t = self.tracks.get(p)
            if t is None:
                t = self.tracks[p] = FileTrack(p, self.spec.format, files.get(p),
                                            self.sidecar.max_line_bytes)
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
                    self.sidecar._error("file_unreadable",
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
        too_long = f.too_long
        events = f.poll()
        self.rejected["line_too_long"] += f.too_long - too_long
        if not events:
            if t.open and now - t.last_data >= self.sidecar.idle_flush:
                self._apply(t, t.on_idle(), t.resume)
            return False
        t.last_data = now
        for kind, text, start, end in events:
            if kind == "line":
                self.lines += 1
                frames = t.on_line(text, start, end)
                self._apply(t, frames, t.resume if end else None)
                if not self.frames and "no_frames" not in self.errors:
                    self._no_frames_yet(text)
            elif kind == "eof":
                self._apply(t, t.on_eof(), None)
                self.sidecar.checkpoint_soon()
            elif kind == "start":
                t.on_start(start, text)
                # The file's identity is on disk before its first frame is spooled: a crash
                # after a spool write can then always resume past it (apply_spool_offsets).
                self.sidecar.checkpoint()
            elif kind == "reset":
                # the record left open by the old content; no resume offset (its bytes
                # are gone), so the spool record is not a resume point either
                self._apply(t, t.on_reset(text), None)
                self.sidecar.checkpoint_soon()
        return True

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

    def _apply(self, t, frames, offset) -> None:
        if not frames:
            return
        parser = t.parser if isinstance(t, FileTrack) else self.doc_parser
        p = self.sidecar.pipeline_for(self.spec.run, parser.framework, self)
        if p is None:
            self.rejected["run_conflict"] += len(frames)
            return
        sc = self.sidecar
        # start-up banners read with these lines (logs/read.py): one after training is a restart
        banners = 0
        if isinstance(t, FileTrack) and t.reader is not None:
            banners, t.banners = t.reader.starts - t.banners, t.reader.starts
        for fr in frames:
            if sc.spool_out is not None:
                extra = {"ts": time.time(), "run": self.spec.run, "framework": parser.framework}
                if isinstance(t, FileTrack):
                    # the file these lines came from, not the one the follower is on now
                    extra.update(src=t.path, off=offset, gen=t.gen, ino=t.ino)
                sc.write_spool(self, fr, extra)
            p.log(fr.data, step=fr.step, banners=banners)
            banners = 0
            self.frames += 1
            sc.backpressure(p)
        self.last_frame_ts = now = time.time()
        fr = frames[-1]
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
        p = self.sidecar.pipeline_for(self.spec.run, fw, self) if data is not None else None
        if p is None:
            return
        p.restore(data, step, ts)
        self.last_frame_ts = ts
        log.info("source %s: restored the last frame (step %s) from the state file",
                 self.spec.name, step)

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
        frames = self.doc_parser.feed_document(text)
        if sum(self.doc_parser.rejected.values()) > before:
            d.sig = None  # maybe still being written; retry when it changes
        self.lines += text.count("\n")
        self._apply(d, frames, None)
        if frames:
            self.sidecar.checkpoint_soon()
        return True

    def finish(self) -> None:
        """The writers are done: the records still open at the end of the files are
        complete as they are."""
        for t in self.tracks.values():
            if t.open:
                self._apply(t, t.on_idle(), t.resume)

    # ------------------------------------------------------------ state
    def checkpoint(self) -> dict:
        out: dict = {"files": {p: t.checkpoint() for p, t in self.tracks.items()
                               if t.follower.dev is not None or t.follower.saved}}
        if self.doc_parser is not None:
            out["doc"] = self.doc_parser.checkpoint()
        if self.last is not None:
            out["last"] = self.last
        return out

    def apply_spool_offsets(self, offsets: dict) -> None:
        """Move resume offsets forward to what the spool says was already written (the
        process died between a spool write and the checkpoint); the spool's record is
        then also the last frame to restore."""
        files = self.saved.setdefault("files", {})
        for path, (gen, off, rec) in offsets.items():
            st = (files.get(path) or {}).get("file")
            if st and st.get("gen", 0) == gen and off > st.get("offset", 0):
                log.info("%s: the spool is ahead of the checkpoint (byte %d > %d): resuming there",
                         path, off, st["offset"])
                st["offset"] = off
                self.last = {k: rec.get(k) for k in ("framework", "step", "ts", "data")}

    def resume_from_spool(self, offsets: dict) -> None:
        """The state file was lost: rebuild each file's resume point from the last spool
        record of it (its generation, inode and offset), so what the spool holds is not
        read again. A file whose inode is no longer at its path is found rotated in its
        directory, as after a normal restart; one that is gone is read from the start."""
        files = self.saved.setdefault("files", {})
        newest = None
        for path, (gen, off, rec) in offsets.items():
            if not (path == self.spec.pattern or
                    (self.is_glob and fnmatch.fnmatchcase(path, self.spec.pattern))):
                continue
            try:
                st = os.stat(path)
            except OSError:
                st = None
            ino = rec.get("ino")
            if not isinstance(ino, int):  # a spool written before records carried the inode
                if st is None or st.st_size < off:
                    continue
                ino = st.st_ino
            try:
                dev = st.st_dev if st is not None and st.st_ino == ino else \
                    os.stat(os.path.dirname(path) or ".").st_dev
            except OSError:
                continue
            files[path] = {"file": {"dev": dev, "ino": ino, "offset": off, "fp_len": 0, "fp": "",
                                    "gen": gen}, "format": self.spec.format}
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


class _GPUTarget:
    """What the GPU sampler needs from its owner: a store, a rank, error reporting."""

    def __init__(self, store):
        self.store, self.rank = store, None

    def _error(self, kind, exc, message=None):
        log.error("rl-exporter serve: %s", message or f"{kind}: {exc!r}")


class Sidecar:
    def __init__(self, specs: list[SourceSpec], *, run: str, addr: str = "127.0.0.1",
                 port: int | None = 9464, state_path: str | None = None,
                 poll_interval: float = 0.25, checkpoint_interval: float = 1.0,
                 idle_flush: float = 0.5, max_line_bytes: int = 1 << 20,
                 spool_out: str | None = None, ingest: dict | None = None,
                 exporter_kwargs: dict | None = None, gpu="auto", gpu_interval: float = 5.0,
                 bind_retry_s: float = 15.0, stack_dumps: dict | None = None):
        self.run = run
        self.poll_interval = poll_interval
        self.checkpoint_interval = checkpoint_interval
        self.idle_flush = idle_flush
        self.max_line_bytes = max_line_bytes
        self.exporter_kwargs = exporter_kwargs or {}
        self._said: dict = {}  # error kind -> (monotonic time last said, times not said since)
        self.state = StateFile(state_path) if state_path else None
        saved = self.state.load() if self.state else {}
        lost = self.state.problem if self.state else None
        self.sources = [Source(s, self, saved.get(self._key(s))) for s in specs]
        self.spool_out = None
        if spool_out:
            offsets = _spool_tail(spool_out)
            for s in self.sources:
                if lost:
                    s.resume_from_spool(offsets)
                else:
                    s.apply_spool_offsets(offsets)
            try:
                self.spool_out = spool.SpoolFile(spool_out)
            except OSError as e:
                self.spool_out = None
                self._error("spool_write", f"cannot open the spool {spool_out} ({e}): not "
                            "spooling; frames are exported regardless")
        if lost:
            for s in self.sources:
                s.errors["state_unreadable"] += 1
            log.error("state file %s is %s: %s (counted in rl_exporter_source_errors_total"
                      "{kind=\"state_unreadable\"})", self.state.path, lost,
                      f"resuming each file after its last frame in the spool {spool_out}"
                      if spool_out else "starting every source from scratch, so frames "
                      "exported before the restart are read and exported again")
        self._spool_lock = threading.Lock()
        self.pipelines: dict[tuple, Pipeline] = {}
        self._run_frameworks: dict[str, str] = {}
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.collector = StoreCollector(extra=self._pipeline_self_metrics)
        self.registry.register(self.collector)
        self.registry.register(SourceCollector(self))
        # GPUs are sampled once per sidecar from start-up, not once per source exporter.
        self.rank = None
        self.gpu_store = Store(run)
        self.collector.add_store(self.gpu_store)
        from ..gpu import start_sampler
        self.gpu_sampler = start_sampler(_GPUTarget(self.gpu_store), gpu, gpu_interval)
        self.ingest_source = None
        self._checkpoint_due = 0.0
        self._stop = threading.Event()
        self._pending_bp: Counter = Counter()
        self._catchup = None  # (started, bytes read then, last progress line) of a backlog
        # py-spy dumps of a stalled trainer (exporter/sidecar/pyspy.py); None: off
        self.stack_dumps = stack_dumps
        self.spy = None
        if stack_dumps is not None:
            from .pyspy import PySpy
            self.spy = PySpy(pid=stack_dumps.get("pid"), binary=stack_dumps.get("py_spy"),
                             **({"timeout": stack_dumps["timeout"]} if "timeout" in stack_dumps
                                else {}))
        for s in self.sources:  # before the first scrape: no hole after a restart
            s.restore_last()
        self.endpoint = None
        if port is not None:
            # a restart in the same pod: the previous serve may still hold the port a moment
            self.endpoint = Endpoint(self.registry, addr, port, health=self.health,
                                     bind_retry_s=bind_retry_s)
            if ingest:
                from .ingest import IngestApp, IngestSource
                self.ingest_source = IngestSource(run, ingest.get("framework", "auto"))
                self.endpoint.add_route("/ingest", IngestApp(self, self.ingest_source,
                                                             token=ingest.get("token"),
                                                             max_bytes=ingest.get("max_bytes",
                                                                                  1 << 20)))
            from ..status import status_app
            self.endpoint.add_route("/status", status_app(lambda: list(self.pipelines.values())))
            from .pyspy import stacks_app
            self.endpoint.add_route("/debug/stacks", stacks_app(self))
            self.endpoint.start()

    @staticmethod
    def _key(spec: SourceSpec) -> str:
        return f"{spec.format}:{spec.pattern}"

    def all_sources(self):
        return self.sources + ([self.ingest_source] if self.ingest_source else [])

    @property
    def url(self):
        return self.endpoint.url if self.endpoint else None

    # ------------------------------------------------------------ pipelines
    def pipeline_for(self, run: str, framework: str, source):
        """The pipeline of (run, framework), made on first use: the same queue, worker and
        store as the hook's, so a log's series are the ones the hook would export."""
        key = (run, framework)
        p = self.pipelines.get(key)
        if p is not None:
            return p
        with self._lock:
            p = self.pipelines.get(key)
            if p is not None:
                return p
            other = self._run_frameworks.get(run)
            if other is not None and other != framework:
                log.error("source %s: run %r is already exported with framework %s; frames of "
                          "framework %s are dropped (give this source its own run: "
                          "--source FORMAT:PATH,run=NAME)", source.spec.name, run, other, framework)
                return None
            kw = self.exporter_kwargs
            p = Pipeline(run, framework=framework, queue_size=kw.get("queue_size", 4096),
                         info=run_info(framework, kw.get("algorithm"), kw.get("model"),
                                       rank=env_rank()))
            p.start()
            if kw.get("otlp_endpoint"):
                p.telemetry = Telemetry({"service.name": "rl-exporter", "rl.run": run},
                                        otlp_endpoint=kw["otlp_endpoint"], on_error=p.counts.error)
                p.telemetry.mirror(p.store, p.self_metrics)
            if self.spy is not None:
                self._watch(p, run)
            self.collector.add_store(p.store)
            self._run_frameworks[run] = framework
            self.pipelines[key] = p
            return p

    def _watch(self, p, run: str) -> None:
        """The hang watch of one run: a py-spy dump of its trainer once per stall, appended
        to `<spool-out>.stacks`; also what /status shows as last_hang."""
        from .pyspy import SidecarWatch

        def paths():
            # list(): the poll thread may add a track meanwhile
            return [path for s in list(self.sources) if s.spec.run == run
                    for path in list(s.tracks)]
        out = self.spool_out.path + ".stacks" if self.spool_out is not None else None
        p.hang_watch = SidecarWatch(p, self.spy, paths, out,
                                    thresholds=self.stack_dumps.get("thresholds"))

    def backpressure(self, p) -> None:
        self._pending_bp[id(p)] += 1
        if self._pending_bp[id(p)] >= _BACKPRESSURE_EVERY:
            self._pending_bp[id(p)] = 0
            p.flush(timeout=30.0)  # never let the bounded queue drop a backlog's frames

    def _pipeline_self_metrics(self):
        for p in list(self.pipelines.values()):
            yield from p.self_metrics()

    def write_spool(self, source, frame, extra: dict) -> None:
        """Append one frame to --spool-out; a line that cannot be written (full disk) is
        counted (rl_exporter_source_errors_total{kind="spool_write"}), never raised: the
        frame is exported regardless."""
        try:
            line = spool.encode(frame.step, frame.data, **extra)
        except ValueError as e:
            err = e
        else:
            with self._spool_lock:
                err = self.spool_out.append(line)
        if err is not None:
            source.errors["spool_write"] += 1
            self._error("spool_write", f"writing the spool {self.spool_out.path} failed ({err}); "
                        "frames are still exported, each unwritten line is counted in "
                        "rl_exporter_source_errors_total{kind=\"spool_write\"}")

    def _error(self, kind: str, message: str) -> None:
        """Say an error of this kind once, then at most every _SAY_AGAIN_S with how many
        more there were (the counter has them all)."""
        now = time.monotonic()
        last, since = self._said.get(kind, (None, 0))
        if last is None or now - last >= _SAY_AGAIN_S:
            extra = f" ({since} more since it was last said)" if since else ""
            log.error("rl-exporter serve: %s%s", message, extra)
            self._said[kind] = (now, 0)
        else:
            self._said[kind] = (last, since + 1)

    # ------------------------------------------------------------ loop
    def checkpoint_soon(self) -> None:
        self._checkpoint_due = 0.0

    def poll_once(self) -> bool:
        now = time.monotonic()
        busy = False
        for s in self.sources:
            try:
                busy |= s.poll(now)
            except Exception:  # one bad source never stops the others
                log.exception("source %s failed this poll", s.spec.name)
                s.rejected["error"] += 1
        if now >= self._checkpoint_due:
            self.checkpoint()
            self._checkpoint_due = now + self.checkpoint_interval
            self._progress(now)
        return busy

    def caught_up(self) -> bool:
        """Every file read to its end and no record left open."""
        return not any(t.follower.lag or t.open for s in self.sources for t in s.tracks.values())

    def finish(self) -> None:
        for s in self.sources:
            s.finish()

    def _progress(self, now: float) -> None:
        """One log line every few seconds while a backlog is being read (a restart after a
        long outage, a 1 GB log): how far, how fast, how long still."""
        lag = sum(t.follower.lag for s in self.sources for t in s.tracks.values())
        if lag < _PROGRESS_MIN_LAG:
            self._catchup = None
            return
        read = sum(t.follower.bytes_read for s in self.sources for t in s.tracks.values())
        if self._catchup is None:
            self._catchup = (now, read, now)
            return
        t0, read0, last = self._catchup
        if now - last < _PROGRESS_EVERY:
            return
        rate = (read - read0) / max(now - t0, 1e-9)
        log.info("catching up: %.0f MB behind, reading %.1f MB/s, about %.0f s to go",
                 lag / 2**20, rate / 2**20, lag / rate if rate > 0 else float("inf"))
        self._catchup = (t0, read0, now)

    def checkpoint(self) -> None:
        """The spool made durable, then every file's resume point saved. Neither failure
        stops anything: each is counted per source and said rarely."""
        if self.spool_out is not None:
            with self._spool_lock:
                err = self.spool_out.sync()
            if err is not None:
                for s in self.sources:
                    s.errors["spool_sync"] += 1
                self._error("spool_sync", f"cannot sync the spool {self.spool_out.path} ({err}); "
                            "counted in rl_exporter_source_errors_total{kind=\"spool_sync\"}")
        if self.state is None:
            return
        try:
            self.state.save({self._key(s.spec): s.checkpoint() for s in self.sources})
        except (OSError, ValueError) as e:
            for s in self.sources:
                s.errors["state_write"] += 1
            self._error("state_write", f"cannot write the state file {self.state.path} ({e}): a "
                        "restart will re-read from the last saved point; counted in "
                        "rl_exporter_source_errors_total{kind=\"state_write\"}")

    def run_forever(self) -> None:
        while not self._stop.is_set():
            busy = self.poll_once()
            if not busy:
                self._stop.wait(self.poll_interval)
        self.checkpoint()

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        if self.gpu_sampler is not None:
            self.gpu_sampler.stop()
        for p in self.pipelines.values():
            p.flush()
        self.checkpoint()
        deadline = time.monotonic() + 5.0
        for p in self.pipelines.values():
            if getattr(p, "hang_watch", None) is not None:
                p.hang_watch.stop()
            p.close(deadline=deadline)
            if getattr(p, "telemetry", None) is not None:
                p.telemetry.close(deadline)
        for s in self.sources:
            for t in s.tracks.values():
                t.follower.close()
        if self.spool_out is not None:
            self.spool_out.close()  # errors returned, not raised: nothing is left to write
        if self.endpoint is not None:
            self.endpoint.stop()

    def health(self) -> dict:
        sources = [s.health() for s in self.all_sources()]
        http = dict(self.endpoint.stats) if self.endpoint is not None else {}
        return {"status": "ok", "run": self.run, "sources": sources, "http": http,
                "pipelines": [{"run": r, "framework": fw, "frames_processed": p.counts.processed}
                              for (r, fw), p in self.pipelines.items()]}


def _spool_tail(path: str, window: int = 1 << 20) -> dict:
    """{src: (gen, off, record)} of the last record per source file in the last window of
    an existing spool; a torn last line (the process died mid-write) is cut off so the
    file stays valid JSONL."""
    out: dict = {}
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return out
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - window)
        data = os.pread(fd, size - start, start)
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n")
            keep = start + cut + 1 if cut >= 0 else start
            os.ftruncate(fd, keep)
            log.warning("spool %s ended in a torn record: cut at byte %d", path, keep)
            data = data[:cut + 1] if cut >= 0 else b""
        for raw in data.split(b"\n"):
            rec = spool.decode(raw)
            if rec is None:
                continue
            src, off = rec.get("src"), rec.get("off")
            if isinstance(src, str) and isinstance(off, int):
                gen = rec.get("gen", 0)
                prev = out.get(src)
                if prev is None or (gen, off) >= prev[:2]:
                    out[src] = (gen, off, rec)
    finally:
        os.close(fd)
    return out
