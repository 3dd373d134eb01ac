"""The catalog: canonical metrics and every framework's vocabulary for them.

    from exporter.catalog import CATALOG
    CATALOG.resolve("actor/pg_clipfrac", "verl").metric.name   # 'rl_policy_clip_ratio'
"""
from __future__ import annotations

import importlib
from dataclasses import replace
from functools import cached_property

from .metrics import METRICS, SELF_METRICS
from .observe import ALIASES as OBSERVE_ALIASES
from .releases import RELEASES, Releases  # noqa: F401
from .model import COUNTER, GAUGE, HISTOGRAM, INFO, STATE, Metric, Vocabulary  # noqa: F401
from .resolve import FALLBACK_METRIC, Resolution, Resolver, sanitize_label_value  # noqa: F401

# Order in which framework="auto" tries vocabularies (first match wins).
FRAMEWORKS = ("verl", "trl", "openrlhf", "areal", "slime", "miles", "posttrain", "generic",
              "posttrain_carbonteq", "swift", "llamafactory")
# names users type for a framework, besides its vocabulary name
FRAMEWORK_ALIASES = {"ms-swift": "swift", "ms_swift": "swift", "modelscope-swift": "swift",
                     "llama-factory": "llamafactory", "llama_factory": "llamafactory"}


class Catalog:
    def __init__(self, metrics: list[Metric], vocabularies: list[Vocabulary]):
        self.metrics: dict[str, Metric] = {}
        for m in metrics:
            if m.name in self.metrics:
                raise ValueError(f"metric {m.name} declared twice")
            self.metrics[m.name] = m
        self.vocabularies = {v.name: v for v in vocabularies}
        self._check()
        self.releases = RELEASES
        self._stamp_releases()
        self.resolver = Resolver(self.metrics, self.vocabularies,
                                 tuple(v.name for v in vocabularies))

    def _check(self) -> None:
        for short, name in OBSERVE_ALIASES.items():
            if name not in self.metrics or self.metrics[name].kind != HISTOGRAM:
                raise ValueError(f"observe alias {short!r} names {name}, not a histogram")
        for v in self.vocabularies.values():
            aliases = list(v.keys.items()) + [(p.regex.pattern, p.alias) for p in v.patterns]
            for key, a in aliases:
                m = self.metrics.get(a.metric)
                if m is None:
                    raise ValueError(f"{v.name}: {key!r} maps to unknown metric {a.metric}")
                if m.kind == HISTOGRAM:
                    raise ValueError(f"{v.name}: {key!r} maps to histogram {a.metric}")
                for label, _ in a.labels:
                    if label not in m.labels:
                        raise ValueError(f"{v.name}: {key!r} sets label {label!r} "
                                         f"that {m.name} does not declare")

    def _stamp_releases(self) -> None:
        """Each alias's since/until from the mined release key lists."""
        rel = self.releases
        for v in self.vocabularies.values():
            if v.name not in rel.data:
                continue
            for key, a in list(v.keys.items()):
                since, until = rel.span(v.name, rel.ranges(v.name, key))
                v.keys[key] = replace(a, since=since, until=until)
            for i, p in enumerate(v.patterns):
                since, until = rel.span(v.name, rel.ranges_of_pattern(v.name, p.regex))
                v.patterns[i] = replace(p, alias=replace(p.alias, since=since, until=until))

    def metric(self, name: str) -> Metric:
        return self.metrics[name]

    def resolve(self, key: str, framework: str = "auto") -> Resolution:
        return self.resolver.resolve(key, FRAMEWORK_ALIASES.get(framework, framework))

    @cached_property
    def names(self) -> frozenset[str]:
        """Every exposed name, with the sample suffixes Prometheus adds to histograms."""
        out = set()
        for m in self.metrics.values():
            out.add(m.name)
            if m.kind == HISTOGRAM:
                out.update(m.name + s for s in ("_bucket", "_sum", "_count"))
        return frozenset(out)

    def aliases_of(self, metric: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for v in self.vocabularies.values():
            keys = [k for k, a in v.keys.items() if a.metric == metric]
            keys += [p.regex.pattern for p in v.patterns if p.alias.metric == metric]
            if keys:
                out[v.name] = keys
        return out

    def alias_releases_of(self, metric: str) -> dict[str, dict[str, dict]]:
        """framework -> alias -> {since, until} for the mined frameworks."""
        out: dict[str, dict] = {}
        for v in self.vocabularies.values():
            if v.name not in self.releases.data:
                continue
            rows = {k: {"since": a.since, "until": a.until} for k, a in v.keys.items()
                    if a.metric == metric and a.since}
            rows.update({p.regex.pattern: {"since": p.alias.since, "until": p.alias.until}
                         for p in v.patterns if p.alias.metric == metric and p.alias.since})
            if rows:
                out[v.name] = rows
        return out

    def as_json(self) -> list[dict]:
        rows = []
        for m in self.metrics.values():
            rows.append({
                "name": m.name, "kind": m.kind, "unit": m.unit, "help": m.help,
                "labels": ["run"] + list(m.labels) if m.kind != INFO else ["run"] + list(m.labels),
                "aggregation": m.agg, "weight": m.weight, "states": list(m.states),
                "buckets": list(m.buckets), "group": m.group, "aliases": self.aliases_of(m.name),
                "releases": self.alias_releases_of(m.name),
            })
        for v in self.vocabularies.values():
            if v.ignored or v.ignored_patterns:
                rows.append({"name": None, "kind": "ignored", "framework": v.name,
                             "keys": sorted(v.ignored),
                             "patterns": [r.pattern for r, _ in v.ignored_patterns],
                             "why": sorted(set(v.ignored.values()) |
                                           {w for _, w in v.ignored_patterns})})
        return rows


def _load() -> Catalog:
    metrics = list(METRICS) + list(SELF_METRICS)
    metrics.extend(importlib.import_module(f"{__name__}.hardware").METRICS)  # GPU and MFU metrics
    vocabularies = []
    for name in FRAMEWORKS:
        mod = importlib.import_module(f"{__name__}.frameworks.{name}")
        metrics.extend(getattr(mod, "METRICS", ()))
        vocabularies.append(mod.VOCABULARY)
    return Catalog(metrics, vocabularies)


CATALOG = _load()
