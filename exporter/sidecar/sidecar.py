"""The sidecar: follow sources, parse them, feed the frames into pipelines.

One served run (exporter/core/run.py: a Pipeline, the queue, worker and store the hook runs,
with its OTLP mirror and hang watch) per (run, framework), so the canonical series are
identical; their stores are rendered by one StoreCollector on the sidecar's registry (so every
family is emitted once),
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

import logging
import threading
import time
from collections import Counter

from prometheus_client import CollectorRegistry

from ..core.collector import StoreCollector
from ..core.store import Store
from ..core.endpoint import Endpoint
from ..core.otel import Telemetry
from ..core.pipeline import Pipeline, env_rank, run_info
from ..core.run import ServedRun
from .. import spool
from ..logs.read import MAX_LINE_BYTES
from .follow import StateFile
from .source import Source, SourceSpec
from .source_metrics import SourceCollector

log = logging.getLogger("rl_exporter.sidecar")

_BACKPRESSURE_EVERY = 256  # frames between waits for the exporter's worker
_PROGRESS_MIN_LAG = 64 << 20  # a backlog worth a progress line
_PROGRESS_EVERY = 5.0         # seconds between progress lines
_SAY_AGAIN_S = 600.0          # a recurring error is said again at most this often
# A log that ends in a bare traceback (no Hydra job error, no kill, no watchdog abort after it)
# reads as crashed once nothing was written to it for this long: a trainer that logs a caught
# exception goes on writing within a step or two.
CRASH_QUIET_S = 60.0


class Sidecar:
    def __init__(self, specs: list[SourceSpec], *, run: str, addr: str = "127.0.0.1",
                 port: int | None = 9464, state_path: str | None = None,
                 poll_interval: float = 0.25, checkpoint_interval: float = 1.0,
                 idle_flush: float = 0.5, max_line_bytes: int = MAX_LINE_BYTES,
                 spool_out: str | None = None, ingest: dict | None = None,
                 exporter_kwargs: dict | None = None, gpu="auto", gpu_interval: float = 5.0,
                 bind_retry_s: float = 0.0, stack_dumps: dict | None = None,
                 crash_quiet: float = CRASH_QUIET_S):
        self.run = run
        # a bare traceback at a log's end is a crash once the log was quiet this long
        self.crash_quiet = crash_quiet
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
            offsets = spool.tail(spool_out)
            for s in self.sources:
                if lost:
                    s.resume_from_spool(offsets)
                else:
                    s.apply_spool_offsets(offsets)
            try:
                self.spool_out = spool.SpoolFile(spool_out)
            except OSError as e:
                self.spool_out = None
                self.log_error("spool_write", f"cannot open the spool {spool_out} ({e}): not "
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
        self.runs: dict[tuple, ServedRun] = {}  # (run, framework) -> its served run
        self._run_frameworks: dict[str, str] = {}
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.collector = StoreCollector(extra=self._runs_self_metrics)
        self.registry.register(self.collector)
        self.registry.register(SourceCollector(self))
        # GPUs are sampled once per sidecar from start-up, not once per source exporter.
        self.gpu_store = Store(run)
        self.collector.add_store(self.gpu_store)
        from ..gpu import start_store_sampler
        self.gpu_sampler = start_store_sampler(self.gpu_store, gpu, gpu_interval)
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
            # bind_retry_s: wait for a port a previous serve still holds (serve --bind-wait)
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
            self.endpoint.add_route("/status", status_app(lambda: list(self.runs.values())))
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

    # ------------------------------------------------------------ served runs
    def run_for(self, run: str, framework: str, source) -> ServedRun | None:
        """The served run of (run, framework), made on first use: the same pipeline (queue,
        worker, store) as the hook's, so a log's series are the ones the hook would export.
        None when the run is already exported with another framework (said once a source)."""
        key = (run, framework)
        served = self.runs.get(key)
        if served is not None:
            return served
        with self._lock:
            served = self.runs.get(key)
            if served is not None:
                return served
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
            telemetry = None
            if kw.get("otlp_endpoint"):
                telemetry = Telemetry({"service.name": "rl-exporter", "rl.run": run},
                                      otlp_endpoint=kw["otlp_endpoint"], on_error=p.counts.error)
                telemetry.mirror(p.store, p.self_metrics)
            served = ServedRun(p, telemetry=telemetry)
            if self.spool_out is not None:  # what the lifecycle moves itself (the total reached)
                p.lifecycle.emit = lambda rec, r=run, fw=framework, src=source: \
                    self.write_spool_event(src, r, fw, rec)
            if self.spy is not None:
                self._watch(served)
            self.collector.add_store(p.store)
            self._run_frameworks[run] = framework
            self.runs[key] = served
            return served

    def _watch(self, served: ServedRun) -> None:
        """The hang watch of one run: a py-spy dump of its trainer once per stall, appended
        to `<spool-out>.stacks`; also what /status shows as last_hang."""
        from .pyspy import SidecarWatch

        run = served.run

        def paths():
            # list(): the poll thread may add a track meanwhile
            return [path for s in list(self.sources) if s.spec.run == run
                    for path in list(s.tracks)]
        out = self.spool_out.path + ".stacks" if self.spool_out is not None else None
        served.hang_watch = SidecarWatch(served, self.spy, paths, out,
                                         thresholds=self.stack_dumps.get("thresholds"))

    def backpressure(self, served: ServedRun) -> None:
        self._pending_bp[id(served)] += 1
        if self._pending_bp[id(served)] >= _BACKPRESSURE_EVERY:
            self._pending_bp[id(served)] = 0
            served.flush(timeout=30.0)  # never let the bounded queue drop a backlog's frames

    def _runs_self_metrics(self):
        for served in list(self.runs.values()):
            yield from served.pipeline.self_metrics()

    def write_spool(self, source, frame, extra: dict) -> None:
        """Append one frame to --spool-out; a line that cannot be written (full disk) is
        counted (rl_exporter_source_errors_total{kind="spool_write"}), never raised: the
        frame is exported regardless. Settings read from a spool source go first, as a
        settings record of their own (a data value is a number or a string)."""
        data = frame.data
        if spool.SETTINGS_KEY in data:
            data = dict(data)
            settings = data.pop(spool.SETTINGS_KEY)
            head = {k: extra[k] for k in ("ts", "run", "framework") if k in extra}
            self._spool_line(source, lambda: spool.encode_settings(settings, **head))
        self._spool_line(source, lambda: spool.encode(frame.step, data, **extra))

    def write_spool_event(self, source, run: str, framework: str, rec: dict) -> None:
        """Append a lifecycle event record (exporter/spool.py) to --spool-out, counted as a
        frame's line is when it cannot be written."""
        self._spool_line(source, lambda: spool.encode_event(
            rec, ts=round(float(rec["ts"]), 3), run=run, framework=framework))

    def _spool_line(self, source, encode) -> None:
        try:
            line = encode()
        except (ValueError, TypeError, KeyError) as e:
            err = e
        else:
            with self._spool_lock:
                err = self.spool_out.append(line)
        if err is not None:
            source.errors["spool_write"] += 1
            self.log_error("spool_write", f"writing the spool {self.spool_out.path} failed ({err}); "
                        "frames are still exported, each unwritten line is counted in "
                        "rl_exporter_source_errors_total{kind=\"spool_write\"}")

    def log_error(self, kind: str, message: str) -> None:
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
        """Every file read to its end (a last line still without its newline aside: finish()
        takes it) and no record left open."""
        return not any(t.follower.unread or t.open for s in self.sources for t in s.tracks.values())

    def nothing_read(self) -> list[str]:
        """Why no source gave a frame, one line each; [] when any did (the ingest source
        counts: a push is a frame)."""
        if self.ingest_source is not None and self.ingest_source.frames:
            return []
        why = [s.nothing_read() for s in self.sources]
        return [] if None in why else why

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
                self.log_error("spool_sync", f"cannot sync the spool {self.spool_out.path} ({err}); "
                            "counted in rl_exporter_source_errors_total{kind=\"spool_sync\"}")
        if self.state is None:
            return
        try:
            self.state.save({self._key(s.spec): s.checkpoint() for s in self.sources})
        except (OSError, ValueError) as e:
            for s in self.sources:
                s.errors["state_write"] += 1
            self.log_error("state_write", f"cannot write the state file {self.state.path} ({e}): a "
                        "restart will re-read from the last saved point; counted in "
                        "rl_exporter_source_errors_total{kind=\"state_write\"}")

    def run_forever(self) -> None:
        while not self._stop.is_set():
            busy = self.poll_once()
            if not busy:
                self._stop.wait(self.poll_interval)
        self.checkpoint()

    def run_until_idle(self) -> None:
        """Read every source to its end, then finish() (serve --exit-when-idle)."""
        while not self._stop.is_set():
            busy = self.poll_once()
            if not busy and self.caught_up():
                break
            if not busy:  # an open record waits for idle_flush: no busy loop meanwhile
                self._stop.wait(min(self.poll_interval, 0.05))
        self.finish()

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        if self.gpu_sampler is not None:
            self.gpu_sampler.stop()
        for served in self.runs.values():
            served.flush()
        self.checkpoint()
        deadline = time.monotonic() + 5.0
        for served in self.runs.values():  # its hang watch, pipeline and OTLP mirror
            served.close(deadline=deadline)
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
                "pipelines": [{"run": r, "framework": fw, "frames_processed": s.counts.processed}
                              for (r, fw), s in self.runs.items()]}
