"""Read trainer logs in any format the sidecar reads, streamed line by line (flat memory),
with the timestamp each frame's lines carry when the format has one.

Timestamps a log can carry: the spool's `ts`, a `[YYYY-MM-DD hh:mm:ss(.fff)]` logging prefix
(slime, Miles, Python logging; taken as UTC unless it names a zone) and a container runtime's
RFC 3339 prefix. A frame gets the last timestamp seen up to the line that completes it.
"""
from __future__ import annotations

import datetime as dt
import itertools
import os
import re
from dataclasses import dataclass, field

from ..logs import AUXILIARY, Reader, canonical_format, detect, detect_line
from ..logs.registry import names
from ..logs.base import RAY_PREFIX, clean
from ..logs.read import read_lines
from ..logs.traceback import Crash, Tracebacks
from ..spool import peek

_DATETIME = re.compile(r"^\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d+))?"
                       r"(Z|[+-]\d\d:?\d\d)?")
_RAY_PREFIX = re.compile("^" + RAY_PREFIX)
SNIFF_LINES = 2000
# lines read past the head when it holds only a start-up print (an argument table, a config
# dump) looking for the first training record
LOOK_FURTHER = 200_000


def line_time(line: str, fmt: str) -> float | None:
    """Unix seconds a raw log line carries, or None."""
    if fmt == "spool":
        return peek(line)[1]
    if not line[:1].isdigit() and line[:1] != "[":
        if line[:1] not in ("\x1b", "("):
            return None
        # a Ray worker's line: `(MegatronTrainRayActor pid=1) [2026-04-04 07:42:32] ...`,
        # the prefix often in ANSI colour (slime, Miles, OpenRLHF under Ray)
        line = _RAY_PREFIX.sub("", clean(line), count=1)
    m = _DATETIME.match(line)
    if m is None:
        return None
    day, hms, frac, zone = m.groups()
    try:
        t = dt.datetime.fromisoformat(f"{day}T{hms}")
    except ValueError:
        return None
    if zone and zone != "Z":
        zone = zone if ":" in zone else zone[:3] + ":" + zone[3:]
        t = t.replace(tzinfo=dt.datetime.strptime(zone.replace(":", ""), "%z").tzinfo)
    else:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp() + (float("0." + frac) if frac else 0.0)


@dataclass
class LogStats:
    path: str
    format: str = "?"
    framework: str = "auto"
    frames: int = 0
    bytes: int = 0
    rejected: dict = field(default_factory=dict)
    skipped_lines: int = 0
    other_runs: int = 0
    crash: Crash | None = None     # the exception whose traceback follows the last record


class LogError(Exception):
    pass


def open_log(path: str):
    return open(path, encoding="utf-8", errors="replace", newline="\n")


def log_lines(fh):
    """The lines of a log opened in binary, under the one line cap (logs/read.py): an
    over-long line is None, never held whole."""
    return read_lines(fh)


def _text_lines(fh):
    return (line for line in read_lines(fh) if line is not None)


def sniff(path: str, fmt: str = "auto") -> str:
    """The log's format (`fmt` unless auto)."""
    fmt = canonical_format(fmt)
    if fmt != "auto":
        return fmt
    try:
        with open(path, "rb") as fh:
            head = list(itertools.islice(_text_lines(fh), SNIFF_LINES))
    except OSError as e:
        raise LogError(f"{path}: {e}") from e
    found = detect(head, path=path)
    if found not in AUXILIARY and _startup_print(head, found):
        # a start-up configuration print (veRL's Hydra dump, a Megatron argument table) before
        # the records: read per line, so the settings it holds (the length cap, the gradient
        # clip) reach the rules as rl_config_value, as `parse` reads them
        return "auto"
    if found in AUXILIARY and len(head) == SNIFF_LINES and _records_follow(path):
        # a long start-up (Miles: a 1,300-row argument table, then SGLang's) put the first
        # training record past the head: read per line, the print and the records alike
        return "auto"
    if found is None and not any(line.strip() for line in head):
        raise LogError(f"{path}: the file is empty" if not head else
                       f"{path}: the file holds only blank lines")
    if found is None:
        raise LogError(f"{path}: no known metrics format in its first {SNIFF_LINES} lines "
                       f"(pass --format, one of: {names()})")
    return found


def _startup_print(head: list[str], found: str | None) -> bool:
    """A start-up configuration print (a veRL Hydra dump, a Megatron argument table) in the head
    of a line-by-line log (a document format is read whole)."""
    from ..logs import DOCUMENT_FORMATS, detect_format
    from ..logs.read import STARTUP_FORMATS
    if found is None or found in DOCUMENT_FORMATS:
        return False
    for line in head:
        if ("{'actor_rollout_ref'" in line or "arguments ---" in line) and \
                detect_format(clean(line)) in STARTUP_FORMATS:
            return True
    return False


def _records_follow(path: str) -> bool:
    """A training record (not a start-up print) within LOOK_FURTHER lines after the head."""
    try:
        with open(path, "rb") as fh:
            rest = itertools.islice(_text_lines(fh), SNIFF_LINES, SNIFF_LINES + LOOK_FURTHER)
            return any(detect_line(line) for line in rest)
    except OSError:
        return False


def spool_runs(path: str, lines: int = 20_000) -> list[str]:
    """Runs named in the first `lines` records of a spool (a sidecar's spool can hold
    several), in order of appearance."""
    seen: dict[str, None] = {}
    try:
        with open(path, "rb") as fh:
            for raw in itertools.islice(_text_lines(fh), lines):
                r = peek(raw)[0]
                if r is not None:
                    seen.setdefault(r)
    except OSError:
        pass
    return list(seen)


def frames(path: str, fmt: str, stats: LogStats, on_bytes=None, only_run: str | None = None,
           reader: Reader | None = None):
    """Yield (Frame, line_ts or None, framework) for one log, streamed. `only_run`: keep only
    the spool records of that run (others are counted in stats.other_runs). `reader`: the
    Reader to use (the caller watches its start-up banners); one for `fmt` otherwise."""
    stats.format = fmt
    reader = reader or Reader(fmt, where=False)
    last_ts = None
    if reader.document_format:
        with open_log(path) as fh:
            text = fh.read()
        stats.bytes = len(text)
        for r in reader.document(text):
            stats.frames += 1
            yield r.frame, None, r.framework
    else:
        done = 0
        tracebacks = Tracebacks()
        with open(path, "rb") as fh:
            for n, raw in enumerate(log_lines(fh)):
                if not n & 1023:
                    stats.bytes = done = fh.tell()
                    if on_bytes is not None:
                        on_bytes(done)
                if raw is None:  # over the line cap: one counted rejection (logs/read.py)
                    reader.too_long()
                    continue
                if only_run is not None and peek(raw)[0] not in (only_run, None):
                    stats.other_runs += 1
                    reader.skip()
                    continue
                t = line_time(raw, fmt)
                if t is not None:
                    last_ts = t
                for r in reader.feed(raw):
                    stats.frames += 1
                    tracebacks.record()
                    yield r.frame, last_ts, r.framework
                tracebacks.line(raw)
                stats.crash = tracebacks.crash
            done = fh.tell()
        for r in reader.flush():  # a record still open at the end (a log cut by a crash)
            stats.frames += 1
            yield r.frame, last_ts, r.framework
        stats.bytes = done
    stats.framework = reader.framework
    stats.rejected = dict(reader.rejected)
    stats.skipped_lines = reader.skipped


def total_bytes(paths) -> int:
    n = 0
    for p in paths:
        try:
            n += os.path.getsize(p)
        except OSError:
            pass
    return n
