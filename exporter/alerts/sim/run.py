"""The simulated run: a healthy run's steps (exporter/alerts/sim/healthy.py), a pathology's edits
from the onset (exporter/alerts/sim/pathology.py), turned into scrape samples (two per step), with
per-step jitter and a checkpoint pause every CHECKPOINT_EVERY steps; counters accumulate, rates
integrate over time.

Values that depend on where in the step a scrape falls come from the step's phase timeline:
- "=phases" (a '=' key is no series: it carries facts the generator and pathologies read) is
  the step's [(phase, share)]: each phase in turn for its share of the step's
  working time (its duration less a checkpoint pause; the pause is a `save_checkpoint` phase the
  generator adds). A share of math.inf never closes: the trainer hangs inside that phase (use
  with stop=True; the hung step is then the one in progress forever). From the timeline the
  generator derives, per scrape, what the exporter shows: rl_phase_in_progress_start_timestamp_seconds
  {phase} (the open phase's start, NaN once closed) and rl_phase_recent_median_duration_seconds
  {phase} (median of its last 20 closed occurrences).
- a key starting with '%' is read at each scrape from the step in progress (not the last completed
  one). Its value is a number, or a dict {phase: value, "": value while no phase is open}. A '%'
  counter (name ending in _total) holds {phase: rate per second while that phase is open}: it is
  integrated exactly over the timeline into one series per phase, labelled phase="..." (NVML
  busy/idle seconds attributed to the phase in progress).

Every run has RANKS ranks, each its own scrape target with rl_run_info{rank}: "=ranks" holds each
rank's speed per phase, and the generator turns it into per-rank rl_phase_duration_seconds{phase}
and rl_step_duration_seconds (a synchronous run: update_actor waits for the slowest rank's gen).
"""
from __future__ import annotations

import bisect
import math
import random
import re
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .healthy import ENGINE_UP, HEALTHY_STEPS, RANKS, healthy

if TYPE_CHECKING:
    from .pathology import Pathology

CADENCES = {"30s": 30, "2m": 120, "10m": 600}
ONSET = 60                     # first pathological step: past warm-up, baseline filled
CHECKPOINT_EVERY = 40          # a checkpoint pause every 40 steps ...
CHECKPOINT_PAUSE = (3, 300)    # ... of max(3 steps, 300 s)
# One ordinary restart: the trainer dies after step 125 and resumes from the checkpoint at step
# 120 (down for a checkpoint pause's time), redoes 121-125 and moves on. A restart is the step
# going back, and a new process: the exporter's counters start again.
HEALTHY_RESTART = (125, 120)
CRASH_EVERY = 4                # a crash loop (RLRestartWithoutProgress): dies every 4 steps
FRAMES = "rl_exporter_frames_received_total"
SAMPLES_PER_STEP = {"30s": 1, "2m": 2, "10m": 2}   # a 30 s, 1 min, 5 min scrape
ALWAYS = {"rl_training_step", "rl_training_step_timestamp_seconds", "rl_step_duration_seconds", "up",
          "rl_run_info"}


def _rank_durations(v: dict, work: float, step: float) -> dict:
    """Each rank's phase durations and step duration for a step of `work` seconds (the "=phases"
    shares) in a synchronous run: a rank's gen takes its own time, and the gradient all-reduce
    in update_actor waits for the slowest rank's gen, so the faster ranks' wait lands there."""
    shares = dict(v.get("=phases") or [])
    if any(math.isinf(x) for x in shares.values()) or "=ranks" not in v:
        return {}
    gen = [shares.get("gen", 0) * work * r["gen"] for r in v["=ranks"]]
    out = {}
    for i, r in enumerate(v["=ranks"]):
        rank = f'instance="rank{i}"'
        out[f'rl_phase_duration_seconds{{{rank}, phase="gen"}}'] = gen[i]
        out[f'rl_phase_duration_seconds{{{rank}, phase="update_actor"}}'] = (
            shares.get("update_actor", 0) * work * r["update_actor"] + max(gen) - gen[i])
        out[f'rl_step_duration_seconds{{{rank}}}'] = step
    return out




def _cadence(step_s: int) -> str:
    return next(c for c, s in CADENCES.items() if s == step_s)


def split_key(name: str) -> tuple[str, str]:
    """'+rl_x{a="b"}' -> ('rl_x', 'a="b"') (prefix dropped)."""
    m = re.fullmatch(r"[+~@%]?([a-zA-Z_:][\w:]*)(?:\{(.*)\})?", name)
    return m.group(1), m.group(2) or ""


def _fmt(x) -> str:
    if x is None:
        return "_"
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    if isinstance(x, float) and math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return f"{x:.6g}"


PHASE_START = "rl_phase_in_progress_start_timestamp_seconds"
PHASE_MEDIAN = "rl_phase_recent_median_duration_seconds"
MEDIAN_OF = 20       # the exporter's median covers a phase's last 20 closed occurrences


def _timeline(values: list[dict], ends: list[float], work: list[float], last: int) -> "Timeline":
    """The phases of every step as [start, end) intervals: the "=phases" shares of the step's
    working time, then `save_checkpoint` for a checkpoint pause. A step past `last` (a hung one)
    is kept only up to its phase that never closes."""
    out = []
    for i, v in enumerate(values):
        t = ends[i - 1] if i else 0.0
        phases = v.get("=phases") or []
        hung = any(math.isinf(share) for _, share in phases)
        if i >= last and not hung:
            break
        for phase, share in phases:
            out.append((t, t + share * work[i], phase, i))
            t += share * work[i]
            if math.isinf(share):
                break
        if not hung and ends[i] - t > 1e-6:
            out.append((t, ends[i], "save_checkpoint", i))
    return Timeline(out, values)


@dataclass
class Timeline:
    intervals: list            # (start, end, phase, step index), in time order
    values: list               # the steps' values

    def __post_init__(self):
        self.starts = [iv[0] for iv in self.intervals]
        self.closed: dict[str, list] = {}         # phase -> [(end, duration)] in end order
        for t0, t1, phase, _ in self.intervals:
            if math.isfinite(t1):
                self.closed.setdefault(phase, []).append((t1, t1 - t0))
        self.first = {}
        for t0, _, phase, _ in self.intervals:
            self.first.setdefault(phase, t0)
        self.acc: dict[str, float] = {}
        self.prev = 0.0

    def at(self, ts: float):
        i = bisect.bisect_right(self.starts, ts) - 1
        return self.intervals[i] if i >= 0 and ts < self.intervals[i][1] else None

    def scrape(self, ts: float, keys: list[str], gone: bool) -> dict:
        """Every per-scrape series at time ts: phase starts and medians, '%' keys."""
        out: dict = {}
        if not self.intervals:
            return out
        cur = self.at(ts)
        for phase, first in self.first.items():
            if first <= ts:
                out[f'{PHASE_START}{{phase="{phase}"}}'] = cur[0] if cur and cur[2] == phase else math.nan
            done = [d for end, d in self.closed.get(phase, []) if end <= ts][-MEDIAN_OF:]
            if done:
                out[f'{PHASE_MEDIAN}{{phase="{phase}"}}'] = statistics.median(done)
        i = bisect.bisect_right(self.starts, ts) - 1
        step = self.intervals[max(i, 0)][3]        # the step in progress (or the last one)
        phase = cur[2] if cur else ""
        for key in keys:
            name, labels = split_key(key)
            if name.endswith("_total"):
                # integrate each phase's rate over (prev, ts]
                first = max(bisect.bisect_right(self.starts, self.prev) - 1, 0)
                for t0, t1, ph, i in self.intervals[first:bisect.bisect_left(self.starts, ts)]:
                    lo, hi = max(t0, self.prev), min(t1, ts)
                    if hi > lo:
                        rate = (self.values[i].get(key) or {}).get(ph)
                        if rate is not None:
                            sk = f'%{name}{{{labels + ", " if labels else ""}phase="{ph}"}}'
                            self.acc[sk] = self.acc.get(sk, 0.0) + rate * (hi - lo)
                for sk, x in self.acc.items():
                    if sk.startswith(f"%{name}{{{labels}"):
                        out[sk] = x
            else:
                x = self.values[max(step, 0)].get(key)
                out[key] = x.get(phase, x.get("")) if isinstance(x, dict) else x
        self.prev = ts
        if gone:
            out = {k: None for k in out}
        return out


@dataclass
class Run:
    step_s: int
    pathology: "Pathology | None" = None     # exporter/alerts/sim/pathology.py
    steps: int = HEALTHY_STEPS
    seed: int = 7
    span: int = HEALTHY_STEPS      # the healthy run's trends (reward up, entropy down) span this
    series: dict[str, list] = field(default_factory=dict)

    def build(self) -> "Run":
        pat = self.pathology
        last = ONSET - 1 if pat and (pat.stop or pat.down) else self.steps
        ends, t, durations, work = [], 0.0, [], []
        for k in range(1, self.steps + 1):
            d = self.step_s * random.Random(self.seed * 7919 + k).uniform(0.9, 1.1)
            work.append(d)
            if k % CHECKPOINT_EVERY == 0 or k == HEALTHY_RESTART[0] + 1:  # a save, a restart
                d += max(CHECKPOINT_PAUSE[0] * self.step_s, CHECKPOINT_PAUSE[1])
            t += d
            ends.append(t)
            durations.append(d)
        self.ends = ends
        dt = self.step_s / SAMPLES_PER_STEP[_cadence(self.step_s)]
        self.dt = dt
        n = int(ends[-1] / dt) + 2
        values = []
        # a stopped trainer may hang inside the step after its last: that step is in progress forever
        for k in range(1, min(last + (1 if pat and pat.stop else 0), self.steps) + 1):
            rng = random.Random(self.seed * 104729 + k)
            v = healthy(k, rng, self.span, self.step_s)
            v["rl_step_duration_seconds"] = durations[k - 1]
            if pat and pat.before:
                pat.before(v, k, random.Random(self.seed * 7727 + k))
            crashed, resumed = HEALTHY_RESTART
            if k > crashed:
                v["rl_training_step"] = k - (crashed - resumed)
            if pat and pat.edit and k >= ONSET:
                pat.edit(v, k - ONSET, random.Random(self.seed * 15485863 + k))
            v.update(_rank_durations(v, work[k - 1], durations[k - 1]))
            values.append(v)
        started = 1  # the step the exporter's process started at: a step going back is a new one
        for k, v in enumerate(values, 1):
            if k > 1 and v["rl_training_step"] < values[k - 2]["rl_training_step"]:
                started = k
            v[FRAMES] = k - started + 1
        timeline = _timeline(values, ends, work, last)
        per_scrape = sorted({key for v in values for key in v if key.startswith("%")})
        values = values[:last]
        keys = sorted({key for v in values for key in v if key[0] not in "%="})
        cum: dict[str, list[float]] = {}     # counters: running sums per step
        for key in [k_ for k_ in keys if k_.startswith("+")] + ["!rl_grad_norm", "!rl_policy_loss", "!rl_loss"]:
            acc, run_ = 0.0, [0.0]
            for v in values:
                if key.startswith("!"):
                    acc += 0 if math.isfinite(v.get(key[1:], 0.0)) else 1
                else:
                    acc += v.get(key, 0) or 0
                run_.append(acc)
            cum[key] = run_
        series = {key: [] for key in keys}
        series["rl_training_step_timestamp_seconds"] = []
        counters: dict[str, float] = {}
        nonfinite: dict[str, float] = {}
        held: dict[str, float] = {}
        timed: dict[str, None] = {}      # per-scrape series, in order of appearance
        for j in range(n):
            ts = j * dt
            k = min(bisect.bisect_right(ends, ts), last)   # steps completed at this scrape
            gone = pat is not None and pat.down and k >= last and ts >= ends[last - 1]
            for key in keys:
                if k == 0 or gone:
                    series[key].append(None)
                elif key.startswith("~"):
                    counters[key] = counters.get(key, 0.0) + values[k - 1].get(key, 0.0) * dt
                    series[key].append(counters[key])
                elif key.startswith("+"):
                    series[key].append(None if values[k - 1].get(key, 0) is None else cum[key][k])
                else:
                    if key in values[k - 1]:
                        held[key] = values[k - 1][key]
                    series[key].append(held.get(key))
            series["rl_training_step_timestamp_seconds"].append(None if k == 0 or gone else ends[k - 1])
            # the exporter counts NaN/Inf values it receives, per metric; the series appears at the first
            for m in ("rl_grad_norm", "rl_policy_loss", "rl_loss"):
                c = cum["!" + m][k]
                key = f'@rl_exporter_nonfinite_values_total{{metric="{m}"}}'
                if c or key in nonfinite:
                    nonfinite[key] = c
                series.setdefault(key, [None] * j).append(None if gone else nonfinite.get(key))
            series.setdefault("up", []).append(0 if gone else 1)
            series.setdefault("rl_run_info", []).append(None if gone or (pat and pat.anonymous) else 1)
            got = timeline.scrape(ts, per_scrape, gone)
            timed.update(dict.fromkeys(got))
            for key in timed:
                series.setdefault(key, [None] * j).append(got.get(key))
        self.series = series
        self.n = n
        return self

    def input_series(self, run: str = "r", only: set | None = None) -> list[dict]:
        """promtool input series; `only`: metric names to keep (a pathology run needs only what its
        alert reads, which keeps promtool fast)."""
        out = []
        job = f'job="rl-exporter", instance="{run}:9464"'

        def target(i: int) -> str:
            return f'job="rl-exporter", instance="{run}:9464"' if i == 0 else \
                f'job="rl-exporter", instance="{run}-rank{i}:9464"'
        for key, vals in self.series.items():
            name, labels = split_key(key)
            if name == "up" and not labels:
                sel = f"up{{{job}}}"
            elif name == "rl_run_info":
                out += [{"series": f'rl_run_info{{{target(i)}, run="{run}", framework="verl", rank="{i}"}}',
                         "values": " ".join(_fmt(x) for x in vals)} for i in range(1, RANKS)]
                sel = f'rl_run_info{{{job}, run="{run}", framework="verl", rank="0"}}'
            elif 'instance="rank' in labels:
                i = int(re.search(r'instance="rank(\d+)"', labels).group(1))
                rest = re.sub(r'instance="rank\d+",? ?', "", labels)
                sel = f'{name}{{run="{run}", {target(i)}{", " + rest if rest else ""}}}'
            else:
                sel = f'{name}{{run="{run}"{", " + labels if labels else ""}}}'
            if name == "up" and labels and only is not None and ENGINE_UP not in only:
                continue            # the engine's target: only for alerts that read it
            if all(x is None for x in vals) or (only is not None and name not in only):
                continue
            out.append({"series": sel, "values": " ".join(_fmt(x) for x in vals)})
        return out
