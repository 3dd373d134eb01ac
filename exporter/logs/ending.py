"""How a log ends: finished (the framework's own end-of-training line) or crashed (a traceback,
CUDA out of memory, an NCCL error, `Killed` after the last training record), and the total
steps the log printed on the way.

    e = Endings()
    for line in lines:
        e.line(line)                       # every raw line, first
        for frame in frames_it_completed:  # then the records that line completed (a parser's)
            e.record(frame.step, frame.data)
    e.ending   # Ending(state, step, exception, message, marker, framework, sure) or None
    e.total    # total training steps the log printed, or None

`ending(lines)` does this over a list of lines (the last ~200 are enough for the markers; a
total printed at start-up, or slime's rollout count, needs the whole log or `total=`), finding
the records with the log's own parser.

Lines are read after ANSI codes and carriage-return redraws are cleaned, behind any prefix (a
Ray actor's `(TaskRunner pid=1) `, `[rank0]: `, a container runtime's timestamp): no marker is
anchored at the start of a line.

Finished, per framework (exporter/logs markers research; each tested on real output in
tests/unit/logs/test_ending.py):
- veRL: `Final validation metrics: ` (printed once, by the driver, when the last step is done);
- HF Trainer / TRL / ms-swift / LLaMA-Factory console: the `{'train_runtime': ...,
  'train_samples_per_second': ...}` summary train() logs on a normal return (never after an
  exception), JSON (`"train_runtime":`) in ms-swift's logging.jsonl; `Training completed.`
  (HF at INFO, TRL's scripts' `✅ Training completed.`); `***** train metrics *****`;
- ms-swift: `End time of running main: ` (only when main() returns);
- LLaMA-Factory trainer_log.jsonl: the closing record, with current_steps/total_steps and no
  loss of any kind (the 2023 schema: all of them null);
- AReaL: `Training completes!` only with the last `Train step N/M done.` at N == M and no
  `Training failed with exception:` (AReaL prints it after an exception too);
- OpenRLHF: the last episode's bar at its end, `Episode [E/E]: 100%|...| N/N`;
- slime / Miles: the rollout record `perf R:` / `rollout R:` of the last rollout (R ==
  num_rollout - 1 from the argument table);
- Ray: `Job '...' succeeded` (the entrypoint exited 0).
A marker followed by a training record with a new step (or none) was a phase's end, not the
run's (a second train() call in the same process): it is forgotten, as is a crash followed by
new training records (an exception caught and logged, a worker retried).

Crashed, after the last record: the last traceback's exception (logs/traceback.py: Ray's
RayTaskError gives way to the exception raised in the task), an NCCL watchdog's abort
(NCCLError), CUDA out of memory, a bare `Killed` or a child killed with exit code -9
(SIGKILL), AReaL's `Training failed with exception:`, Ray's `Job '...' failed`. A crash whose
process certainly ended (Hydra's `Error executing job`, the HYDRA_FULL_ERROR hint, a watchdog
taking the process down, SIGKILL, a failed Ray job, AReaL's failure line) is `sure`; a bare
traceback is not: a trainer can log one and go on, so serve waits for the log to go quiet
before it reads the run as crashed. A marker is sure when seen; a crash printed after a marker
wins over it (veRL saves its last checkpoint after the marker), a marker printed after a crash
wins over it (Ray's job succeeded: the exception was caught).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .base import _CRI, RAY_PREFIX, clean
from .traceback import Tracebacks

FINISHED, CRASHED = "finished", "crashed"
TAIL_LINES = 200
MAX_MESSAGE = 300


@dataclass(frozen=True)
class Ending:
    state: str                    # "finished" | "crashed"
    step: object = None           # the last training record's step, when it carried one
    exception: str | None = None  # crashed: the type, e.g. torch.OutOfMemoryError, SIGKILL
    message: str | None = None    # crashed: its first line
    marker: str = ""              # the line that says so (cleaned)
    framework: str | None = None  # whose end-of-training line it is (None: generic)
    sure: bool = True             # False: a bare traceback (the trainer may have gone on)
    line: int = 0                 # the line (of those fed) that says so


_PREFIX = re.compile(rf"^(?:{RAY_PREFIX}|\[(?:rank|default)\d+\]:\s?)+")

# finished: (framework, pattern); each only ever printed on a normal end
_FINISH = (
    ("verl", re.compile(r"Final validation metrics: ")),
    ("trl", re.compile(r"""\{['"]train_runtime['"]:\s*'?[-+0-9.eEinfa]+'?,\s*['"]train_samples_per_second""")),
    ("trl", re.compile(r"Training completed\.")),
    ("trl", re.compile(r"^\s*\*{5} train metrics \*{5}\s*$")),
    ("swift", re.compile(r"End time of running main: ")),
    ("ray", re.compile(r"Job '[^']+' succeeded")),
)
_AREAL_DONE = re.compile(r"Training completes! Total time elapsed")
_AREAL_FAILED = re.compile(r"Training failed with exception:\s*(.*)$")
_AREAL_STEP = re.compile(r"Train step (\d+)/(\d+) done")
_EPISODE_END = re.compile(r"Episode \[(\d+)/\1\]:\s*100%\|[^|]*\|\s*(\d+)/\2\b")
_EPISODE = re.compile(r"Episode \[(\d+)/(\d+)\]:[^|]*\|[^|]*\|\s*(\d+)/(\d+)\b")
_ROLLOUT_RECORD = re.compile(r"(?:^|[\s\]:-])(?:perf|rollout) (\d+): \{")
_ARG = re.compile(r"^\s+(num_rollout|num_steps_per_rollout|rollout_batch_size|"
                  r"n_samples_per_prompt|global_batch_size) \.+ (\S+)\s*$")
_LF_CLOSING = re.compile(r'^\s*\{.*"current_steps":\s*\d+.*"total_steps":\s*\d+')
_LF_LOSSES = ("loss", "eval_loss", "predict_loss")
# totals
_VERL_TOTAL = re.compile(r"Total training steps: (\d+)")
_HF_TOTAL = re.compile(r"Total (?:optimization )?steps = ([\d,]+)")
_SWIFT_TOTAL = re.compile(r"""['"](?:global_step/max_steps|iteration)['"]:\s*['"](\d+)/(\d+)['"]""")
_LF_TOTAL = re.compile(r'"total_steps":\s*(\d+)')
# crashes
_FATAL_CONTEXT = re.compile(r"Error executing job with overrides|HYDRA_FULL_ERROR=1")
_NCCL = re.compile(r"(Watchdog caught collective operation timeout.*|Process group watchdog "
                   r"thread terminated with exception.*|To avoid data inconsistency, we are "
                   r"taking the entire process down.*|Exception \(either an error or timeout\) "
                   r"detected by watchdog.*)")
_NCCL_ERROR = re.compile(r"(NCCL error.*|nccl(?:InternalError|UnhandledCudaError|SystemError|"
                         r"RemoteError|InvalidUsage)\b.*)")
_OOM = re.compile(r"(CUDA out of memory.*)")
_KILLED = re.compile(r"^(?:Killed|已杀死)\s*$|: line \d+: +\d+ Killed\b")
_SIGKILL = re.compile(r"exitcode\s*:\s*-9\b|Signal 9 \(SIGKILL\) received by PID")
_EXITCODE = re.compile(r"failed \(exitcode: (-?\d+)\)")
_JOB_FAILED = re.compile(r"Job '[^']+' failed")
_JOB_STATUS = re.compile(r"Status message: (.*)$")
# one search decides whether a line needs a closer look (most lines do not)
_TRIGGER = re.compile(
    r"validation metrics|train_runtime|Training complete|train metrics|End time of running"
    r"|Job '|Training failed|Train step|Episode \[|perf \d|rollout \d| \.{3,} |current_steps"
    r"|Total training steps|Total (?:optimization )?steps =|max_steps|iteration"
    r"|Error executing job|HYDRA_FULL_ERROR|[Ww]atchdog|entire process down|NCCL error|nccl[A-Z]"
    r"|CUDA out of memory|Killed|已杀死|exitcode|SIGKILL|Status message")
# Every match of _TRIGGER holds one of these: substring tests that skip the regex on the lines
# it would not match (its 29 alternatives are tried at every character of a metrics line:
# 142 us on 3.6 KB, against 43 us for these).
_TRIGGER_WORDS = (
    "validation metrics", "train_runtime", "Training complete", "train metrics",
    "End time of running", "Job '", "Training failed", "Train step", "Episode [", "perf ",
    "rollout ", " ...", "current_steps", "Total training steps", "steps =", "max_steps",
    "iteration", "Error executing job", "HYDRA_FULL_ERROR", "atchdog", "entire process down",
    "NCCL error", "nccl", "CUDA out of memory", "Killed", "已杀死", "exitcode", "SIGKILL",
    "Status message")
_VALIDATION = ("val-", "val/", "test_score/", "eval_", "eval/", "val_")
# what a validation record carries besides its own keys (HF's epoch, ms-swift's progress)
_BOOKKEEPING = frozenset(("epoch", "step", "global_step", "global_step/max_steps", "percentage",
                          "elapsed_time", "remaining_time", "memory(GiB)", "train_speed(iter/s)",
                          "current_steps", "total_steps", "training/global_step"))


def _validation(data: dict) -> bool:
    """A validation record: validation keys, and nothing else but its step and progress."""
    seen = False
    for k in data:
        if not isinstance(k, str):
            return False
        if k.startswith(_VALIDATION):
            seen = True
        elif k not in _BOOKKEEPING:
            return False
    return seen


_SIGNALS = {"-9": "SIGKILL", "-6": "SIGABRT", "-11": "SIGSEGV", "-15": "SIGTERM", "-7": "SIGBUS"}


def _num(text: str) -> int | None:
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return None


class Endings:
    """The ending of one log, read line by line (feed line() before record() for a line)."""

    def __init__(self, total: int | None = None):
        self.total = total            # total training steps the log printed (or given)
        self.rollouts = None          # slime/Miles num_rollout
        self._args: dict = {}
        self._tb = Tracebacks()
        self._n = 0
        self._step = None             # the last training record's step
        self._records = 0
        self._marker = None           # (line no, step then, framework, text)
        self._crash = None            # (line no, step then, exception, message, text, sure)
        self._fatal = None            # line no of a sure crash context (Hydra's job error)
        self._areal_failed = None     # (line no, message)
        self._areal_done = None       # (line no, text)
        self._areal_step = None       # (N, M) of the last `Train step N/M done.`
        self._record_line = 0         # the line the last training record completed on

    # ------------------------------------------------------------ feeding
    def line(self, raw: str) -> None:
        self._n += 1
        tb = self._tb
        tb.line(raw)
        crash = tb.crash or (tb.stopped if tb.stopped is not None and
                             tb.stopped.exception.endswith("KeyboardInterrupt") else None)
        if crash is not None and (self._crash is None or self._crash[0] < crash.line) and \
                crash.line > self._record_line:
            # sure where the job's end was said before it (Hydra prints its line first)
            fatal = self._fatal is not None and self._fatal > self._record_line
            self._set_crash(crash.exception, crash.message, crash.line, sure=fatal)
        if not any(w in raw for w in _TRIGGER_WORDS) or _TRIGGER.search(raw) is None:
            return
        text = clean(raw).rstrip("\r\n")
        m = _CRI.match(text)
        if m is not None:
            text = text[m.end():]
        text = _PREFIX.sub("", text, count=1)
        self._totals(text)
        for fw, rx in _FINISH:
            if rx.search(text) and '"log_history"' not in text:
                self._set_marker(fw, text)
                return
        self._framework_ends(text)
        self._crashes(text)

    def record(self, step=None, data: dict | None = None) -> None:
        """A record completed on the line fed last (its step, when it has one; its data, when
        given). A training record with a new step (or none) after a marker or a crash says the
        run went on; a validation record does not (veRL's final validation is one, as are the
        eval dicts a script's evaluate() prints after train())."""
        if data and _validation(data):
            return
        self._records += 1
        n = self._n
        for attr in ("_marker", "_crash"):
            ev = getattr(self, attr)
            if ev is None:
                continue
            if n == ev[0]:  # a record the marker's own line completed came before it
                if step is not None:
                    setattr(self, attr, (ev[0], step) + ev[2:])
            elif step is None or ev[1] is None or step != ev[1]:
                setattr(self, attr, None)
                if attr == "_crash":
                    self._fatal = None
                    self._areal_failed = None
        if self._areal_done is not None and n > self._areal_done[0]:
            self._areal_done = None
        if step is not None:
            self._step = step
        self._record_line = n

    # ------------------------------------------------------------ what the lines say
    def _last_record_line(self) -> int:
        return self._record_line

    def _set_marker(self, framework: str, text: str) -> None:
        self._marker = (self._n, self._step, framework, text.strip()[:MAX_MESSAGE])

    def _set_crash(self, exception: str, message: str, line: int, sure: bool,
                   text: str | None = None) -> None:
        prev = self._crash
        if prev is not None and prev[5] and not sure and prev[0] >= self._last_record_line():
            # a sure crash stays sure; a traceback after it names the exception better
            sure = True
        if prev is not None and prev[2] == "SIGKILL" and exception != "SIGKILL":
            return  # the kill is the cause; what the launcher printed after it is not
        self._crash = (line, self._step, exception, (message or "")[:MAX_MESSAGE],
                       (text or f"{exception}: {message}").strip()[:MAX_MESSAGE], sure)

    def _totals(self, text: str) -> None:
        m = _VERL_TOTAL.search(text) or _HF_TOTAL.search(text)
        if m is not None:
            self.total = _num(m.group(1)) or self.total
            return
        m = _SWIFT_TOTAL.search(text)
        if m is not None:
            self.total = int(m.group(2)) or self.total
            return
        m = _AREAL_STEP.search(text)
        if m is not None:
            self._areal_step = (int(m.group(1)), int(m.group(2)))
            self.total = int(m.group(2)) or self.total
            return
        m = _EPISODE.search(text)
        if m is not None:
            episodes, per = int(m.group(2)), int(m.group(4))
            if episodes and per:
                self.total = episodes * per
            return
        m = _ARG.match(text)
        if m is not None:
            self._args[m.group(1)] = _num(m.group(2))
            self._slime_total()
            return
        if '"total_steps"' in text:
            m = _LF_TOTAL.search(text)
            if m is not None:
                self.total = int(m.group(1)) or self.total

    def _slime_total(self) -> None:
        a = self._args
        rollouts = a.get("num_rollout")
        if not rollouts:
            return
        self.rollouts = rollouts
        per = a.get("num_steps_per_rollout")
        if not per:
            rb, n, gbs = (a.get(k) for k in ("rollout_batch_size", "n_samples_per_prompt",
                                             "global_batch_size"))
            per = rb * n // gbs if rb and n and gbs and (rb * n) % gbs == 0 else None
        if per:
            self.total = rollouts * per  # train steps: slime's `step N` records count them

    def _framework_ends(self, text: str) -> None:
        if _AREAL_DONE.search(text):
            self._areal_done = (self._n, text.strip())
            return
        m = _EPISODE_END.search(text)
        if m is not None:
            self._set_marker("openrlhf", text)
            return
        if self.rollouts:
            m = _ROLLOUT_RECORD.search(text)
            if m is not None and int(m.group(1)) == self.rollouts - 1:
                self._set_marker("slime", text)
                return
        if '"current_steps"' in text and _LF_CLOSING.match(text):
            try:
                rec = json.loads(text.strip())
            except ValueError:
                return
            if isinstance(rec, dict) and all(rec.get(k) is None for k in _LF_LOSSES):
                self._set_marker("llamafactory", text)

    def _crashes(self, text: str) -> None:
        n = self._n
        m = _AREAL_FAILED.search(text)
        if m is not None:
            self._areal_failed = (n, m.group(1).strip())
            tb = self._crash
            if tb is not None and tb[0] >= self._last_record_line():
                self._set_crash(tb[2], tb[3], tb[0], sure=True, text=tb[4])
            else:
                self._set_crash("Exception", m.group(1).strip(), n, sure=True, text=text)
            return
        if _FATAL_CONTEXT.search(text):
            self._fatal = n
            tb = self._crash
            if tb is not None and tb[0] >= self._last_record_line():
                self._set_crash(tb[2], tb[3], tb[0], sure=True, text=tb[4])
            return
        m = _NCCL.search(text)
        if m is not None:
            self._set_crash("NCCLError", m.group(1), n, sure=True, text=text)
            return
        if _KILLED.search(text) or _SIGKILL.search(text):
            self._set_crash("SIGKILL", "killed (SIGKILL: the out-of-memory killer, most often)",
                            n, sure=True, text=text)
            return
        m = _EXITCODE.search(text)
        if m is not None and m.group(1) in _SIGNALS:
            sig = _SIGNALS[m.group(1)]
            self._set_crash(sig, f"a worker died by {sig} ({text.strip()[:200]})", n, sure=True,
                            text=text)
            return
        if _JOB_FAILED.search(text):
            tb = self._crash
            if tb is not None and tb[0] >= self._last_record_line():
                self._set_crash(tb[2], tb[3], tb[0], sure=True, text=tb[4])
            else:
                self._set_crash("RayJobFailed", text.strip(), n, sure=True, text=text)
            return
        m = _JOB_STATUS.search(text)
        if m is not None and self._crash is not None and self._crash[2] == "RayJobFailed":
            self._set_crash("RayJobFailed", m.group(1), n, sure=True, text=text)
            return
        crash = self._crash
        if crash is not None and crash[0] >= self._last_record_line():
            return  # a traceback's exception names it better
        m = _OOM.search(text)
        if m is not None:
            self._set_crash("torch.OutOfMemoryError", m.group(1), n, sure=False, text=text)
            return
        m = _NCCL_ERROR.search(text)
        if m is not None:
            self._set_crash("NCCLError", m.group(1), n, sure=False, text=text)

    # ------------------------------------------------------------ the reading
    @property
    def ending(self) -> Ending | None:
        crash, marker = self._crash, self._marker
        if crash is not None and crash[0] <= self._last_record_line():
            crash = None
        if crash is not None and (marker is None or crash[0] > marker[0]):
            line, step, exc, msg, text, sure = crash
            return Ending(CRASHED, self._step if step is None else step, exc, msg, text,
                          None, sure, line)
        if marker is not None:
            line, step, fw, text = marker
            return Ending(FINISHED, self._step if step is None else step, marker=text,
                          framework=fw, line=line)
        done = self._areal_done
        if done is not None and self._areal_failed is None:
            last = self._areal_step
            if last is not None and last[0] == last[1]:
                return Ending(FINISHED, self._step, marker=done[1], framework="areal",
                              line=done[0])
        return None


def trainer_state(doc) -> tuple[Ending | None, int | None]:
    """(how it ends, its total steps) of an HF trainer_state.json document: finished when its
    last log_history entry is train()'s summary (train_runtime: written by save_state() after
    a normal return), or when a checkpoint's state says the loop stopped
    (TrainerControl.should_training_stop, transformers 4.41+: max_steps reached or an early
    stop) or global_step reached max_steps (older files)."""
    if not isinstance(doc, dict):
        return None, None
    total = doc.get("max_steps")
    total = total if isinstance(total, int) and not isinstance(total, bool) and total > 0 \
        else None
    step = doc.get("global_step")
    step = step if isinstance(step, (int, float)) and not isinstance(step, bool) else None
    hist = doc.get("log_history")
    last = hist[-1] if isinstance(hist, list) and hist and isinstance(hist[-1], dict) else {}
    if "train_runtime" in last:
        return Ending(FINISHED, step, marker="log_history ends in train_runtime",
                      framework="trl"), total
    ctrl = ((doc.get("stateful_callbacks") or {}).get("TrainerControl") or {}).get("args") \
        if isinstance(doc.get("stateful_callbacks"), dict) else None
    if isinstance(ctrl, dict) and ctrl.get("should_training_stop") is True:
        return Ending(FINISHED, step, marker="TrainerControl.should_training_stop",
                      framework="trl"), total
    if isinstance(ctrl, dict):
        return None, total  # the state says whether it stopped: it did not
    if step is not None and total is not None and step >= total:
        return Ending(FINISHED, step, marker=f"global_step {step:g} of max_steps {total}",
                      framework="trl"), total
    return None, total


def ending(lines, total: int | None = None, fmt: str = "auto") -> Ending | None:
    """How a log's lines end (the last TAIL_LINES of a log are enough for the markers): the
    records are found with the log's parser (`fmt`, auto-detected by default)."""
    from .read import Reader
    e = Endings(total)
    reader = Reader(fmt, where=False)
    for raw in lines:
        e.line(raw)
        for r in reader.feed(raw):
            e.record(r.frame.step, r.frame.data)
    for r in reader.flush():
        e.record(r.frame.step, r.frame.data)
    return e.ending


TAIL_BYTES = 8 << 20  # at most this much of a log's last lines is kept


def tail(path: str, n: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> list[str]:
    """The last n lines of a file (a log's end), read backwards from its end in blocks. A line
    longer than the line cap (logs/read.MAX_LINE_BYTES) is skipped without being held, so the
    lines before it are still found, and at most max_bytes of lines are kept: a crash that cut
    a 200 MB line short costs what any log's end costs (it was read whole, and copied at every
    block: 1.26 GB and 19 s)."""
    import os
    from .read import MAX_LINE_BYTES
    found: list[bytes] = []       # complete lines, the last first
    part: list[bytes] | None = []  # the line being read backwards (its end first); None: too long
    size = kept = 0
    with open(path, "rb") as fh:
        pos = fh.seek(0, os.SEEK_END)
        while pos > 0 and len(found) <= n and kept <= max_bytes:
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            pieces = fh.read(step).split(b"\n")
            for i in range(len(pieces) - 1, -1, -1):
                if part is not None:
                    part.append(pieces[i])
                    size += len(pieces[i])
                    if size > MAX_LINE_BYTES:
                        part = None
                if i == 0:
                    break  # the line goes on in the block before
                if part is not None:  # a newline before this piece: the line is whole
                    found.append(b"".join(reversed(part)))
                    kept += size
                part, size = [], 0
                if len(found) > n or kept > max_bytes:
                    break
        if pos == 0 and part is not None and len(found) <= n:
            found.append(b"".join(reversed(part)))  # the file's first line
    if found and not found[0]:
        found.pop(0)  # the file ends with a newline  (a \r is a redraw, not a line)
    return [line.decode("utf-8", "replace") for line in reversed(found[:n])]
