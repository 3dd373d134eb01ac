"""A progress bar on stderr, only when stderr is a terminal (logs and pipes stay clean)."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str, stream=None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled and total > 0
        self.total = total
        self.label = label
        self._next = 0.0

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + 0.2
        frac = min(1.0, done / self.total)
        bar = "#" * int(30 * frac)
        self.stream.write(f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}% "
                          f"{done / 2**20:,.0f}/{self.total / 2**20:,.0f} MiB")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._next = 0.0
            self.update(self.total)
            self.stream.write("\n")
            self.stream.flush()
