"""The optional replay log, written by the worker in our spool format
(exporter/logs/spool.py): `rl-exporter serve --source spool:PATH` or
`rl-exporter parse` read it back. A spool that cannot be opened or written (read-only
directory, full disk) costs the spool lines only, each counted as
rl_exporter_errors_total{kind="spool"}; the series are exported regardless.
"""
from __future__ import annotations

from .core.self_metrics import Counts


class SpoolWriter:
    def __init__(self, path: str, run: str, framework: str, counts: Counts):
        self.path, self.run, self.framework, self.counts = path, run, framework, counts
        self.lines = 0
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # OSError: caller counts

    @classmethod
    def open(cls, path: str, run: str, framework: str, counts: Counts):
        """A writer, or None with the error counted and logged once."""
        try:
            return cls(path, run, framework, counts)
        except OSError as e:
            counts.error("spool", e, f"cannot write the spool {path} ({e}); not spooling")
            return None

    def write(self, frame: dict, step, ts: float, coerce) -> None:
        from .logs.spool import encode
        data = {}
        for k, v in frame.items():
            if v is None or v.__class__ in (float, int, str):
                data[str(k)] = v
            else:
                num = coerce.number(k, v, count=False)  # numpy, bool, resolved tensors
                if num is not None:
                    data[str(k)] = num
        try:
            self._file.write(encode(step, data, ts=round(ts, 3), run=self.run,
                                    framework=self.framework) + "\n")
            self.lines += 1
        except (OSError, ValueError) as e:
            self.counts.error("spool", e, f"writing the spool {self.path} failed ({e}); "
                              "each unwritten line is counted in rl_exporter_errors_total"
                              "{kind=\"spool\"}")

    def close(self) -> None:
        try:
            self._file.close()
        except (OSError, ValueError) as e:
            self.counts.error("spool", e)
