"""Timestamped OpenMetrics sample lines, split into files of one TSDB block each.

promtool's OpenMetrics backfill re-reads its whole input once per block it writes, so one
file per block keeps block creation linear in the number of samples; each file is handed to
`on_close` (promtool, then removed) as soon as it is complete, so disk use stays at one
block's worth however long the log. promtool needs no TYPE/HELP lines (block files do not
store metadata), only samples and `# EOF`.

Block sizes are promtool's (and Prometheus's compaction's) ranges, 2 h x 3^k. The log's
samples go into 18 h blocks, the largest a Prometheus with the default 15 d retention makes
itself: each promtool run costs about 80 ms before its first sample, which 2 h blocks paid
108 times on a 9-day run (benchmarks/bench_doctor.py measures both).
"""
from __future__ import annotations

import math
import os

HOUR_MS = 3600 * 1000
RANGES_MS = [2 * HOUR_MS * 3 ** k for k in range(10)]  # promtool's ExponentialBlockRanges
BLOCK_MS = RANGES_MS[0]       # promtool's default block duration
LOG_BLOCK_MS = RANGES_MS[2]   # 18 h: the log's samples


def covering(span_s: float) -> int:
    """The smallest block range (ms) at least `span_s` long: a run's recording-rule samples
    in one file make one or two blocks (promtool aligns them), one read of the file each."""
    for r in RANGES_MS:
        if r >= span_s * 1000:
            return r
    return RANGES_MS[-1]


def duration_flag(block_ms: int) -> str:
    return f"--max-block-duration={block_ms // HOUR_MS}h"


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
    """Writes sample lines (in increasing time) into one file per aligned block
    (`block_ms`, 2 h by default)."""

    def __init__(self, directory: str, on_close=None, block_ms: int = BLOCK_MS):
        self.directory = directory
        self.on_close = on_close
        self.block_ms = block_ms
        os.makedirs(directory, exist_ok=True)
        self.paths: list[str] = []
        self._fh = None
        self._block = None
        self.samples = 0

    def write(self, ts: float, lines: list[str]) -> None:
        block = int(ts * 1000) // self.block_ms
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
