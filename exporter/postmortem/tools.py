"""The real engine: promtool and Prometheus, found on PATH, started on loopback."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

INSTALL = {
    "promtool": "sudo apt-get install prometheus   (Debian/Ubuntu; promtool ships with it) or a "
                "release from https://prometheus.io/download/",
    "prometheus": "sudo apt-get install prometheus   (Debian/Ubuntu) or a release from "
                  "https://prometheus.io/download/",
}


def cpu(own: bool = True, children: bool = True) -> float:
    """CPU seconds used so far by this process and/or its finished children (promtool runs,
    stopped Prometheus servers): phases are timed in CPU as well as wall time, since wall
    time on a shared machine includes waiting for a core."""
    import resource
    total = 0.0
    if own:
        a = resource.getrusage(resource.RUSAGE_SELF)
        total += a.ru_utime + a.ru_stime
    if children:
        b = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += b.ru_utime + b.ru_stime
    return total


class ToolMissing(Exception):
    pass


class ToolFailed(Exception):
    pass


# Signals that end a command: SIGTERM (a `timeout`, a pod stopping) as SystemExit, Ctrl-C as
# KeyboardInterrupt, both raised in the main thread so the `finally` blocks stop the engine and
# remove the scratch directories. Inside `deferred()` (creating or removing a scratch directory,
# moving blocks into --out) the signal waits until the section ends: no directory is ever made
# without its cleanup in place, and no cleanup or publication is cut half-way.
_defer = {"depth": 0, "pending": None}


def _on_signal(signum, frame):
    if _defer["depth"]:
        _defer["pending"] = signum
        return
    _raise_for(signum)


def _raise_for(signum):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM: die at once
    raise SystemExit(128 + signum)


def stop_cleanly_on_sigterm() -> None:
    """SIGTERM ends the command like Ctrl-C does (an exception in the main thread), and both
    wait while a `deferred()` section runs; the default action of SIGTERM would kill the
    process with its temporary directories left behind."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


class deferred:
    """A section SIGTERM and SIGINT do not interrupt: a signal that arrives meanwhile is
    raised when the outermost section ends. Python runs signal handlers in the main thread,
    whichever thread the signal reached, so the flag covers every thread."""

    def __enter__(self):
        _defer["depth"] += 1
        return self

    def __exit__(self, *exc):
        _defer["depth"] -= 1
        if _defer["depth"] == 0 and _defer["pending"] is not None:
            signum, _defer["pending"] = _defer["pending"], None
            if exc[0] is None:
                _raise_for(signum)
        return False


class scratch:
    """A temporary directory, removed on every way out: `with scratch("rlx-doctor-") as d:`.
    Made and removed inside `deferred()`, and assigned before the section ends, so a signal
    at any moment leaves nothing behind. `keep`: use that directory instead, and keep it."""

    def __init__(self, prefix: str, dir: str | None = None, keep: str | None = None):
        self.prefix, self.dir, self.keep = prefix, dir, keep
        self.path = None

    def __enter__(self) -> str:
        if self.keep is not None:
            os.makedirs(self.keep, exist_ok=True)
            return self.keep
        try:
            with deferred():
                import tempfile
                self.path = tempfile.mkdtemp(prefix=self.prefix, dir=self.dir)
        except BaseException:
            self.__exit__()
            raise
        return self.path

    def __exit__(self, *exc):
        if self.path is not None:
            with deferred():
                shutil.rmtree(self.path, ignore_errors=True)
                self.path = None
        return False


def find(name: str) -> str:
    """Path of a tool, or ToolMissing naming the install command (never a substitute)."""
    env = os.environ.get(f"RL_EXPORTER_{name.upper()}")
    path = env or shutil.which(name)
    if not path or not os.access(path, os.X_OK):
        if os.environ.get("RL_EXPORTER_IMAGE") == "sidecar":  # the Dockerfile's slim target
            raise ToolMissing(f"`{name}` is not in this image (the sidecar target); it is the "
                              "engine this command runs: use the image's default target, which "
                              "has promtool and prometheus (docker build -t rl-exporter .)")
        raise ToolMissing(f"`{name}` is not installed (or not on PATH); it is the engine this "
                          f"command runs. Install it: {INSTALL[name]}")
    return path


def go_env() -> dict:
    """The environment for promtool and Prometheus, batch jobs here: Go's collector runs when
    the heap reaches 5x what is live (GOGC=400) instead of 2x, as block writing and long range
    queries allocate fast and keep little (doctor on 10,000 steps: 22.6 -> 20.5 s wall, the
    largest child 98 -> 148 MiB), and harder again near 2 GiB (GOMEMLIMIT). The user's own
    GOGC or GOMEMLIMIT is kept."""
    env = dict(os.environ)
    env.setdefault("GOGC", "400")
    env.setdefault("GOMEMLIMIT", "2GiB")
    return env


def run(cmd: list[str], what: str, timeout: float = 600) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=go_env())
    except subprocess.TimeoutExpired as e:
        raise ToolFailed(f"{what}: timed out after {timeout:.0f} s") from e
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
        raise ToolFailed(f"{what} failed (exit {p.returncode}): " + " | ".join(tail))
    return p.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A Prometheus on loopback over a TSDB directory (no scrape targets, no rules)."""

    def __init__(self, data_dir: str, workdir: str):
        self.binary = find("prometheus")
        self.data_dir = data_dir
        self.workdir = workdir
        self.proc = None
        self.url = None

    def start(self, timeout: float = 60.0) -> "Prometheus":
        cfg = os.path.join(self.workdir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\n")
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        with deferred():  # a signal now would leave the server running unowned
            self._log = open(os.path.join(self.workdir, "prometheus.log"), "ab")
            self.proc = subprocess.Popen(
                [self.binary, f"--config.file={cfg}", f"--storage.tsdb.path={self.data_dir}",
                 f"--web.listen-address=127.0.0.1:{port}",
                 # retention counts back from the newest block: keep any run, however old or long
                 "--storage.tsdb.retention.time=100y", "--query.max-samples=200000000",
                 # a range query over a long run is one request: no 2 min default cut-off
                 "--query.timeout=1h", "--log.level=warn"],
                stdout=self._log, stderr=self._log, env=go_env())
        try:  # interrupted while it starts (Ctrl-C, SIGTERM): the server goes too
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise ToolFailed(f"prometheus exited with {self.proc.returncode}; see "
                                     f"{os.path.join(self.workdir, 'prometheus.log')}")
                try:
                    with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                        if r.status == 200:
                            return self
                except OSError:
                    pass
                time.sleep(0.1)
            raise ToolFailed(f"prometheus was not ready within {timeout:.0f} s")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        with deferred():  # stopped and reaped, whatever signal comes meanwhile
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            self.proc = None
            if getattr(self, "_log", None):
                self._log.close()
                self._log = None

    def api(self, path: str, params: dict, timeout: float = 120.0, post: bool = True):
        body = urllib.parse.urlencode(params)
        if post:
            req = urllib.request.Request(self.url + path, data=body.encode(), method="POST")
        else:
            req = urllib.request.Request(self.url + path + ("?" + body if body else ""))
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                doc = json.loads(r.read())
        except urllib.error.HTTPError as e:
            try:
                doc = json.loads(e.read())
            except ValueError:
                raise ToolFailed(f"prometheus {path}: HTTP {e.code}") from e
        if doc.get("status") != "success":
            raise ToolFailed(f"prometheus {path} {params.get('query', '')!r}: "
                             f"{doc.get('errorType')}: {doc.get('error')}")
        return doc["data"]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
