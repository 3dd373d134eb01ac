"""Reduce one frame per data-parallel rank into the global frame, on torch.distributed.

    from exporter.distributed import reduce_across_ranks, log_across_ranks
    frame = reduce_across_ranks(local_metrics, group=dp_group, framework="verl")
    # or: reduce, and log on rank 0 only
    log_across_ranks(rlx, local_metrics, step=step, group=dp_group)

Per call, in the steady state: ONE float64 all_reduce(SUM) carrying every weighted
sum, weight, count, plain sum and presence count, and ONE all_reduce(MAX) only when
a max/min key exists (min keys are negated), so 1 or 2 collectives. Float64 keeps
integer counts and extrema exact up to 2**53; an extremum whose contributors were
all integers comes back a Python int.

Keys present on some ranks only: every rank must pack the same layout, so the
layout (sorted union of keys, with their rules) is agreed once and cached per
group. Slot 0 of the SUM vector is a "my keys are not all in the layout" flag;
when any rank raises it, all ranks (they all see the same summed flag) exchange
their key lists with one all_gather_object, rebuild the layout and repeat the SUM
(+MAX). A new key therefore costs one extra round, once.

NaN on one rank: NaN is data. A NaN value with a non-zero weight makes the global
value NaN for weighted means, means and sums (it propagates through the sum); for
max/min the NaN is counted in the SUM vector and the result is NaN explicitly,
never left to a backend's comparison order. A zero-weight NaN carries no data.

Every rank gets the same result. String values are not reduced (each rank keeps
its own). Without an initialised process group this reduces the one frame.
"""
from __future__ import annotations

from typing import Any, Mapping

from .catalog import CATALOG, Catalog
from .catalog.model import LAST
from .reduce import KeyRule, Layout, Reduced, key_rules, scalars

__all__ = ["reduce_across_ranks", "log_across_ranks", "clear_layouts"]

_LAYOUTS: dict = {}   # (group key, framework, catalog id) -> Layout


def clear_layouts() -> None:
    _LAYOUTS.clear()


def _device(dist, group):
    backend = str(dist.get_backend(group)).lower()
    if "nccl" in backend:
        import torch
        return torch.device("cuda", torch.cuda.current_device())
    return None  # cpu


def reduce_across_ranks(frame: Mapping[str, Any], group=None, framework: str = "auto", *,
                        catalog: Catalog = CATALOG) -> Reduced:
    """The global frame, identical on every rank of `group` (None: the default group)."""
    import torch
    import torch.distributed as dist

    nums, other = scalars(frame)
    if not (dist.is_available() and dist.is_initialized()):
        from .reduce import reduce_frames
        return reduce_frames([frame], framework, catalog=catalog)

    gkey = ("world" if group is None else id(group), framework, id(catalog))
    layout: Layout | None = _LAYOUTS.get(gkey)
    if layout is None:
        layout = Layout({})
    device = _device(dist, group)
    collectives = 0

    def run(layout: Layout):
        nonlocal collectives
        s, mx = layout.pack(nums)
        s[0] = 0.0 if layout.keyset.issuperset(nums) else 1.0
        st = torch.tensor(s, dtype=torch.float64, device=device)
        dist.all_reduce(st, op=dist.ReduceOp.SUM, group=group)
        collectives += 1
        s = st.tolist()
        if s[0] > 0:
            return s, None  # some rank has keys outside the layout
        if layout.n_max:
            mt = torch.tensor(mx, dtype=torch.float64, device=device)
            dist.all_reduce(mt, op=dist.ReduceOp.MAX, group=group)
            collectives += 1
            mx = mt.tolist()
        return s, mx

    s, mx = run(layout)
    if mx is None:
        world = dist.get_world_size(group)
        gathered: list = [None] * world
        dist.all_gather_object(gathered, sorted(nums), group=group)
        collectives += 1
        union: set[str] = set()
        for keys in gathered:
            union.update(keys)
        layout = Layout(key_rules(union, framework, catalog))
        _LAYOUTS[gkey] = layout
        s, mx = run(layout)
        if mx is None:  # cannot happen: every rank's keys are in the union
            raise RuntimeError("rl-exporter: ranks disagree on the reduction layout")
    out = layout.finalize(s, mx)
    out.inputs = dist.get_world_size(group)
    out.collectives = collectives
    for k, v in other.items():
        if k not in out:
            out[k] = v
            out.rules[k] = KeyRule(k, LAST, None, "string value: this rank's own")
            out.counts[k] = 1
    return out


def log_across_ranks(exporter, frame: Mapping[str, Any], step=None, group=None,
                     export_ranks=(0,)) -> Reduced:
    """Reduce on every rank (a collective: call it on all ranks), log the global
    frame on the ranks in `export_ranks` (rank 0 by default; None: every rank). The other
    ranks close their own timer window: each rank's phase durations are its own, not reduced."""
    import torch.distributed as dist
    out = reduce_across_ranks(frame, group, exporter.framework, catalog=exporter.catalog)
    rank = dist.get_rank(group) if (dist.is_available() and dist.is_initialized()) else 0
    if export_ranks is None or rank in export_ranks:
        exporter.log(dict(out), step=step)
    else:
        exporter.end_timer_window()
    return out
