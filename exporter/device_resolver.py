"""The device resolver: one daemon thread per exporter that completes device work (CUDA event
queries, device-to-host copies) off the caller's thread, for the phase timers and the
distributions."""
from __future__ import annotations

import threading
import time
from collections import deque

DEVICE_TIMEOUT_S = 120.0


class DeviceResolver:
    """One daemon thread per exporter that completes device work off the caller's
    thread: tasks are (ready, run) pairs polled with `ready()` (event.query(), never
    a synchronize); tickers are polled while they report pending work."""

    def __init__(self, exporter, poll: float = 0.005, idle: float = 0.25, autostart: bool = True):
        self.exporter = exporter  # the served run (core/run.py `ServedRun.resolver`)
        self.autostart = autostart  # False: the owner calls run_once() (tests)
        self.poll, self.idle = poll, idle
        self._tasks: deque = deque()
        self._tickers: list = []
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.timeouts = 0
        self._drain_until = 0.0

    def submit(self, ready, run, on_timeout=None, timeout: float = DEVICE_TIMEOUT_S) -> None:
        self._tasks.append((ready, run, on_timeout, time.monotonic() + timeout))
        self._start()
        self._wake.set()

    def add_ticker(self, tick) -> None:
        with self._lock:
            self._tickers.append(tick)
        self._start()

    def wake(self) -> None:
        self._wake.set()

    def _start(self) -> None:
        if self._thread is None and self.autostart:
            with self._lock:
                if self._thread is None:
                    t = threading.Thread(target=self._loop, name="rl-exporter-device", daemon=True)
                    t.start()
                    self._thread = t

    def run_once(self) -> bool:
        """Poll everything once; True while work is pending. (Tests call this.)"""
        busy = False
        n = len(self._tasks)
        now = time.monotonic()
        for _ in range(n):
            ready, run, on_timeout, deadline = self._tasks.popleft()
            try:
                if ready():
                    run()
                    continue
                if now > deadline:
                    self.timeouts += 1
                    if on_timeout is not None:
                        on_timeout()
                    continue
            except Exception as e:
                self.exporter.counts.error("device_task", e)
                continue
            self._tasks.append((ready, run, on_timeout, deadline))
            busy = True
        for tick in list(self._tickers):
            try:
                busy = tick() or busy
            except Exception as e:
                self.exporter.counts.error("timer_tick", e)
        return busy

    def _loop(self) -> None:
        while True:
            closed = self.exporter.closed
            busy = self.run_once()
            if closed and (not busy or time.monotonic() > self._drain_until):
                return
            self._wake.wait(self.poll if busy else self.idle)
            self._wake.clear()

    def drain(self, timeout: float) -> None:
        """After the exporter closed: keep polling pending device work until it is done or
        `timeout` passed (what is left then is counted by the tasks' on_timeout)."""
        self._drain_until = time.monotonic() + timeout
        self._wake.set()
        t = self._thread
        if t is not None:
            t.join(timeout + self.poll + 0.05)
        # the thread may have seen `closed` and left before the drain began: poll here
        while self.run_once() and time.monotonic() < self._drain_until:
            time.sleep(self.poll)
        if self._tasks:  # not completed in time: counted, not silently forgotten
            for _ready, _run, on_timeout, _deadline in list(self._tasks):
                self.timeouts += 1
                if on_timeout is not None:
                    on_timeout()
            self._tasks.clear()
