"""Timestamped OpenMetrics sample lines, split into files of one TSDB block each.

promtool's OpenMetrics backfill re-reads its whole input once per 2-hour block it writes,
so one file per block keeps block creation linear in the number of samples; each file is
handed to `on_close` (promtool, then removed) as soon as it is complete, so disk use stays at
one block's worth however long the log. promtool needs no TYPE/HELP lines (block files do not
store metadata), only samples and `# EOF`.
"""
from __future__ import annotations

import math
import os

BLOCK_MS = 2 * 3600 * 1000  # promtool's default block duration


def _escape(v: str) -> str:
    if "\\" in v or "\n" in v or '"' in v:
        v = v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')
    return v


def series_text(name: str, labels: dict) -> str:
    if not labels:
        return name
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def value_text(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


class BlockFiles:
    """Writes sample lines (in increasing time) into one file per aligned 2 h block."""

    def __init__(self, directory: str, on_close=None):
        self.directory = directory
        self.on_close = on_close
        os.makedirs(directory, exist_ok=True)
        self.paths: list[str] = []
        self._fh = None
        self._block = None
        self.samples = 0

    def write(self, ts: float, lines: list[str]) -> None:
        block = int(ts * 1000) // BLOCK_MS
        if block != self._block:
            self._open(block)
        suffix = f" {ts:.3f}\n"
        self._fh.write(suffix.join(lines) + suffix)
        self.samples += len(lines)

    def _open(self, block: int) -> None:
        self.close()
        path = os.path.join(self.directory, f"{block:012d}.om")
        self._fh = open(path, "w", encoding="utf-8")
        self._block = block
        self.paths.append(path)

    def abandon(self) -> None:
        """Close the block still being written without handing it to on_close (an error
        mid-block: no half block reaches the TSDB). Nothing to do once every block closed."""
        if self._fh is not None:
            self.on_close = None
            self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.write("# EOF\n")
            self._fh.close()
            self._fh = None
            if self.on_close is not None:
                self.on_close(self.paths[-1])
