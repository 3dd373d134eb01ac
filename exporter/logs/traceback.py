"""How a log ends: the Python exception whose traceback follows the last metrics record.

A trainer that dies prints its traceback and stops writing step records, so a finished log
that ends in one records a crash (a CUDA out-of-memory, an NCCL timeout, a Ray task error)
that no step-windowed rule can see: nothing comes after it to go stale. A traceback with
records after it was survived (a worker retried, a reward function's error caught), so
each new record forgets the traceback before it.

Lines may carry a Ray actor prefix (`(TrainActor pid=1) `), a torchrun rank prefix
(`[rank0]: `) and ANSI colour; the exception line is the first unindented line after a
`Traceback (most recent call last):` that names an exception type (`torch.OutOfMemoryError:
CUDA out of memory ...`, `ray.exceptions.RayTaskError(OutOfMemoryError): ...`). The last one
wins: a chained traceback prints the outermost exception last (after "During handling of the
above exception, another exception occurred:", with or without a new header), and Ray prints
the remote frames (indented) right after its RayTaskError line, then the exception raised
there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .base import RAY_PREFIX, clean

_PREFIX = re.compile(rf"^(?:{RAY_PREFIX}|\[(?:rank|default)\d+\]:\s?)+")
_HEADER = "Traceback (most recent call last):"
# a chained exception's frames follow these (Ray prints its remote task's without a header)
_CHAINED = ("During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:")
_EXCEPTION = re.compile(
    r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure|Fault|Timeout)"
    r"(?:\([\w.]+\))?)(?::\s*(.*))?$")
# a traceback's frames and source lines are indented; stop looking after this many lines
# without the exception line (an interleaved multi-process log can lose it)
MAX_TRACEBACK_LINES = 2000
MAX_MESSAGE = 300
# not a crash: the user stopped the run, or the program chose to exit
STOPS = ("KeyboardInterrupt", "SystemExit")


@dataclass
class Crash:
    exception: str      # the type as printed, e.g. torch.OutOfMemoryError
    message: str        # its first line, cut at MAX_MESSAGE characters
    line: int           # 1-based line number of the exception line in the log

    def text(self) -> str:
        return f"{self.exception}: {self.message}" if self.message else self.exception


class Tracebacks:
    """Feed every raw line (`line`) and every record (`record`); `crash` is then the
    exception of the last traceback after the last record, or None."""

    def __init__(self):
        self.crash: Crash | None = None
        self.stopped: Crash | None = None   # a KeyboardInterrupt or SystemExit ending
        self._open = 0     # lines since the last traceback header; 0 = none open
        self._after = False  # the line before was an exception line
        self._n = 0
        self._exc_at = -10  # line of the last exception line (a chained one may follow)

    def record(self) -> None:
        self.crash = self.stopped = None

    def line(self, raw: str) -> None:
        self._n += 1
        if not self._open and not self._after and "Traceback" not in raw and \
                (" exception" not in raw or self._n - self._exc_at > 3):
            return
        text = clean(raw).rstrip("\r\n")
        text = _PREFIX.sub("", text, count=1)
        # the header may follow a progress bar on the same line (tqdm's stderr, unflushed)
        if _HEADER in text or (text.startswith(_CHAINED) and self._n - self._exc_at <= 3):
            self._open, self._after = 1, False
            return
        if self._after:  # frames straight after an exception line: Ray's remote traceback
            self._after = False
            if text[:1].isspace():
                self._open = 1
                return
        if not self._open:
            return
        self._open += 1
        if self._open > MAX_TRACEBACK_LINES:
            self._open = 0
            return
        if not text or text[:1].isspace():
            return
        m = _EXCEPTION.match(text)
        if m is None:
            return
        self._open, self._after = 0, True
        self._exc_at = self._n
        found = Crash(m.group(1), (m.group(2) or "").strip()[:MAX_MESSAGE], self._n)
        if found.exception.rsplit(".", 1)[-1] in STOPS:
            self.crash, self.stopped = None, found
        else:
            self.crash, self.stopped = found, None
