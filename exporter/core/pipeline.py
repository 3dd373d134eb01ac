"""The pipeline every frame goes through, whoever logged it: a bounded queue, the worker thread
(resolve each key once, coerce, write), the store, and the loss counters.

The hook (one per trainer process) and the sidecar (one per run it follows) each own
pipelines; what serves a store (the collector, the endpoint, the OTLP mirror) is theirs.
"""
from __future__ import annotations

import collections
import os
import socket
import threading
import time

from .._version import __version__
from ..catalog import CATALOG, Catalog
from .goodput import Goodput
from .lifecycle import Lifecycle
from .self_metrics import Counts
from .store import Store
from .worker import Item, Worker, fresh

_FRAME_HIST = CATALOG.metrics["rl_exporter_frame_processing_seconds"]


def run_info(framework: str, algorithm: str | None = None, model: str | None = None,
             host: str | None = None, rank: int | None = None) -> dict:
    """The labels of rl_run_info: the run's identity, which never changes during it."""
    return {"framework": framework, "algorithm": algorithm or "", "model": model or "",
            "host": host or socket.gethostname(), "rank": "" if rank is None else str(rank),
            "version": __version__}


def env_rank() -> int | None:
    """The process's rank from the launcher's environment (torchrun, Slurm, Open MPI)."""
    for var in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


class Pipeline:
    def __init__(self, run: str, *, catalog: Catalog = CATALOG, framework: str = "auto",
                 info: dict | None = None, queue_size: int = 1024, fallback_limit: int = 500,
                 series_limit: int = 2000, poll_interval: float = 0.02, spool=None,
                 expert_series: bool = False, counts: Counts | None = None,
                 segments: bool = True):
        self.run = run
        self.counts = counts if counts is not None else Counts()
        self.store = Store(run, catalog, series_limit=series_limit, counts=self.counts)
        if info is not None:
            self.store.set("rl_run_info", 1.0, info)
        self.queue: collections.deque = collections.deque()
        self.queue_size = max(1, int(queue_size))
        self.closed = False  # set first thing in close(): a frame queued after is counted
        self.qlock = threading.Lock()
        self.spool = spool  # spool.SpoolWriter or None: the worker writes it, close() closes it
        self.worker = Worker(store=self.store, catalog=catalog, framework=framework,
                             counts=self.counts, queue=self.queue, qlock=self.qlock,
                             fallback_limit=fallback_limit, poll=poll_interval,
                             frame_seconds=self._frame_seconds, spool=spool,
                             expert_series=expert_series, segments=segments)
        # where the run's wall time goes (rl_goodput_seconds_total), fed by the worker per
        # frame: the hook, the sidecar and backfill account the same frames the same way
        self.goodput = self.worker.goodput = Goodput(self.store)
        # where the run is in its life (rl_run_state), moved by the worker's steps, the pause
        # phases, the hook's end and serve's log endings (exporter/core/lifecycle.py); the
        # transitions it makes itself go to the spool as event records
        self.lifecycle = self.worker.lifecycle = self.goodput.lifecycle = Lifecycle(self.store)
        if spool is not None:
            self.lifecycle.emit = spool.event
        self.framework = framework
        self.rank = (info or {}).get("rank") or None

    def start(self) -> None:
        self.worker.start()

    def _frame_seconds(self, seconds: float) -> None:
        self.store.histograms.record(_FRAME_HIST, seconds)

    # ------------------------------------------------------------ frames in
    def log(self, frame: dict, step=None, ts: float | None = None, starts: int = 0) -> None:
        """A frame from a reader of logs (the sidecar): counted as received, then queued.
        `starts`: start-up banners its reader read just before it (logs/read.py `Read.starts`;
        one after training frames begins a new segment). The hook's log() does the same with
        its own caller-thread checks first."""
        self.counts.received += 1
        if ts is None:
            self.enqueue(dict(frame), step, time.time(), starts, time.monotonic())
        else:
            self.enqueue(dict(frame), step, ts, starts)

    def enqueue(self, frame: dict, step, ts: float, starts: int = 0,
                mono: float | None = None) -> None:
        """Queue a frame the caller owns (already copied and counted as received); the
        oldest frame goes, counted, when the queue is full. `mono`: time.monotonic() when
        it was logged (the goodput's intervals; None for a recorded time)."""
        item = (frame, step, ts, False, starts, mono)  # an Item's fields, without its constructor
        with self.qlock:
            if len(self.queue) >= self.queue_size:
                self.queue.popleft()
                self.counts.dropped["queue_full"] += 1
            self.queue.append(item)
            if self.closed:
                # close() ran meanwhile (a signal handler that interrupted this very call):
                # no worker takes the frame now. Counted here, unless close() already
                # counted it with the rest of the queue (then it is gone from it).
                if self.queue and self.queue[-1] is item:  # (we hold the lock: still last)
                    self.queue.pop()
                    self.counts.dropped["closed"] += 1

    def restore(self, frame: dict, step, ts: float) -> None:
        """Re-apply a frame exported before a restart: values, step and the step's timestamp
        are back at once; not counted as processed, not spooled again."""
        with self.qlock:
            self.queue.append(Item(dict(frame), step, float(ts), True))

    def process_now(self, frame: dict, step, ts: float) -> None:
        """Process one frame on the caller's thread, stamped `ts`, in order with nothing
        queued (replays of recorded frames)."""
        self.counts.received += 1
        self.worker.replay(frame, step, ts)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every frame queued so far is processed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.queue and not self.worker.busy:
                return True
            time.sleep(0.001)
        return False

    # ------------------------------------------------------------ lifecycle
    def close(self, timeout: float = 5.0, deadline: float | None = None) -> None:
        """Stop the worker within `timeout` (or by `deadline`, time.monotonic()), count what it
        could not process as dropped{close_timeout}, close the spool."""
        if deadline is None:
            deadline = time.monotonic() + timeout
        self.closed = True
        # The worker (and device copies) stop a grace before the deadline: in the grace it
        # counts the rest of its batch, so the count below is complete and close() still ends
        # within `timeout`.
        stopped = self.worker.stop(deadline, grace=min(0.5, timeout / 10))
        # Frames still queued are counted. close() may run from a signal handler that
        # interrupted log() while it held the queue lock: then the lock is never free here,
        # and the frames are counted from a lock-free copy of the queue instead.
        if self.qlock.acquire(timeout=max(0.0, min(0.1, deadline - time.monotonic()))):
            try:
                left = sum(fresh(x) for x in self.queue)  # restored frames aside
                self.queue.clear()
            finally:
                self.qlock.release()
        else:
            # (clear() too: a log() this handler interrupted, finding its frame gone from
            # the queue once it resumes, knows it was counted here)
            held = tuple(self.queue)
            self.queue.clear()
            left = sum(fresh(x) for x in held)
        if left:
            self.counts.drop("close_timeout", left)
        lost = self.counts.dropped.get("close_timeout", 0)
        busy = not stopped
        if lost or busy:
            self.counts.error("close", None, f"close(): {lost} frame(s) not processed within "
                              f"{timeout:g} s; counted as dropped{{reason=\"close_timeout\"}}"
                              + ("; the worker is still on a frame and counts the rest of its "
                                 "batch when it stops" if busy else ""))
        # the process's end (the hook's close, exit, crash) after the frames before it
        self.lifecycle.flush_events()
        if self.spool is not None:
            self.spool.close()

    def retire_after_fork(self) -> None:
        """In a fork child: the worker thread is the parent's, and the queue lock may have been
        held by a thread that no longer exists. New lock, nothing queued, no worker to stop."""
        self.qlock = self.worker.qlock = threading.Lock()
        self.queue.clear()

    # ------------------------------------------------------------ reads
    @property
    def alive(self) -> bool:
        return self.worker.alive

    @property
    def last_step(self):
        return self.worker.last_step

    @property
    def last_frame_ts(self) -> float:
        return self.worker.last_frame_ts

    def self_metrics(self):
        """The rl_exporter_* series as (store, metric, labels, value)."""
        yield from self.counts.series(self.store, len(self.queue), self.worker.last_frame_ts)
        yield from self.lifecycle.series(self.store)

    def stats(self) -> dict:
        out = self.counts.snapshot()
        out.update(run=self.run, queue=len(self.queue), last_step=self.worker.last_step,
                   last_frame_timestamp=self.worker.last_frame_ts)
        return out
