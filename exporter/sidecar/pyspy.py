"""Hang forensics for an unmodified trainer: when `serve` sees a run stall (the RLRunStalled
condition, exporter/core/thresholds.py, checked by the same hang watch as the hook's,
exporter/stacks.py), it runs `py-spy dump --pid PID` once per hang, bounded in time and size,
and logs, spools (`<spool-out>.stacks`) and serves (GET /debug/stacks, the same loopback /
token rule) the dump as the hook does its own capture.

The trainer's pid is `--pid`, else the process that has one of the run's log files open for
writing (found in /proc: the pod must share its process namespace). A dump that cannot be
taken is counted in rl_exporter_stack_dumps_failed_total{reason} and said once per reason:
- no_pyspy: py-spy is not on PATH (or not executable);
- no_pid: no --pid and no process found writing the log, or that process is gone;
- not_permitted: ptrace denied (the sidecar needs CAP_SYS_PTRACE, or the same user);
- timeout: py-spy ran past its timeout (killed);
- error: py-spy failed otherwise (e.g. the process is not Python).
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess

from ..stacks import MAX_DUMP_BYTES, HangWatch, guarded_text_app

log = logging.getLogger("rl_exporter.sidecar")

DUMP_TIMEOUT_S = 20.0
REASONS = ("not_permitted", "no_pid", "no_pyspy", "timeout", "error")
_DENIED = ("permission denied", "operation not permitted", "eperm", "ptrace")
_GONE = ("no such process", "check that the process is running")


class PySpy:
    """Takes one dump of the trainer's stacks; says each failure's reason once."""

    def __init__(self, pid: int | None = None, binary: str | None = None,
                 timeout: float = DUMP_TIMEOUT_S, max_bytes: int = MAX_DUMP_BYTES):
        self.pid = pid
        self.binary = binary
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._said: set[str] = set()

    def dump(self, counts, header, paths=()) -> str | None:
        """header(pid, tool) + the dump, or None (counted in counts.stack_dumps_failed)."""
        binary = shutil.which(self.binary or "py-spy")
        if binary is None:
            return self._fail(counts, "no_pyspy", f"{self.binary or 'py-spy'} is not on PATH "
                              "(pip install py-spy in the sidecar's image)")
        pid = self.pid if self.pid is not None else find_writer(paths)
        if pid is None:
            return self._fail(counts, "no_pid", "no --pid, and no process has the run's log "
                              f"open for writing ({', '.join(paths) or 'no file yet'}); in "
                              "Kubernetes the pod needs shareProcessNamespace: true")
        if not os.path.exists(f"/proc/{pid}"):
            return self._fail(counts, "no_pid", f"no process {pid}")
        cmd = [binary, "dump", "--pid", str(pid), "--subprocesses"]
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return self._fail(counts, "timeout", f"py-spy dump --pid {pid} ran past "
                              f"{self.timeout:g} s (killed)")
        except OSError as e:
            return self._fail(counts, "no_pyspy", f"cannot run {binary} ({e})")
        out = p.stdout.decode("utf-8", "replace")
        if p.returncode != 0:
            err = (p.stderr.decode("utf-8", "replace") + out).strip()
            low = err.lower()
            first = err.splitlines()[0] if err else f"exit {p.returncode}"
            if any(s in low for s in _DENIED):
                return self._fail(counts, "not_permitted", f"py-spy may not read process {pid} "
                                  f"({first}): the sidecar needs CAP_SYS_PTRACE (the chart's "
                                  "sidecar.stackDumps.enabled) or the trainer's user")
            if any(s in low for s in _GONE) or not os.path.exists(f"/proc/{pid}"):
                return self._fail(counts, "no_pid", f"process {pid} is gone ({first})")
            return self._fail(counts, "error", f"py-spy dump --pid {pid} failed: {first}")
        text = header(pid, " [py-spy]") + out
        data = text.encode("utf-8", "replace")
        if len(data) > self.max_bytes:
            text = (data[:self.max_bytes].decode("utf-8", "ignore")
                    + f"\n... truncated at {self.max_bytes} bytes\n")
        return text

    def _fail(self, counts, reason: str, message: str) -> None:
        counts.stack_dumps_failed[reason] += 1
        if reason not in self._said:
            self._said.add(reason)
            log.warning("rl-exporter serve: no stack dump of the hung trainer: %s (counted in "
                        "rl_exporter_stack_dumps_failed_total{reason=%r}; said once)",
                        message, reason)
        return None


def find_writer(paths) -> int | None:
    """The process that has one of `paths` open for writing (not this one); of several
    (a launcher and its workers), the topmost. None when /proc shows none."""
    want = set()
    for p in paths:
        try:
            want.add(os.path.realpath(p))
        except OSError:
            continue
    if not want:
        return None
    me = os.getpid()
    found: dict[int, int] = {}  # pid -> parent pid
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return None
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or another user's without CAP_SYS_PTRACE
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") not in want or not _writing(pid, fd):
                    continue
            except OSError:
                continue
            found[pid] = _ppid(pid)
            break
    top = [p for p, parent in found.items() if parent not in found]
    return min(top) if top else None


def _writing(pid: int, fd: str) -> bool:
    with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & 0o3 != 0  # O_WRONLY or O_RDWR
    return False


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def finished(store) -> bool:
    """The run reached the total steps its config declares (rl_config_value)."""
    from ..status import TOTAL_PARAMETERS
    step = store.get("rl_training_step")
    for p in TOTAL_PARAMETERS:
        total = store.get("rl_config_value", {"parameter": p})
        if total is not None and total == total and total > 0:
            return step is not None and step >= total
    return False


class SidecarWatch(HangWatch):
    """The hook's hang watch over one of serve's runs (core/run.py ServedRun), taking the dump
    with py-spy. A log shows a phase only once it ends, so only the stall condition applies."""

    def __init__(self, run, spy: PySpy, paths, spool_path: str | None, thresholds=None):
        kw = {} if thresholds is None else {"thresholds": thresholds}
        super().__init__(run, **kw)
        self.spy = spy
        self._paths = paths          # () -> the run's log files (to find the trainer's pid)
        self._spool_path = spool_path

    def take(self, ex, header) -> str | None:
        if finished(ex.store):  # RLRunStalled's `unless`: a run at its last step is done
            return None
        return self.spy.dump(ex.counts, header, list(self._paths()))

    def spool_path(self, ex) -> str | None:
        return self._spool_path


def stacks_app(sidecar, token: str | None = None):
    """GET /debug/stacks on the sidecar: each run's last py-spy capture (no dump on demand:
    a request never makes the sidecar ptrace the trainer)."""
    def body() -> str:
        parts = []
        for (run, _fw), served in sorted(sidecar.runs.items()):
            watch = served.hang_watch
            last = watch.last() if watch is not None else None
            if last is not None:
                parts.append(f"# last hang capture of run {run}\n" + last["stacks"])
        return "\n\n".join(parts) if parts else (
            "# no hang captured yet: serve takes the trainer's stacks with py-spy once per "
            "stall (docs/status.md)\n")
    return guarded_text_app(body, 4 * MAX_DUMP_BYTES, token)
