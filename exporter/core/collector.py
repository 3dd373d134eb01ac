"""A prometheus_client collector that renders the store: gauges, counters, state sets and
histograms, one render path for all of them.

Why not OTel instruments and its Prometheus reader: the OTel SDK drops NaN/Inf (a NaN loss
would vanish behind its last finite value), its reader renders ~2.5x slower than
prometheus_client, and observe()'s pre-bucketed counts have no public way into an SDK
histogram.
"""
from __future__ import annotations

from prometheus_client.metrics_core import Metric as PromMetric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from ..catalog import COUNTER, INFO, STATE
from .store import Store

_TYPES = {COUNTER: "counter", STATE: "gauge", INFO: "gauge"}
_UNIT_SUFFIX = {"s": "seconds", "By": "bytes"}


class StoreCollector(Collector):
    """Renders every series of one or more stores; `extra` adds computed series."""

    def __init__(self, *stores: Store, extra=None):
        self.stores = list(stores)
        self.extra = extra  # callable -> iterable of (store, metric_name, labels, value)
        self._cache: dict = {}

    def add_store(self, store: Store) -> None:
        self.stores.append(store)

    def describe(self):
        return []  # no up-front description: the series are dynamic

    def _template(self, store: Store, metric, ids):
        # Label dicts and names are built once per store version, values per scrape.
        name = metric.name[:-6] if metric.kind == COUNTER else metric.name
        sample_name = metric.name
        return name, sample_name, [store.labels[i] for i in ids]

    def plain(self, store: Store, cache: dict | None = None):
        """(metric, family name, sample name, [labels], [series ids]) per metric of the store's
        gauges, counters and state sets, whose values are store.values[id]: what collect()
        renders from a store (and a replay renders without building families)."""
        old, out = self._cache, []
        for metric, ids in store.snapshot():
            key = (id(store), metric.name)
            entry = old.get(key)
            if entry is None or entry[0] != len(ids):
                entry = (len(ids), self._template(store, metric, ids))
            if cache is not None:
                cache[key] = entry
            name, sample_name, label_dicts = entry[1]
            out.append((metric, name, sample_name, label_dicts, ids))
        return out

    def collect(self):
        families: dict[str, PromMetric] = {}
        # One template per (store, metric), replaced when the metric gains series; the cache
        # is rebuilt each scrape, so templates of removed stores or old sizes do not pile up.
        cache: dict = {}
        for store in list(self.stores):
            values = store.values
            for metric, name, sample_name, label_dicts, ids in self.plain(store, cache):
                fam = families.get(metric.name)
                if fam is None:
                    unit = _UNIT_SUFFIX.get(metric.unit, "")
                    if unit and not name.endswith("_" + unit):
                        unit = ""
                    fam = PromMetric(name, metric.help, _TYPES.get(metric.kind, "gauge"), unit)
                    families[metric.name] = fam
                fam.samples.extend([Sample(sample_name, lab, values[i], None, None)
                                    for lab, i in zip(label_dicts, ids)])
        self._cache = cache
        self.derived(families)
        return list(families.values())

    def derived(self, families: dict | None = None) -> dict:
        """The histograms' and `extra`'s families (the series not read from store.values),
        added to `families`."""
        families = {} if families is None else families
        for store in list(self.stores):
            for metric, rows in store.histograms.snapshot():
                fam = families.get(metric.name)
                if fam is None:
                    fam = families[metric.name] = PromMetric(metric.name, metric.help, "histogram")
                les = [floatToGoString(b) for b in metric.buckets] + ["+Inf"]
                # OpenMetrics allows _sum only where no observation can be negative: signed
                # buckets (rewards, advantages) carry the buckets alone; +Inf is the count
                signed = bool(metric.buckets) and metric.buckets[0] < 0
                for labels, cum, total, count, _, _ in rows:
                    for le, c in zip(les, cum):
                        lab = dict(labels)
                        lab["le"] = le
                        fam.samples.append(Sample(metric.name + "_bucket", lab, float(c), None, None))
                    if not signed:
                        fam.samples.append(Sample(metric.name + "_count", labels, float(count),
                                                  None, None))
                        fam.samples.append(Sample(metric.name + "_sum", labels, total, None, None))
        if self.extra is not None:
            for store, metric_name, labels, value in self.extra():
                metric = store.catalog.metrics[metric_name]
                fam = families.get(metric_name)
                if fam is None:
                    name = metric.name[:-6] if metric.kind == COUNTER else metric.name
                    fam = PromMetric(name, metric.help, _TYPES.get(metric.kind, "gauge"))
                    families[metric_name] = fam
                lab = {"run": store.run}
                lab.update(labels)
                fam.samples.append(Sample(metric_name, lab, float(value), None, None))
        return families
