"""A demo frame seen in catalog series: the pathologies' edits (exporter/demo/pathologies.py)
name `rl_entropy` or `rl_score{stat="max"}`; the catalog says which of the frame's keys logs
each (and with what scale), and which key to add for a series the healthy frame lacks."""
from __future__ import annotations

import re
from functools import lru_cache

from ..catalog import CATALOG
from .pathologies import parse

# vocabularies a missing series' key is taken from, in turn (the demo logs veRL keys first)
ORDER = ("verl", "trl", "posttrain", "areal", "generic")


@lru_cache(maxsize=None)
def series_of(key: str) -> tuple[str, tuple, float] | None:
    """(metric, sorted labels, scale) the key logs under framework="auto", or None."""
    r = CATALOG.resolve(key, "auto")
    if r.metric is None or r.fallback or r.ignored:
        return None
    return r.metric.name, tuple(sorted(r.labels)), r.scale


def _filled(pattern: str, labels: dict) -> str | None:
    """A vocabulary pattern written out for these labels: each named group becomes its label's
    value, optional groups go; None if a label is missing or the pattern has other syntax."""
    try:
        text = re.sub(r"\(\?P<(\w+)>[^()]*\)", lambda m: labels[m.group(1)], pattern.strip("^$"))
    except KeyError:
        return None
    text = re.sub(r"\(\?:[^()]*\)\?|\(\?[!=][^()]*\)", "", text)  # optional groups, lookaheads
    return None if re.search(r"[\\()\[\]?*+|]", text) else text


@lru_cache(maxsize=None)
def key_for(metric: str, labels: tuple) -> str:
    """A key the catalog resolves (framework="auto") to exactly this series, a framework's real
    key where one exists: an exact alias (vocabularies in ORDER), a pattern written out, then
    an alias with the stat suffix."""
    aliases = CATALOG.aliases_of(metric)
    named = dict(labels)
    order = [fw for fw in ORDER if fw in aliases] + sorted(set(aliases) - set(ORDER))
    exact = [k for fw in order for k in aliases[fw] if not k.startswith("^")]
    tries = exact + [_filled(k, named) for fw in order for k in aliases[fw] if k.startswith("^")]
    tries += [f"{k}/{named.get('stat', 'mean')}" for k in exact]
    for cand in filter(None, tries):
        got = series_of(cand)
        if got is not None and got[:2] == (metric, labels):
            return cand
    raise KeyError(f"the catalog has no key for {metric}{named}: a pathology cannot add it to a frame")


class FrameView:
    def __init__(self, frame: dict, counters: dict):
        self.frame = frame
        self.counters = counters   # key -> running total of counters the edits advance
        self._start: dict = {}     # key -> the total before this step

    def _matches(self, key: str, name: str, labels: dict | None) -> bool:
        s = series_of(key)
        return s is not None and s[0] == name and (labels is None or s[1] == tuple(sorted(labels.items())))

    def find(self, sel: str, create: bool = True) -> list[str]:
        """The frame's keys that log the series; with create, a key added for a missing one."""
        name, labels = parse(sel)
        keys = [k for k in self.frame if not k.startswith("_") and self._matches(k, name, labels)]
        if keys or labels is None or not create:
            return keys
        key = key_for(name, tuple(sorted(labels.items())))
        self.frame[key] = None
        return [key]

    def value(self, key: str):
        x = self.frame.get(key)
        return x * series_of(key)[2] if isinstance(x, (int, float)) else x

    def put(self, key: str, value) -> None:
        scale = series_of(key)[2]
        self.frame[key] = value / scale if isinstance(value, (int, float)) and scale != 1.0 else value

    def bump(self, key: str, n) -> None:
        """Advance the counter by n this step (a later bump in the same step replaces it)."""
        base = self._start.setdefault(key, self.counters.get(key, self.frame.get(key) or 0))
        self.frame[key] = self.counters[key] = base + n

    def get(self, sel: str):
        keys = self.find(sel, create=False)
        return self.value(keys[0]) if keys else None

    def set(self, sel: str, value) -> None:
        for key in self.find(sel):
            self.put(key, value)
