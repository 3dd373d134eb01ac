"""Pathologies as edits of a healthy step: read from the one description of each pathology
(exporter/demo/pathologies.py, which the demo reads too) through from_entry, or a plain edit of the
simulated run's own series that says why no entry describes it."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from exporter.demo import pathologies as shared

from .run import split_key


@dataclass
class Pathology:
    """Edits a healthy step from the onset (i = 0, 1, ...). `budget`: the most pathological
    steps (or, with stop/down, step-times) the alert may take to fire, per cadence.
    A row is read from a shared pathology (`entry`, built by from_entry) or is a plain edit of
    this file's series; a plain row says `why` no shared entry describes it."""
    edit: Callable[[dict, int, random.Random], None] | None
    budget: dict[str, int]
    stop: bool = False        # the trainer stops stepping (the exporter stays up)
    down: bool = False        # the exporter's target goes down
    note: str = ""
    before: Callable[[dict, int, random.Random], None] | None = None   # every step k (k, not i)
    entry: str = ""           # the exporter/demo/pathologies.py entry it is read from
    why: str = ""
    loop: bool = False        # the logged step loops (budget in step-times, as stop/down)
    anonymous: bool = False   # the target reports no run (no rl_run_info at any scrape)

    @property
    def timed(self) -> bool:
        return self.stop or self.down or self.loop


class SeriesView:
    """A healthy step's values seen in catalog series, for the shared pathologies' edits. A
    series this run does not carry is left out (the healthy run must carry what an alert reads);
    a counter's edit sets its per-step increment."""

    def __init__(self, v: dict):
        self.v = v

    def find(self, sel: str, create: bool = True) -> list[str]:
        name, labels = shared.parse(sel)
        out = []
        for key in self.v:
            if key[0] == "=":
                continue
            n, lab = split_key(key)
            if n == name and (labels is None or shared.parse(f"{n}{{{lab}}}")[1] == labels):
                out.append(key)
        return out

    def value(self, key: str):
        return self.v.get(key)

    def put(self, key: str, value) -> None:
        if not isinstance(value, str):      # state series (strings) are not in these runs
            self.v[key] = value

    def bump(self, key: str, n) -> None:
        self.v[key] = n if key.startswith("+") else (self.v.get(key) or 0) + n

    def get(self, sel: str):
        keys = self.find(sel)
        return self.v[keys[0]] if keys else None

    def set(self, sel: str, value) -> None:
        for key in self.find(sel):
            self.put(key, value)


def from_entry(name: str, budget: dict[str, int], note: str = "") -> Pathology:
    """A row read from the shared pathology `name` (exporter/demo/pathologies.py): its edits from
    the onset, its baseline edits on every step, and whether the trainer stops or goes down."""
    p = shared.BY_NAME[name]

    def edit(v, i, rng):
        view = SeriesView(v)
        shared.apply(p.edits, view, i, rng)
        if p.call is not None:
            p.call(view, i, rng)

    def before(v, k, rng):
        shared.apply(p.before, SeriesView(v), k, rng)

    return Pathology(edit if (p.edits or p.call) else None, budget, stop=p.stop, down=p.down, note=note,
                     before=before if p.before else None, entry=name)


def assign(**kw):
    def edit(v, i, rng):
        for k, f in kw.items():
            key = k.replace("__", "")
            v[_KEYS.get(k, key)] = f(v, i, rng) if callable(f) else f
    return edit


_KEYS = {"kl_max": 'rl_reference_kl{stat="max"}', "rl_score__max": 'rl_score{stat="max"}',
         "rl_score__min": 'rl_score{stat="min"}', "layer2": 'rl_moe_load_imbalance_ratio{layer="2"}',
         "thermal": '~hw_gpu_clock_event_seconds_total{reason="thermal"}'}
