"""Runs inside a run: where one log holds several trainer starts.

A new segment begins where
- the step counter goes back (a restart from an earlier checkpoint, or a second run appended
  to the same file: the counter starts again at 1);
- a second start-up banner follows training frames (the HF Trainer's `***** Running training
  *****`, a veRL config dump, a Megatron argument table: a new train() call or process);
and a segment whose first step is past the start by more than twice its logging interval is a
resumed start (`resumed_from`).

Each segment is backfilled under its own run label (`<run>`, then `<run>#2`, `<run>#3`, ...),
so no baseline or window of the alert rules spans the seam: a restart is never read as a
reward collapse. Doctor maps the labels back to segment numbers.

Live, the pipeline's worker (exporter/core/worker.py) runs the same Segmenter over the frames
of `serve` and the hook, keeping only the current segment, and exports the time a segment
after the first began (rl_run_segment_start_timestamp_seconds): the step-window rules do not
gate a relative alert on windows that reach back over it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

RESUMED_AFTER = 2  # a first step above this is a resumed start (steps count from 0 or 1)


def label(run: str, index: int) -> str:
    return run if index == 1 else f"{run}#{index}"


@dataclass
class Segment:
    index: int
    run: str                 # the run label it is backfilled under
    why: str
    first_step: object = None
    last_step: object = None
    steps: int = 0           # distinct steps seen
    frames: int = 0
    start: float = math.nan
    end: float = math.nan
    resumed_from: object = None
    points: object = None    # points.Watcher
    last_by_kind: dict = field(default_factory=dict)  # record kind -> last step
    ready: bool = False      # the step-windowed rules had enough steps here (set by doctor)
    # the segment's goodput ledger at its end (exporter/core/goodput.py: bucket -> seconds),
    # the final values of the rl_goodput_seconds_total{bucket} series backfilled for it
    goodput: dict = field(default_factory=dict)

    def account(self, step) -> None:
        """The step this segment's exporter reached with a frame (the frame's own, or its
        count where the log prints none)."""
        if step is None:
            return
        if isinstance(step, float) and step == int(step):
            step = int(step)
        if self.first_step is None:
            self.first_step = step
        if step != self.last_step:
            self.steps += 1
            if self.steps == 2:
                # past the start by more than the logging interval: a resumed run (a log that
                # logs every 5 steps starts at step 5; a resume from step 100 at 101)
                first, gap = _num(self.first_step), _num(step) - _num(self.first_step)
                if first > RESUMED_AFTER and first > 2 * gap:
                    self.resumed_from = self.first_step
        self.last_step = step

    def summary(self) -> dict:
        return {"segment": self.index, "run": self.run, "why": self.why,
                "first_step": self.first_step, "last_step": self.last_step,
                "steps": self.steps, "frames": self.frames,
                **({"resumed_from": self.resumed_from} if self.resumed_from is not None else {})}


@dataclass
class Segmenter:
    run: str
    segments: list = field(default_factory=list)
    keep: int | None = None  # segments kept (live: 1, the current one); None: all
    count: int = 0           # segments begun
    _starts: int = 0         # banners seen when the current segment began

    @property
    def current(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    def see(self, step, starts: int, kind: str = "") -> bool:
        """Account one frame (its step, the reader's banner count so far, its record kind);
        True when it opens a new segment after the first.

        Steps are compared within a record kind (the family of the frame's first key): slime
        and Miles count `rollout N` and `step N` records apart (8 train steps in rollout 4),
        so only a kind's own counter going back is a restart."""
        seg = self.current
        why = None
        last = seg.last_by_kind.get(kind) if seg is not None else None
        if seg is None:
            why = "start of the log"
        elif starts > self._starts and seg.last_step is not None:
            why = "a second start-up banner"
        elif step is not None and last is not None and _num(step) < _num(last):
            why = f"the step counter went back from {last} to {step}"
        if why is not None:
            self.count += 1
            seg = Segment(self.count, label(self.run, self.count), why)
            self.segments.append(seg)
            if self.keep is not None and len(self.segments) > self.keep:
                del self.segments[:-self.keep]  # in place: backfill holds this list
            self._starts = starts
        seg.frames += 1
        if step is not None:
            seg.last_by_kind[kind] = step
        return why is not None and self.count > 1


def kind(data: dict) -> str:
    """A frame's record kind: the family of its first key (`rollout`, `train`, `perf`, ...)."""
    for k in data:  # a hook's frame may have a key that is no string: no family
        return k.split("/", 1)[0] if isinstance(k, str) and "/" in k else ""
    return ""


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan
