"""How the run in a log ended, as doctor reports it: finished at step N of M, crashed at step N
with the exception, or cut short (the log ends at step 202 of 5,100 with no end in it).

Read from, first found wins:
1. the spool's own lifecycle events (exporter/spool.py): the last `finished` or `crashed` record
   that no later training record outdates, as the live exporter wrote it;
2. the log's last lines (exporter/logs/ending.py, the sidecar's reading too): the framework's
   end-of-training line, or a traceback, CUDA out of memory, an NCCL error or `Killed` after
   the last record; a trainer_state.json by its own fields;
3. the last step against the configured total (`rl_config_value{parameter="total_training_steps"}`
   and its aliases, as the backfill stored them, or a total the log printed): reached is
   finished; short of it is cut short.
A log that says none of these ends "unknown": doctor never calls it healthy without saying
that it cannot tell whether training finished.

The crash is the same RLRunCrashed the live rule pages on (exporter/alerts/areas/liveness.py):
postmortem/crash.py turns a crashed ending into its finding.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

FINISHED, CRASHED, CUT_SHORT, UNKNOWN = "finished", "crashed", "cut short", "unknown"
STOPPED = "stopped"   # crashed by a stop from outside (the live rule's crash_stop_signals)
TAIL = 200            # a spool's last records: where its end events are


@dataclass(frozen=True)
class RunEnd:
    state: str                    # finished | crashed | cut short | unknown
    step: object = None           # the last step the log reached (the crash's, the end's)
    total: int | None = None      # the configured (or printed) total steps, where known
    exception: str | None = None  # crashed: the type, e.g. torch.OutOfMemoryError
    message: str | None = None    # crashed: its first line
    source: str = ""              # what says so, for a reader
    line: int = 0                 # the log line that says so (0: none, or not a line)

    def crash_text(self) -> str:
        return f"{self.exception}: {self.message}" if self.message else (self.exception or "")

    def text(self) -> str:
        """One sentence: how the run ended and what says so."""
        step, of = _num(self.step), (f" of {_num(self.total)}" if self.total else "")
        said = f" ({self.source})" if self.source else ""
        if self.state == FINISHED:
            return f"finished at step {step}{of}{said}"
        if self.state == CRASHED:
            return f"crashed at step {step}{of}: {self.crash_text()}{said}"
        if self.state == STOPPED:
            return f"stopped from outside at step {step}{of}: {self.crash_text()}{said}"
        if self.state == CUT_SHORT:
            return (f"cut short: the log ends at step {step}{of}, with no end of training in it "
                    "(no closing line, no crash): the run may still be going, or died without a "
                    "word")
        return (f"not known: the log ends at step {step} and says neither that training "
                "finished nor that it crashed, and no total steps are known")

    def verdict(self) -> str:
        """The word for a log where no check fired: healthy only when the run finished."""
        if self.state in (FINISHED, CRASHED):
            return "healthy"
        why = {CUT_SHORT: "it is cut short", STOPPED: "the run was stopped before its end"}.get(
            self.state, "whether training finished is not known")
        return f"healthy as far as the log goes ({why})"

    def as_json(self) -> dict:
        out = {"state": self.state, "step": self.step, "total": self.total, "source": self.source,
               "text": self.text()}
        if self.state in (CRASHED, STOPPED):
            out.update(exception=self.exception, message=self.message)
        return out


def _num(v) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return f"{v:,}" if isinstance(v, int) else str(v)


# ------------------------------------------------------------------ the sources
def from_spool(lines, run: str | None = None) -> RunEnd | None:
    """The last finished/crashed event record of a spool's lines (of `run`, where given) that
    no later training record with a newer step outdates (a run that went on after it, in the
    same spool)."""
    from ..spool import decode_event, peek
    found = None
    if run is not None and run not in {peek(raw)[0] for raw in lines}:
        run = None      # the spool names its run otherwise (doctor --run gave another name)
    for raw in lines:
        if run is not None and peek(raw)[0] not in (run, None):
            continue
        ev = decode_event(raw)
        if ev is not None:
            if ev["event"] in (FINISHED, CRASHED):
                found = ev
            continue
        if found is None or '"data"' not in raw:
            continue
        try:
            step = json.loads(raw).get("step")
        except (ValueError, AttributeError, RecursionError):
            continue
        if not isinstance(step, (int, float)) or found.get("step") is None or step > found["step"]:
            found = None
    if found is None:
        return None
    return RunEnd(found["event"], found.get("step"), exception=found.get("exception"),
                  message=found.get("message"), source=f"the exporter's {found['event']} event")


HEAD_LINES = 2000      # a start-up print (Miles' argument table: 1,300 rows) says the total
# ... and the end: a trainer's closing line can sit hundreds of lines before the log's last
# (Ray's shutdown noise after Miles' last `perf R:` record: 288 lines in a public run)
TAIL_LINES = 2000
REST_BYTES = 1 << 20   # past the head, read the rest whole when it is this small, else its tail


def head_and_tail(path: str) -> list[str]:
    """The lines of a log that say how it ends: its first HEAD_LINES (the totals a start-up
    prints) and its last TAIL_LINES (the end-of-training line or the crash), in order. Only
    these are read: doctor's cost stays that of the parse."""
    import itertools
    import os
    from ..logs.ending import tail
    from ..logs.read import read_lines
    with open(path, "rb") as fh:
        # under the one line cap: a line past it is skipped, never held (None)
        head = [line for line in itertools.islice(read_lines(fh), HEAD_LINES) if line is not None]
        pos, size = fh.tell(), os.fstat(fh.fileno()).st_size
        rest = fh.read() if size - pos <= REST_BYTES else None
    lines = [line.rstrip("\n") for line in head]
    if rest is not None:
        return lines + rest.decode("utf-8", "replace").split("\n")
    return lines + tail(path, TAIL_LINES)


def from_log(lines, fmt: str, total: int | None) -> tuple[RunEnd | None, int | None]:
    """The log's end as the sidecar reads it (exporter/logs/ending.py), and the total steps the
    log printed (or `total`)."""
    from ..logs.ending import CRASHED as LOG_CRASHED, Endings
    from ..logs.read import Reader
    e = Endings(total)
    try:
        reader = Reader(fmt, where=False)
        for raw in lines:
            e.line(raw)
            for r in reader.feed(raw):
                e.record(r.frame.step, r.frame.data)
        for r in reader.flush():
            e.record(r.frame.step, r.frame.data)
        end = e.ending
    except Exception:  # noqa: BLE001 - an unreadable end is no ending, never a doctor failure
        return None, e.total
    if end is None:
        return None, e.total
    if end.state == LOG_CRASHED:
        where = "the log's last lines" + ("" if end.sure else ", after the last training record")
        return RunEnd(CRASHED, end.step, exception=end.exception, message=end.message,
                      source=where, line=end.line), e.total
    marker = end.marker if len(end.marker) <= 80 else end.marker[:77] + "..."
    who = f"{end.framework}'s closing line" if end.framework else "the closing line"
    return RunEnd(FINISHED, end.step, source=f"{who}: `{marker}`", line=end.line), e.total


def from_document(path: str) -> tuple[RunEnd | None, int | None]:
    """A trainer_state.json by its own fields: (its ending, its total steps)."""
    from ..logs.ending import trainer_state
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None, None
    e, total = trainer_state(doc)
    if e is None:
        return None, total
    return RunEnd(FINISHED, e.step, total, source=e.marker), total


def total_steps(prom, res) -> int | None:
    """The configured total steps the backfill stored (the first of the lifecycle's parameter
    names found), read over the whole log."""
    from ..core.lifecycle import TOTAL_PARAMETERS
    from .evaluate import query_range
    span = max(int(res.end - res.start) + 60, 60)
    want = "|".join(TOTAL_PARAMETERS)
    try:
        got = query_range(prom, f'max by (parameter) (max_over_time(rl_config_value'
                                f'{{parameter=~"{want}"}}[{span}s]))', res.end, res.end, 60)
    except Exception:  # noqa: BLE001 - no total is an answer, not a doctor failure
        return None
    got = {k: pts[-1][1] for k, pts in got.items() if pts}
    by = {dict(k).get("parameter"): v for k, v in got.items()}
    for p in TOTAL_PARAMETERS:
        v = by.get(p)
        if v is not None and v == v and v > 0:
            return int(v)
    return None


def _stop(exception: str | None) -> bool:
    """A crash that is a stop from outside (SIGTERM, Ctrl-C, sys.exit): the live RLRunCrashed's
    crash_stop_signals, which does not page for them."""
    import re
    from ..alerts.rules import CONFIG
    return bool(exception) and re.fullmatch(CONFIG["crash_stop_signals"], exception) is not None


# ------------------------------------------------------------------ doctor's reading
def of_log(path: str, fmt: str, last_step, total: int | None = None, crash=None,
           run: str | None = None) -> RunEnd:
    """How the run of one log ended: `last_step` the last step read from it, `total` the
    configured total where known, `crash` the traceback the parse saw after the last record
    (logs/traceback.py Crash), `run` the spool's run."""
    from ..logs import DOCUMENT_FORMATS
    end = None
    if fmt in DOCUMENT_FORMATS:
        end, printed = from_document(path)
    else:
        try:
            lines = head_and_tail(path)
        except OSError:
            lines = []
        end = from_spool(lines[-TAIL:], run) if fmt == "spool" else None
        printed = None
        if end is None:
            end, printed = from_log(lines, fmt, total)
    total = total or printed
    if end is None and crash is not None:
        end = RunEnd(CRASHED, last_step, exception=crash.exception, message=crash.message,
                     source=f"the traceback at line {crash.line}", line=crash.line)
    if end is not None and end.state == CRASHED and _stop(end.exception):
        end = RunEnd(STOPPED, end.step, end.total, end.exception, end.message, end.source, end.line)
    if end is not None:
        # the log's last step (the whole parse's), not the last one in the lines read here; a
        # spool's event says its own
        step = end.step if end.step is not None and (fmt == "spool" or last_step is None) \
            else last_step
        return RunEnd(end.state, step, end.total or total, end.exception, end.message,
                      end.source, end.line)
    if total is not None and last_step is not None and last_step >= total:
        return RunEnd(FINISHED, last_step, total,
                      source="the last step reached the configured total")
    if total is not None:
        return RunEnd(CUT_SHORT, last_step, total)
    return RunEnd(UNKNOWN, last_step)


def read(paths: list[str], res, prom=None) -> RunEnd:
    """How the run of the last log read ended (doctor: the backfill's result, its Prometheus)."""
    stats = res.logs[-1] if res.logs else None
    last = res.segments[-1].last_step if res.segments else res.step_at(res.end)
    total = total_steps(prom, res) if prom is not None else None
    return of_log(stats.path if stats is not None else paths[-1],
                  stats.format if stats is not None else "auto", last, total,
                  stats.crash if stats is not None else None, res.run)
