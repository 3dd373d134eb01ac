"""Per-sample distributions: `exporter.observe("response_length", lengths)`.

Values (a torch tensor on any device, a numpy array, a list/tuple, or one number)
become observations of a catalog HISTOGRAM metric, kept in the store and served like every
other series (Prometheus `_bucket/_sum/_count`, OTLP), so Grafana can draw heatmaps and PromQL can take
`histogram_quantile` over time. Buckets are the metric's, from the catalog.

No Python per-element work for tensors and arrays: bucket counts are computed on
the tensor's device (torch.bucketize + one scatter/bincount, numpy.searchsorted +
bincount), packed
with sum/min/max into one float64 vector and moved to the host in ONE transfer.
On CUDA the kernels are only enqueued on the caller's stream and the copy goes to
pinned memory with non_blocking=True; a background thread polls the copy's event
and merges the counts, so the caller never synchronizes. The counts are merged
into the store's histogram in one step (core/histograms.py), not one record() per
value; `observe` never raises.

Names: a catalog histogram (`rl_sample_reward`) or a short alias (`reward`).
Unknown names, undeclared labels and unusable values are counted in
rl_exporter_values_rejected_total{reason=unknown_histogram|label|type} and logged
once; NaN/Inf values are left out of the buckets and counted in
rl_exporter_nonfinite_values_total{metric}.
"""
from __future__ import annotations

import bisect
import logging
import math
import numbers
import sys
import threading

from .catalog import HISTOGRAM, sanitize_label_value
from .catalog.observe import ALIASES  # the catalog owns every alias

log = logging.getLogger("rl_exporter")


class Distributions:
    def __init__(self, exporter, resolver=None):
        self.exporter = exporter  # the served run (core/run.py `ServedRun.distributions`)
        self.catalog = exporter.catalog
        self.resolver = resolver
        self._bounds: dict = {}     # (metric, device) -> bounds tensor
        self._logged: set = set()
        self._lock = threading.Lock()
        self.merged = 0             # observe() calls merged into the store

    # ------------------------------------------------------------ caller thread
    def observe(self, name, values, labels=None) -> None:
        try:
            metric = self._metric(name)
            if metric is None:
                return
            attrs = self._attrs(metric, labels)
            if attrs is None:
                return
            torch = sys.modules.get("torch")
            if torch is not None and isinstance(values, torch.Tensor):
                self._observe_tensor(torch, metric, attrs, values)
            else:
                self._observe_host(metric, attrs, values)
        except Exception as e:  # never into the training loop
            self.exporter.counts.error("observe", e)

    def _reject(self, reason: str, message: str) -> None:
        self.exporter.counts.reject(reason, message)

    def _metric(self, name):
        full = ALIASES.get(name, name) if isinstance(name, str) else None
        m = self.catalog.metrics.get(full) if full is not None else None
        if m is None or m.kind != HISTOGRAM or full in _INTERNAL:
            self._reject("unknown_histogram",
                         f"observe({name!r}): not a distribution metric; known: "
                         + ", ".join(sorted(set(ALIASES) | set(ALIASES.values()))))
            return None
        return m

    def _attrs(self, metric, labels):
        """The series' labels as sorted pairs (the store adds `run`); None if undeclared."""
        attrs = {}
        if labels:
            for k, v in dict(labels).items():
                if k not in metric.labels:
                    self._reject("label", f"observe({metric.name}): label {k!r} is not declared "
                                 f"(declared: {', '.join(metric.labels) or 'none'})")
                    return None
                attrs[k] = sanitize_label_value(v)
        return tuple(sorted(attrs.items()))

    def _observe_host(self, metric, attrs, values) -> None:
        if isinstance(values, (str, bytes)) or values is None:
            self._reject("type", f"observe({metric.name}): got a {type(values).__name__}")
            return
        # numpy is optional (not a dependency): used when the process has it loaded,
        # else a bisect per value in plain Python
        np = sys.modules.get("numpy")
        if np is None or isinstance(values, numbers.Real) or not hasattr(values, "__len__"):
            self._observe_python(metric, attrs, values)
            return
        try:
            v = np.asarray(values, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError, OverflowError):
            self._reject("type", f"observe({metric.name}): values of type "
                         f"{type(values).__name__} are not numbers")
            return
        if v.size == 0:
            return
        bounds = np.asarray(metric.buckets, dtype=np.float64)
        finite = np.isfinite(v)
        nonfinite = int(v.size - np.count_nonzero(finite))
        if nonfinite:
            v = v[finite]
        if v.size:
            idx = np.searchsorted(bounds, v, side="left")  # bounds[i-1] < v <= bounds[i]: `le`
            counts = np.bincount(idx, minlength=len(bounds) + 1).tolist()
            self._merge(metric, attrs, counts, float(v.sum()), float(v.min()), float(v.max()),
                        nonfinite)
        else:
            self._merge(metric, attrs, None, 0.0, math.inf, -math.inf, nonfinite)

    def _observe_python(self, metric, attrs, values) -> None:
        """Lists, tuples, iterables and single numbers, without numpy: a bisect per value
        (a few hundred values per call is the usual size)."""
        try:
            if isinstance(values, numbers.Real):
                vals = [float(values)]
            else:
                vals = [float(x) for x in values]
        except (TypeError, ValueError, OverflowError):
            self._reject("type", f"observe({metric.name}): values of type "
                         f"{type(values).__name__} are not numbers")
            return
        if not vals:
            return
        bounds = metric.buckets
        counts = [0] * (len(bounds) + 1)
        total, vmin, vmax, nonfinite = 0.0, math.inf, -math.inf, 0
        left = bisect.bisect_left  # bounds[i-1] < v <= bounds[i]: Prometheus `le`
        for x in vals:
            if x - x != 0.0:
                nonfinite += 1
                continue
            counts[left(bounds, x)] += 1
            total += x
            if x < vmin:
                vmin = x
            if x > vmax:
                vmax = x
        self._merge(metric, attrs, counts if nonfinite < len(vals) else None, total, vmin, vmax,
                    nonfinite)

    def _observe_tensor(self, torch, metric, attrs, values) -> None:
        if values.numel() == 0:
            return
        nb = len(metric.buckets)
        with torch.no_grad():
            v = values.detach().reshape(-1).to(torch.float64)
            dev = v.device
            bounds = self._bounds.get((metric.name, dev))
            if bounds is None:
                bounds = torch.tensor(metric.buckets, dtype=torch.float64, device=dev)
                self._bounds[(metric.name, dev)] = bounds
            finite = torch.isfinite(v)
            idx = torch.bucketize(v, bounds)  # right=False: bounds[i-1] < v <= bounds[i]
            idx = torch.where(finite, idx, torch.full_like(idx, nb + 1))  # bin nb+1: NaN/Inf
            if dev.type == "cpu":
                counts = torch.bincount(idx, minlength=nb + 2).to(torch.float64)
            else:  # bincount sizes its output from max() on CUDA: a sync. scatter_add does not.
                counts = torch.zeros(nb + 2, dtype=torch.float64, device=dev)
                counts.scatter_add_(0, idx, torch.ones((), dtype=torch.float64, device=dev)
                                    .expand_as(idx))
            zero = torch.zeros((), dtype=torch.float64, device=dev)
            inf = torch.full((), math.inf, dtype=torch.float64, device=dev)
            stats = torch.stack([torch.where(finite, v, zero).sum(),
                                 torch.where(finite, v, inf).amin(),
                                 torch.where(finite, v, -inf).amax()])
            packed = torch.cat([counts, stats])
            if dev.type == "cpu":
                self._merge_packed(metric, attrs, packed.tolist(), nb)
                return
            host = torch.empty(packed.shape, dtype=torch.float64, pin_memory=True)
            host.copy_(packed, non_blocking=True)  # the one device->host transfer
            event = torch.cuda.Event()
            event.record()
        resolver = self.resolver or self.exporter.resolver
        resolver.submit(event.query, lambda: self._merge_packed(metric, attrs, host.tolist(), nb),
                        on_timeout=lambda: self._reject("device_timeout",
                                                        f"observe({metric.name}): device copy "
                                                        "did not complete"))

    # ------------------------------------------------------------ merge (any thread)
    def _merge_packed(self, metric, attrs, packed, nb) -> None:
        counts = [int(c) for c in packed[:nb + 1]]
        nonfinite = int(packed[nb + 1])
        total, vmin, vmax = packed[nb + 2], packed[nb + 3], packed[nb + 4]
        self._merge(metric, attrs, counts if any(counts) else None, total, vmin, vmax, nonfinite)

    def _merge(self, metric, attrs, counts, total, vmin, vmax, nonfinite) -> None:
        if nonfinite:
            self.exporter.counts.add_nonfinite(metric.name, nonfinite)
        if counts is None:
            return
        self.exporter.store.histograms.merge(metric, attrs, counts, total, vmin, vmax)
        self.merged += 1


_INTERNAL = frozenset({"rl_exporter_frame_processing_seconds", "rl_phase_timing_seconds"})
