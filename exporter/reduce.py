"""Reduce several frames into the one frame a user should see.

The inputs are the chunks of one optimizer window (`reduce_frames`) or one frame
per data-parallel rank (`exporter.distributed.reduce_across_ranks`). Each key is
reduced by its rule in the catalog (`CATALOG.resolve(key, framework)`):

    weighted_mean  sum(v*w)/sum(w) by the key's weight: the alias's raw weight key,
                   else the raw key (present in the inputs) of the metric's canonical
                   weight (rl_valid_tokens, rl_responses, rl_train_inference_tokens ...),
                   else a plain mean, recorded in `.notes` and logged once.
                   A zero weight contributes nothing, whatever the value; a total
                   weight of zero is "no data": the key is left out of the result and
                   listed in `.no_data` (posttrain's logprob gap without recorded
                   logprobs is 0.0 with weight 0: not 0, not NaN, no data).
    sum            plain sum (counts, and every key another key is weighted by).
    max / min      extremum (posttrain's max_reduced: kl_max, response_len_max,
                   sc_rho_max; "<base>/max" statistics); all-integer inputs give an int.
    mean           plain mean over the inputs that have the key.
    last           "the applied update" (grad_norm, lr, kl_coef): the last chunk's value.
                   Across ranks, where there is no "last", the mean of the ranks that
                   have it (they hold the same applied update, so it equals each).

Deliberate deviations from `Resolution.agg`, each recorded in `.notes`:
    - step keys: max.
    - unknown (fallback) and ignored keys: plain mean.
    - string values (states): the last one (across ranks: each rank keeps its own).

Presence: a key missing from some inputs is reduced over the inputs that have it;
`.counts[key]` is the number of contributors. NaN is data: a NaN contributor with a
non-zero weight makes the reduced value NaN (a NaN loss on one rank must page), for
max/min too (explicitly, not by a backend's comparison order).
"""
from __future__ import annotations

import logging
import math
import numbers
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .catalog import CATALOG, INFO, STATE, Catalog
from .catalog.model import LAST, MAX, MEAN, MIN, SUM, WMEAN

log = logging.getLogger("rl_exporter")

__all__ = ["KeyRule", "Layout", "Reduced", "key_rules", "reduce_frames"]


@dataclass(frozen=True)
class KeyRule:
    key: str
    agg: str                  # effective rule
    weight: str | None = None  # raw key of the weight (weighted_mean only)
    note: str = ""             # why the rule differs from the catalog's, if it does


class Reduced(dict):
    """The reduced frame (a dict you can pass to `Exporter.log`), plus:

    counts   key -> number of inputs (chunks or ranks) that had the key
    no_data  keys whose total weight was zero (left out of the frame)
    rules    key -> KeyRule applied
    notes    key -> why a key fell back (missing weight, unknown key, ...)
    inputs   number of frames (or ranks) reduced
    collectives  collectives issued (reduce_across_ranks only)
    """

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.counts: dict[str, int] = {}
        self.no_data: set[str] = set()
        self.rules: dict[str, KeyRule] = {}
        self.notes: dict[str, str] = {}
        self.inputs = 0
        self.collectives = 0


# ---------------------------------------------------------------- rules
_RULE_CACHE: dict = {}
_RULE_CACHE_LIMIT = 256
_LOGGED: set = set()


def _note_once(key: str, note: str) -> None:
    if (key, note) not in _LOGGED and len(_LOGGED) < 10_000:
        _LOGGED.add((key, note))
        log.info("rl-exporter reduce: %s: %s", key, note)


def key_rules(keys: Iterable[str], framework: str = "auto",
              catalog: Catalog = CATALOG) -> dict[str, KeyRule]:
    """The rule for every key, given all keys present in the inputs (weights are
    looked up among them). Deterministic in the key set, so every rank agrees."""
    keys = tuple(sorted(set(keys)))
    ck = (keys, framework, id(catalog))
    hit = _RULE_CACHE.get(ck)
    if hit is not None:
        return hit
    present = set(keys)
    res = {k: catalog.resolve(k, framework) for k in keys}
    # canonical metric -> raw key present, for the metric-level weight fallback
    canonical: dict[str, str] = {}
    for k in keys:
        r = res[k]
        if r.metric is not None and not r.fallback and not r.labels:
            canonical.setdefault(r.metric.name, k)
    rules: dict[str, KeyRule] = {}
    weights: set[str] = set()
    for k in keys:
        r = res[k]
        m = r.metric
        note = ""
        weight = None
        if r.step:
            agg = MAX
        elif m is None:
            agg, note = MEAN, "ignored by the catalog: plain mean"
        elif r.fallback:
            agg, note = MEAN, "unknown key: plain mean"
        elif m.kind in (STATE, INFO):
            agg = LAST
        else:
            agg = r.agg
        if agg == WMEAN:
            weight = r.weight if r.weight in present else None
            # an alias that names its own weight means "plain mean when that key is absent";
            # only aliases without one borrow the metric's canonical weight
            if weight is None and r.weight is None and m is not None and m.weight:
                weight = canonical.get(m.weight)
            if weight is None or weight == k:
                want = r.weight or (m.weight if m is not None else None)
                agg, weight = MEAN, None
                note = f"weighted by {want} but no such key in the inputs: plain mean"
            else:
                weights.add(weight)
        rules[k] = KeyRule(k, agg, weight, note)
    for w in weights:  # every weight is a count: summed
        old = rules[w]
        if old.agg != SUM:
            rules[w] = KeyRule(w, SUM, None, f"weight of other keys: sum (catalog: {old.agg})")
    for rule in rules.values():
        if rule.note:
            _note_once(rule.key, rule.note)
    if len(_RULE_CACHE) >= _RULE_CACHE_LIMIT:
        _RULE_CACHE.clear()
    _RULE_CACHE[ck] = rules
    return rules


# ---------------------------------------------------------------- values
def _tensor_type():
    torch = sys.modules.get("torch")
    return None if torch is None else torch.Tensor


def scalars(frame: Mapping[str, Any]) -> tuple[dict[str, tuple[float, bool]], dict[str, Any]]:
    """Split a frame into numeric scalars {key: (float, is_int)} and other values
    (strings; anything else is dropped). 0-d tensors are read with ONE batched host
    transfer per device, not one .item() each."""
    nums: dict[str, tuple[float, bool]] = {}
    other: dict[str, Any] = {}
    tensor_t = _tensor_type()
    tensors: dict = {}
    for k, v in frame.items():
        t = v.__class__
        if t is float:
            nums[k] = (v, False)
        elif t is int or t is bool:
            nums[k] = (float(v), True)
        elif v is None:
            continue
        elif t is str:
            other[k] = v
        elif tensor_t is not None and isinstance(v, tensor_t):
            if v.numel() == 1:
                tensors.setdefault(v.device, []).append((k, v))
        elif isinstance(v, numbers.Integral):
            nums[k] = (float(v), True)
        elif isinstance(v, numbers.Real):
            nums[k] = (float(v), False)
        elif getattr(v, "shape", None) == () and hasattr(v, "item"):  # numpy 0-d
            x = v.item()
            if isinstance(x, (int, float)):
                nums[k] = (float(x), isinstance(x, int))
    if tensors:
        import torch
        for _dev, items in tensors.items():
            with torch.no_grad():
                vals = torch.stack([t.detach().reshape(()).to(torch.float64) for _, t in items])
                host = vals.cpu().tolist()  # one transfer per device
            for (k, t), x in zip(items, host):
                nums[k] = (x, not (t.is_floating_point() or t.is_complex()))
    return nums, other


# ---------------------------------------------------------------- layout
class Layout:
    """Slot positions of every key's partial sums in one float64 SUM vector and
    one MAX vector (min keys are negated). Shared by the chunk and rank paths, so
    both reduce by exactly the same arithmetic.

    SUM slots per key:  present, nonint, then
        mean/last/sum:  sum_v
        weighted_mean:  sum_v, sum_vw, sum_w, n_weighted
        max/min:        n_nan
    MAX slots: one per max/min key.
    Slot 0 of the SUM vector is reserved (rank schema check in distributed.py).
    """

    def __init__(self, rules: Mapping[str, KeyRule]):
        self.rules = dict(rules)
        self.keys = tuple(sorted(rules))
        self.keyset = frozenset(self.keys)
        self.sum_pos: dict[str, int] = {}
        self.max_pos: dict[str, int] = {}
        n, nm = 1, 0
        for k in self.keys:
            agg = rules[k].agg
            self.sum_pos[k] = n
            n += 2 + (4 if agg == WMEAN else 1)
            if agg in (MAX, MIN):
                self.max_pos[k] = nm
                nm += 1
        self.n_sum, self.n_max = n, nm

    def pack(self, nums: Mapping[str, tuple[float, bool]]) -> tuple[list[float], list[float]]:
        s = [0.0] * self.n_sum
        mx = [-math.inf] * self.n_max
        rules = self.rules
        for k, (v, is_int) in nums.items():
            p = self.sum_pos.get(k)
            if p is None:
                continue
            rule = rules[k]
            agg = rule.agg
            s[p] = 1.0
            s[p + 1] = 0.0 if is_int else 1.0
            if agg == WMEAN:
                s[p + 2] = v
                w = nums.get(rule.weight)
                if w is not None:
                    w = w[0]
                    s[p + 5] = 1.0
                    if w != 0.0:  # a zero weight carries no data, whatever the value
                        s[p + 3] = v * w
                        s[p + 4] = w
            elif agg in (MAX, MIN):
                if v != v:
                    s[p + 2] = 1.0
                else:
                    mx[self.max_pos[k]] = v if agg == MAX else -v
            else:
                s[p + 2] = v
        return s, mx

    def finalize(self, s: Sequence[float], mx: Sequence[float],
                 last: Mapping[str, tuple[float, bool]] | None = None,
                 out: Reduced | None = None) -> Reduced:
        """Turn reduced partials into values. `last` holds each key's last value
        (chunks); without it, `last` keys take the mean over contributors (ranks)."""
        out = Reduced() if out is None else out
        for k in self.keys:
            p = self.sum_pos[k]
            n = int(round(s[p]))
            if n <= 0:
                continue
            rule = self.rules[k]
            agg = rule.agg
            all_int = s[p + 1] == 0.0
            out.counts[k] = n
            out.rules[k] = rule
            if rule.note:
                out.notes[k] = rule.note
            if agg == WMEAN:
                n_w = int(round(s[p + 5]))
                if n_w < n:
                    out.notes[k] = (f"weight {rule.weight} missing on {n - n_w} of {n} "
                                    "contributors: plain mean")
                    _note_once(k, out.notes[k])
                    val = s[p + 2] / n
                elif s[p + 4] == 0.0:
                    out.no_data.add(k)
                    continue
                else:
                    val = s[p + 3] / s[p + 4]
            elif agg in (MAX, MIN):
                if s[p + 2] > 0:
                    val = math.nan
                else:
                    val = mx[self.max_pos[k]]
                    if agg == MIN:
                        val = -val
                    if all_int and math.isfinite(val):
                        val = int(val)
            elif agg == SUM:
                val = s[p + 2]
                if all_int and math.isfinite(val):
                    val = int(round(val))
            elif agg == LAST and last is not None and k in last:
                v, is_int = last[k]
                val = int(v) if is_int and math.isfinite(v) else v
            else:  # MEAN, and LAST across ranks
                val = s[p + 2] / n
            out[k] = val
        return out


# ---------------------------------------------------------------- chunks
def reduce_frames(frames: Sequence[Mapping[str, Any]], framework: str = "auto", *,
                  catalog: Catalog = CATALOG) -> Reduced:
    """Reduce the chunks of one optimizer window (in order) into one frame."""
    parsed = [scalars(f) for f in frames]
    keys: set[str] = set()
    for nums, _ in parsed:
        keys.update(nums)
    layout = Layout(key_rules(keys, framework, catalog))
    total = [0.0] * layout.n_sum
    top = [-math.inf] * layout.n_max
    last: dict[str, tuple[float, bool]] = {}
    strings: dict[str, Any] = {}
    for nums, other in parsed:
        s, mx = layout.pack(nums)
        total = [a + b for a, b in zip(total, s)]
        top = [b if b > a else a for a, b in zip(top, mx)]  # NaN is tracked apart, never here
        last.update(nums)
        strings.update(other)
    out = layout.finalize(total, top, last)
    out.inputs = len(frames)
    for k, v in strings.items():
        if k not in out:
            out[k] = v
            out.rules[k] = KeyRule(k, LAST, None, "string value: last")
            out.counts[k] = sum(1 for _, o in parsed if k in o)
    return out
