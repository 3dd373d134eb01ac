"""rl-exporter's own JSONL spool: the format (version 1) and its one writer.

One frame per line:

    {"spool": 1, "ts": 1724312345.12, "run": "grpo-7b", "framework": "verl",
     "step": 12, "data": {"actor/entropy": 0.52, "actor/pg_loss": "NaN", "x": null}}

- `spool` (required) is the format version; `data` (required) maps raw trainer keys to
  a number, a string, or null (absent this step);
- non-finite numbers are the strings "NaN", "Infinity", "-Infinity" so every JSON
  parser reads the file (bare NaN, as Python's json writes it, is accepted too);
  any other string value is kept as a string (state-valued keys);
- `step` (int, float or null), `ts` (Unix seconds), `run`, `framework` are optional;
  `framework` is the vocabulary the keys belong to (default auto);
- a lifecycle event (exporter/core/lifecycle.py) is a record of its own, without `data`, so a
  reader that does not know `event` skips it:

    {"spool": 1, "ts": 1724312399.5, "run": "grpo-7b", "event": "finished", "step": 500}
    {"spool": 1, "ts": ..., "run": ..., "event": "crashed", "step": 12,
     "exception": "torch.OutOfMemoryError", "message": "CUDA out of memory. Tried to ..."}

  `event` is finished, crashed, paused or resumed; `decode_event(line)` reads one back;
- the run's settings (rl_config_value{parameter}: n_mini, max_grad_norm, ..., as an
  integration read them from the trainer's config) are a record of their own too, so a
  post-mortem of the spool reads the run as its live rules did:

    {"spool": 1, "ts": 1724312340.0, "run": "grpo-7b", "settings": {"n_mini": 8, "max_grad_norm": 1.0}}

  a reader hands them on with the next frame, under SETTINGS_KEY;
- `rl-exporter serve --spool-out PATH` adds `src` (the file the frame came from), `off`
  (byte offset in it after the frame's record, when that is a resume point), `gen` (the
  file's generation: bumped at every truncation or new file at the path) and `ino` (its
  inode): serve resumes from them exactly once after a crash, and after a lost state file.

The hook writes it with `Exporter(spool=PATH)` (SpoolWriter, without src/off), the
sidecar with SpoolFile; `rl-exporter parse` and `serve --source spool:PATH` read it back
(exporter/logs/spool.py). This module imports no log parser: the hook loads it.

Reading: `decode(line)` is a record whole; `peek(line)` its run and ts from the head alone,
for readers that only route or time records (doctor and backfill, on every line of a spool);
`tail(path)` the last record per source file (serve's resume). Nothing else parses the format.

Writing: each line is one write(2) on an O_APPEND descriptor, so it is in the file whole
or not at all (a short write on a full disk is cut back off); a line that could not be
written is reported to the caller, who counts it. Nothing here raises into a caller.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import threading

log = logging.getLogger("rl_exporter")

VERSION = 1

_DECODE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode_value(v):
    if v.__class__ is float and v - v != 0.0:
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    return v


def encode(frame_step, data: dict, **extra) -> str:
    rec = {"spool": VERSION}
    rec.update(extra)
    rec["step"] = frame_step
    rec["data"] = {k: encode_value(v) for k, v in data.items()}
    return json.dumps(rec, separators=(",", ":"), allow_nan=False)


EVENTS = ("finished", "crashed", "paused", "resumed")


def encode_event(rec: dict, **extra) -> str:
    """A lifecycle event record (`rec`: event, step, and exception/message for a crash)."""
    out = {"spool": VERSION}
    out.update(extra)
    out["event"] = rec["event"]
    step = rec.get("step")
    if step.__class__ is float and step.is_integer():
        step = int(step)  # the worker keeps steps as floats; 12.0 is step 12
    out["step"] = step
    for k in ("exception", "message"):
        if rec.get(k):
            out[k] = str(rec[k])
    return json.dumps(out, separators=(",", ":"), allow_nan=False, default=str)


# The key under which a reader hands a settings record to the pipeline with the next frame
# (core/worker.py sets rl_config_value from it); no trainer logs a key of this name.
SETTINGS_KEY = "rl_exporter/settings"


def encode_settings(values: dict, **extra) -> str:
    """A run-settings record: {parameter: number}, as rl_config_value{parameter} has them."""
    out = {"spool": VERSION}
    out.update(extra)
    out["settings"] = {str(k): encode_value(float(v)) for k, v in values.items()}
    return json.dumps(out, separators=(",", ":"), allow_nan=False)


def settings_record(obj) -> dict | None:
    """A decoded JSON object's settings ({parameter: float}), or None if it is not a settings
    record; values that are not numbers are left out."""
    if not isinstance(obj, dict) or obj.get("spool") != VERSION or "data" in obj or \
            "event" in obj or not isinstance(obj.get("settings"), dict):
        return None
    out = {}
    for k, v in obj["settings"].items():
        if v.__class__ is str:
            v = _DECODE.get(v, v)
        if isinstance(k, str) and isinstance(v, (int, float)) and v.__class__ is not bool:
            out[k] = float(v)
    return out


def event_record(obj) -> dict | None:
    """A decoded JSON object as a lifecycle event record, or None if it is not one."""
    if not isinstance(obj, dict) or obj.get("spool") != VERSION or "data" in obj or \
            obj.get("event") not in EVENTS:
        return None
    return obj


def decode_event(line) -> dict | None:
    """One spool line as a lifecycle event record, or None for anything else."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    if '"event"' not in line or not line.lstrip().startswith("{"):
        return None
    try:
        return event_record(json.loads(line))
    except (ValueError, RecursionError):
        return None


def decode_data(data: dict) -> dict | None:
    """A record's `data` as a frame ({key: float|int|str|None}), or None if it is not one."""
    out = {}
    for k, v in data.items():
        if not isinstance(k, str):
            return None
        if v.__class__ is str:
            v = _DECODE.get(v, v)
        elif v is not None and not isinstance(v, (int, float)):
            return None  # nested containers are not frames
        out[k] = v
    return out


# encode() writes the version, then ts and run (the extras) before step and data: a head of
# this many characters holds them
PEEK_CHARS = 400
_PEEK_RUN = re.compile(r'"run":\s*"([^"\\]*(?:\\.[^"\\]*)*)"')
_PEEK_TS = re.compile(r'"ts":\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')


def peek(line: str) -> tuple[str | None, float | None]:
    """(run, ts) of a spool record, read from its head without parsing the record (whose
    data is most of it): (None, None) for a line that is not a spool record, and None for
    what a record does not hold."""
    if line[:1] != "{" and not line.lstrip().startswith("{"):
        return None, None
    if line.find('"spool"', 0, PEEK_CHARS) < 0:
        return None, None
    run = ts = None
    i = line.find('"run":', 0, PEEK_CHARS)  # str.find, then the pattern only where it starts
    m = _PEEK_RUN.match(line, i, PEEK_CHARS) if i >= 0 else None
    if m is not None:
        run = m.group(1)
        if "\\" in run:
            try:
                run = json.loads(f'"{run}"')
            except ValueError:
                run = None
    i = line.find('"ts":', 0, PEEK_CHARS)
    m = _PEEK_TS.match(line, i, PEEK_CHARS) if i >= 0 else None
    if m is not None:
        ts = float(m.group(1))
    return run, ts


def decode(line) -> dict | None:
    """One spool line as its record (a dict with `spool` == VERSION and a `data` object),
    or None for anything else (another format's line, a torn or foreign record)."""
    if isinstance(line, bytes):
        if not line.lstrip().startswith(b"{"):
            return None
    elif not line.lstrip().startswith("{"):
        return None
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(rec, dict) or rec.get("spool") != VERSION or \
            not isinstance(rec.get("data"), dict):
        return None
    return rec


class SpoolFile:
    """An open spool: append(line) puts it in the file whole, or returns the OSError."""

    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # OSError: caller
        try:
            self.size = os.fstat(self.fd).st_size
        except OSError:
            self.size = 0

    def append(self, line: str) -> OSError | None:
        data = (line + "\n").encode()
        try:
            n = os.write(self.fd, data)
            if n == len(data):
                self.size += n
                return None
            err = OSError(28, f"short write ({n} of {len(data)} bytes)")
        except (OSError, ValueError) as e:
            err = e if isinstance(e, OSError) else OSError(9, str(e))
        try:  # never leave a torn line for the next record to run into
            os.ftruncate(self.fd, self.size)
        except (OSError, ValueError):
            pass
        return err

    def sync(self) -> OSError | None:
        try:
            os.fsync(self.fd)
        except (OSError, ValueError) as e:
            return e if isinstance(e, OSError) else OSError(9, str(e))
        return None

    def close(self) -> OSError | None:
        if self.fd < 0:
            return None
        fd, self.fd = self.fd, -1
        try:
            os.close(fd)
        except OSError as e:
            return e
        return None


class SpoolWriter:
    """The hook's spool (Exporter(spool=PATH)), written by the worker. A spool that cannot
    be opened or written (read-only directory, full disk) costs the spool lines only, each
    counted as rl_exporter_errors_total{kind="spool"}; the series are exported regardless."""

    def __init__(self, path: str, run: str, framework: str, counts):
        self.path, self.run, self.framework, self.counts = path, run, framework, counts
        self.lines = 0
        self._file = SpoolFile(path)  # OSError: caller counts
        self._lock = threading.Lock()  # the worker's frames, and a pause's events from its thread

    @classmethod
    def open(cls, path: str, run: str, framework: str, counts):
        """A writer, or None with the error counted and logged once."""
        try:
            return cls(path, run, framework, counts)
        except OSError as e:
            counts.error("spool", e, f"cannot write the spool {path} ({e}); not spooling")
            return None

    def write(self, frame: dict, step, ts: float, coerce) -> None:
        data = {}
        for k, v in frame.items():
            if v is None or v.__class__ in (float, int, str):
                data[str(k)] = v
            else:
                num = coerce.number(k, v, count=False)  # numpy, bool, resolved tensors
                if num is not None:
                    data[str(k)] = num
        try:
            line = encode(step, data, ts=round(ts, 3), run=self.run, framework=self.framework)
        except ValueError as e:  # not encodable
            self._failed(e)
            return
        self._append(line)

    def event(self, rec: dict) -> None:
        """A lifecycle event record (exporter/core/lifecycle.py)."""
        try:
            line = encode_event(rec, ts=round(float(rec["ts"]), 3), run=self.run,
                                framework=self.framework)
        except (ValueError, TypeError, KeyError) as e:
            self._failed(e)
            return
        self._append(line)

    def settings(self, values: dict, ts: float) -> None:
        """The run's settings as rl_config_value has them ({parameter: number})."""
        try:
            line = encode_settings(values, ts=round(float(ts), 3), run=self.run,
                                   framework=self.framework)
        except (ValueError, TypeError) as e:
            self._failed(e)
            return
        self._append(line)

    def _append(self, line: str) -> None:
        with self._lock:
            err = self._file.append(line)
        if err is None:
            self.lines += 1
        else:
            self._failed(err)

    def _failed(self, err) -> None:
        self.counts.error("spool", err, f"writing the spool {self.path} failed ({err}); "
                          "each unwritten line is counted in rl_exporter_errors_total"
                          "{kind=\"spool\"}")

    def close(self) -> None:
        err = self._file.close()
        if err is not None:
            self.counts.error("spool", err)


def tail(path: str, window: int = 1 << 20) -> dict:
    """{src: (gen, off, record)} of the last record per source file in the last window of
    an existing spool; a torn last line (the process died mid-write) is cut off so the
    file stays valid JSONL."""
    out: dict = {}
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return out
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - window)
        data = os.pread(fd, size - start, start)
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n")
            keep = start + cut + 1 if cut >= 0 else start
            os.ftruncate(fd, keep)
            log.warning("spool %s ended in a torn record: cut at byte %d", path, keep)
            data = data[:cut + 1] if cut >= 0 else b""
        for raw in data.split(b"\n"):
            rec = decode(raw)
            if rec is None:
                continue
            src, off = rec.get("src"), rec.get("off")
            if isinstance(src, str) and isinstance(off, int):
                gen = rec.get("gen", 0)
                prev = out.get(src)
                if prev is None or (gen, off) >= prev[:2]:
                    out[src] = (gen, off, rec)
    finally:
        os.close(fd)
    return out
