"""`rl-exporter backfill`: a run's log -> Prometheus TSDB blocks with the series `serve`
would have exported, at the times the run produced them."""
from __future__ import annotations

import collections
import datetime as dt
import logging
import math
import os
import time
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from . import clock as clockmod
from . import logs, tools
from .points import Watcher
from ..core.segments import Segmenter
from ..core.segments import kind as record_kind
from .openmetrics import LOG_BLOCK_MS, BlockFiles, duration_flag
from .progress import Phases
from .replay import Replay

log = logging.getLogger("rl_exporter.backfill")

# Between frames a live exporter keeps serving its last values and Prometheus keeps scraping
# them: the backfill writes the same render every scrape interval, so rate() windows, the
# 5 min lookback and avg_over_time see what they would have seen live.
SCRAPE_INTERVAL = 60.0  # Prometheus's default scrape_interval
PRESCAN_FRAMES = 64
IN_FLIGHT = 2  # finished 2 h files waiting for promtool


@dataclass
class Result:
    run: str
    out_dir: str
    clock: str = ""
    clock_why: str = ""
    framework: str = "auto"
    frames: int = 0
    steps: int = 0
    series: int = 0
    samples: int = 0
    blocks: int = 0
    start: float = math.nan
    end: float = math.nan
    last_frame: float = math.nan
    times: array = field(default_factory=lambda: array("d"))
    step_values: array = field(default_factory=lambda: array("d"))
    logs: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    clock_adjusted: int = 0
    clock_jumps: int = 0
    segments: list = field(default_factory=list)   # segments.Segment, in order

    def segment_of(self, run_label: str | None):
        """The segment backfilled under this run label (the first when unknown)."""
        for seg in self.segments:
            if seg.run == run_label:
                return seg
        return self.segments[0] if self.segments else None

    def step_at(self, t: float):
        """The training step the run had reached at time t (None before its first)."""
        import bisect
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            return None
        v = self.step_values[i]
        return int(v) if v == v and v == int(v) else (None if v != v else v)

    def summary(self) -> dict:
        return {"run": self.run, "out": self.out_dir, "framework": self.framework,
                "frames": self.frames, "steps": self.steps, "series": self.series,
                "samples": self.samples, "blocks": self.blocks,
                "start": iso(self.start), "end": iso(self.end),
                "clock": self.clock, "clock_source": self.clock_why,
                "clock_jumps": self.clock_jumps,
                "segments": [seg.summary() for seg in self.segments],
                "logs": [vars(s) for s in self.logs],
                "timings_s": {k: round(v, 3) for k, v in self.timings.items()}}


def iso(t: float) -> str | None:
    if t != t:
        return None
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds").replace(
        "+00:00", "Z")


def parse_time(text: str | None, relative_to: float | None = None) -> float | None:
    """Unix seconds, RFC 3339, or +DURATION (30m, 2h, 45s) after `relative_to`."""
    if text is None:
        return None
    text = text.strip()
    if text.startswith("+"):
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        num, unit = text[1:-1], text[-1]
        if unit not in units:
            num, unit = text[1:], "s"
        if relative_to is None:
            raise ValueError(f"{text!r}: a relative time needs a reference")
        return relative_to + float(num) * units[unit]
    try:
        return float(text)
    except ValueError:
        pass
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def _prescan(path: str, fmt: str, durations, only_run=None) -> tuple[list, float]:
    st = logs.LogStats(path)
    sample = []
    for fr, ts, fw in logs.frames(path, fmt, st, only_run=only_run):
        sample.append((ts, durations.of(fr.data, fw)))
        if len(sample) >= PRESCAN_FRAMES:
            break
    per_frame = st.bytes / max(1, len(sample))
    return sample, per_frame


def backfill(paths: list[str], run: str, out_dir: str, *, fmt: str = "auto",
             step_seconds: float = 60.0, clock: str = "auto", start: str | None = None,
             until: str | None = None, algorithm: str | None = None, model: str | None = None,
             progress=None, keep_openmetrics: str | None = None,
             scrape_interval: float = SCRAPE_INTERVAL, split_segments: bool = True,
             work: str | None = None) -> Result:
    """The log's samples as blocks in `out_dir`. `work`: the caller's scratch directory (the
    OpenMetrics files live there while promtool reads them), else one of our own, removed on
    every way out. `progress`: a Phases, or None (on a terminal) / True / False."""
    promtool = tools.find("promtool")  # before any work: a missing engine is the first thing said
    phases = progress if isinstance(progress, Phases) else Phases(progress)
    with tools.scratch("rlx-backfill-", keep=work) as scratch:
        return _backfill(paths, run, out_dir, promtool, phases, scratch, fmt=fmt,
                         step_seconds=step_seconds, clock=clock, start=start, until=until,
                         algorithm=algorithm, model=model, keep_openmetrics=keep_openmetrics,
                         scrape_interval=scrape_interval, split_segments=split_segments)


def _backfill(paths, run, out_dir, promtool, phases, work, *, fmt, step_seconds, clock, start,
              until, algorithm, model, keep_openmetrics, scrape_interval,
              split_segments) -> Result:
    t_begin = time.perf_counter()
    c_own, c_kids = tools.cpu(children=False), tools.cpu(own=False)
    fmts = [logs.sniff(p, fmt) for p in paths]
    only_run = _spool_run_filter(paths, fmts, run)
    durations = clockmod.StepDurations()
    sample, per_frame = _prescan(paths[0], fmts[0], durations, only_run)
    kind, why = clockmod.choose(clock, sample)
    t0 = parse_time(start) if start else None
    if t0 is None:
        stamped = [t for t, _ in sample if t is not None]
        if kind == "log" and stamped:
            t0 = stamped[0]
        elif stamped:
            t0 = stamped[0]
        else:
            # no timestamps at all: end the run about when its log was last written
            known = [d for _, d in sample if d is not None]
            per_step = (sum(known) / len(known)) if kind == "steps" and known else step_seconds
            est_frames = logs.total_bytes(paths) / max(per_frame, 1.0)
            mtime = max(os.path.getmtime(p) for p in paths)
            t0 = math.floor((mtime - est_frames * per_step) / 60) * 60
    res = Result(run=run, out_dir=out_dir, clock=kind, clock_why=why)
    clk = clockmod.Clock(kind, t0, step_seconds)
    om_dir = keep_openmetrics or os.path.join(work, "om")
    os.makedirs(out_dir, exist_ok=True)
    block_time = [0.0]
    # promtool turns each finished 18 h file into a block while parsing goes on (another core
    # when there is one); at most IN_FLIGHT files wait, so disk use stays bounded
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="promtool")
    pending: collections.deque = collections.deque()

    def promtool_block(path: str) -> None:
        tb = time.perf_counter()
        tools.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "-q",
                   duration_flag(LOG_BLOCK_MS), path, out_dir],
                  "promtool tsdb create-blocks-from openmetrics")
        if not keep_openmetrics:
            os.unlink(path)
        block_time[0] += time.perf_counter() - tb

    def make_block(path: str) -> None:
        pending.append(pool.submit(promtool_block, path))
        while len(pending) > IN_FLIGHT or (pending and pending[0].done()):
            pending.popleft().result()  # raises the first promtool failure here

    blocks = BlockFiles(om_dir, on_close=make_block, block_ms=LOG_BLOCK_MS)
    bar = phases("parsing the log", logs.total_bytes(paths), "MiB")
    replay = None
    seg_of_replay = None  # the segment the replay's pipeline (and goodput ledger) is for
    done_before = 0
    last_lines = None
    last_t = None
    cut = Segmenter(run)
    res.segments = cut.segments
    starts = 0  # start-up banners of the files read before this one
    series_done = 0
    try:
        for path, f in zip(paths, fmts):
            st = logs.LogStats(path)
            res.logs.append(st)
            on_bytes = (lambda n, b=done_before: bar.update(b + n))
            reader = logs.Reader(f, where=False)
            for fr, line_ts, fw in logs.frames(path, f, st, on_bytes=on_bytes, only_run=only_run,
                                                reader=reader):
                if replay is not None and fw != replay.framework and fw != "auto":
                    raise logs.LogError(f"{path}: keys of framework {fw}, but run {run!r} is "
                                        f"{replay.framework}: backfill it with another --run")
                new = cut.see(fr.step, starts + reader.starts, record_kind(fr.data))
                if (new and split_segments) or replay is None:
                    # a new segment: a new exporter under the segment's own run label, as a
                    # restarted trainer would start one; the last one's values go stale
                    if replay is not None:
                        series_done += replay.series
                        seg_of_replay.goodput = dict(replay.pipeline.goodput.totals)
                        replay.close()
                        last_lines = None
                    replay = Replay(cut.current.run, fw if replay is None else replay.framework,
                                    algorithm=algorithm, model=model)
                    res.framework = replay.framework
                    seg_of_replay = cut.current
                if cut.current.points is None:
                    cut.current.points = Watcher()
                seg = cut.current
                d = durations.of(fr.data, replay.framework)
                # the millisecond the blocks store (OpenMetrics text, 3 decimals): res.times
                # must say which step a sample at a whole evaluation second belongs to exactly
                # as the TSDB does (a step at 60k + 0.0004 s is stored at 60k and is read there)
                t = round(clk.at(line_ts, d, fr.step), 3)
                if last_lines is not None and t - last_t > scrape_interval:
                    _fill(blocks, last_lines, last_t, t, scrape_interval)
                replay.apply(fr.data, fr.step, t)
                last_lines = replay.render()
                blocks.write(t, last_lines)
                last_t = t
                res.frames += 1
                if seg.start != seg.start:
                    seg.start = t
                seg.end = t
                step = replay.pipeline.store.get("rl_training_step")
                seg.account(step)
                seg.points.see(fr.data, replay.framework, seg.last_step, t)
                if not res.step_values or res.step_values[-1] != step:
                    res.steps += 1
                res.times.append(t)
                res.step_values.append(math.nan if step is None else step)
            done_before += st.bytes
            starts += reader.starts
        bar.close()
        if replay is None:
            raise logs.LogError("no metrics frames in " + ", ".join(paths) +
                                " (`rl-exporter parse FILE` shows what each line became)")
        res.start, res.last_frame = res.times[0], res.times[-1]
        res.end = res.last_frame
        stop = parse_time(until, relative_to=res.last_frame) if until else None
        if stop is not None and stop > last_t:
            # the trainer stopped logging but its exporter kept serving (a hang, not a crash)
            _fill(blocks, last_lines, last_t, stop + 1e-3, scrape_interval)
            res.end = stop
        blocks.close()
        t_parsed = time.perf_counter()
        with phases("writing the log's blocks (promtool)", len(blocks.paths), "blocks") as wait:
            wait.update(len(blocks.paths) - len(pending))
            while pending:
                pending.popleft().result()
                wait.update(len(blocks.paths) - len(pending))
        res.series = series_done + replay.series
        res.samples = blocks.samples
        res.clock_adjusted = clk.adjusted
        res.clock_jumps = len(clk.jumps)
        if clk.jumps:
            step, size = max(clk.jumps, key=lambda j: abs(j[1]))
            note = (f"{len(clk.jumps)} implausible jump(s) of the log's time closed up to one "
                    f"step (the largest {size:+.3g} s, at step {step}); later times shifted")
            res.clock_why += "; " + note
            log.warning("%s", note)
        res.blocks = len(blocks.paths)
        # wall: parsing until the last sample was written; blocks: promtool's own run time
        # (overlapping the parsing); CPU: ours vs promtool's
        res.timings["parse_render"] = t_parsed - t_begin
        res.timings["blocks"] = block_time[0]
        res.timings["blocks_wait"] = time.perf_counter() - t_parsed
        res.timings["parse_render_cpu"] = tools.cpu(children=False) - c_own
        res.timings["blocks_cpu"] = tools.cpu(own=False) - c_kids
    finally:
        for f in pending:
            f.cancel()
        pool.shutdown(wait=True)
        blocks.abandon()  # an error mid-block: no half block in out_dir
        if replay is not None:
            seg_of_replay.goodput = dict(replay.pipeline.goodput.totals)
            replay.close()
    return res


def _spool_run_filter(paths, fmts, run: str) -> str | None:
    """A spool holding several runs (a sidecar following several sources): backfill the run
    named by --run; one run (or none named): every record, labelled --run."""
    runs: list[str] = []
    for p, f in zip(paths, fmts):
        if f == "spool":
            runs.extend(r for r in logs.spool_runs(p) if r not in runs)
    if len(runs) <= 1:
        return None
    if run in runs:
        return run
    raise logs.LogError(f"the spool holds {len(runs)} runs ({', '.join(runs[:10])}); pass "
                        "--run with the one to examine")


def _fill(blocks: BlockFiles, lines: list[str], t_from: float, t_to: float,
          every: float) -> None:
    if every <= 0:
        return
    t = t_from + every
    while t < t_to - 1e-3:
        blocks.write(t, lines)
        t += every


# ------------------------------------------------------------------ --out, atomically
TAG = "rl_exporter"  # meta.json field: the run a block was backfilled for (Prometheus ignores it)


class OutputError(Exception):
    pass


def blocks_in(directory: str) -> list[str]:
    """The TSDB block directories directly under `directory`."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names
            if os.path.isfile(os.path.join(directory, n, "meta.json"))]


def run_of_block(block: str) -> str | None:
    import json
    try:
        with open(os.path.join(block, "meta.json"), encoding="utf-8") as f:
            tag = json.load(f).get(TAG) or {}
    except (OSError, ValueError, AttributeError):
        return None
    return tag.get("run") if isinstance(tag, dict) else None


def blocks_of(directory: str, run: str) -> list[str]:
    """Blocks under `directory` a backfill wrote for `run`."""
    return [b for b in blocks_in(directory) if run_of_block(b) == run]


def check_out(out: str, run: str, replace: bool) -> None:
    """Before any work: --out must not already hold this run (unless replacing it)."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputError(f"--out {out} exists and is not a directory")
    old = blocks_of(out, run)
    if old and not replace:
        raise OutputError(f"{out} already holds {len(old)} block(s) of run {run!r} from an earlier "
                          "backfill: pass --replace to replace them, or another --out / --run "
                          "(two backfills of one run side by side would double its samples)")


def _tag(block: str, run: str) -> None:
    import json
    meta_path = os.path.join(block, "meta.json")
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    meta[TAG] = {"run": run}
    tmp = meta_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent="\t")
    os.replace(tmp, meta_path)


def publish(data: str, out: str, run: str, replace: bool = False) -> list[str]:
    """Move the blocks in `data` (a scratch TSDB beside `out`, on its file system) into `out`,
    atomically: a new `out` appears whole by one rename; into an existing one the blocks move
    one rename each, with SIGINT/SIGTERM held until the last, and the run's earlier blocks
    (--replace) go aside first. The block directories now in `out`."""
    blocks = blocks_in(data)
    for b in blocks:
        _tag(b, run)
    check_out(out, run, replace)
    stage = os.path.join(os.path.dirname(data), "out")
    os.makedirs(stage, exist_ok=True)
    with tools.deferred():
        for b in blocks:
            os.rename(b, os.path.join(stage, os.path.basename(b)))
        if not os.path.isdir(out) or not os.listdir(out):
            os.rename(stage, out)  # a new --out (or an empty one) in one step
        else:
            trash = os.path.join(os.path.dirname(data), "replaced")
            os.makedirs(trash, exist_ok=True)
            for b in blocks_of(out, run):  # only with replace (checked above)
                os.rename(b, os.path.join(trash, os.path.basename(b)))
            for b in blocks_in(stage):
                os.rename(b, os.path.join(out, os.path.basename(b)))
    return [os.path.join(out, os.path.basename(b)) for b in blocks]
