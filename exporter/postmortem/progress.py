"""Progress on stderr, only when stderr is a terminal (logs and pipes stay clean).

One line per phase of doctor and backfill: a bar where the phase has a count (bytes parsed,
range queries answered, blocks written), else its label and the seconds it has taken; each
line ends with the phase's time once it is done, so no phase runs in silence.
"""
from __future__ import annotations

import sys
import time


def on_terminal(stream=None) -> bool:
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


class Progress:
    """`total` units of work (`unit` "MiB": bytes, shown in MiB; else a count), or None for a
    phase without a count. `enabled` None: only on a terminal."""

    def __init__(self, total: int | None, label: str, stream=None, enabled: bool | None = None,
                 unit: str = "MiB"):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = on_terminal(self.stream)
        self.enabled = bool(enabled)
        self.total = total
        self.label = label
        self.unit = unit
        self.done = 0
        self._t0 = time.monotonic()
        self._next = 0.0
        self._closed = False
        self._draw()

    def _amount(self, n) -> str:
        if self.unit == "MiB":
            return f"{n / 2**20:,.0f}"
        return f"{n:,}"

    def _draw(self, end: str = "") -> None:
        if not self.enabled:
            return
        took = time.monotonic() - self._t0
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(30 * frac)
            text = (f"{self.label} [{bar:<30}] {100 * frac:5.1f}% {self._amount(self.done)}/"
                    f"{self._amount(self.total)} {self.unit}")
        else:
            text = f"{self.label} ..." + (f" {self._amount(self.done)} {self.unit}"
                                          if self.done else "")
        text += f" {took:5.1f} s" + (" done" if end else "")
        self.stream.write("\r" + text + "\x1b[K" + end)
        self.stream.flush()

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + 0.2
        self._draw()

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.total:
            self.done = max(self.done, self.total)
        self._draw("\n")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Phases:
    """The phases of one command, all on or all off: `with phases("recording rules", 12) as p:`."""

    def __init__(self, enabled: bool | None = None, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = on_terminal(self.stream) if enabled is None else bool(enabled)

    def __call__(self, label: str, total: int | None = None, unit: str = "") -> Progress:
        return Progress(total, label, self.stream, self.enabled, unit)
