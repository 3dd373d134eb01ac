"""The catalog's data types: a canonical metric, and a framework's alias for it.

A metric is declared once (name, kind, unit, help, aggregation rule); each
framework vocabulary maps its raw keys onto metrics with `alias()` (exact keys)
and `pattern()` (key families whose run-time parts become labels).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# Metric kinds.
GAUGE = "gauge"          # latest value of a per-step number
COUNTER = "counter"      # a cumulative count the trainer reports (exported with _total)
STATE = "state"          # a string-valued key: one series per state, 1 for the current one
INFO = "info"            # identity; value is always 1
HISTOGRAM = "histogram"  # distributions recorded by observe()/timer(), served through OTel

KINDS = (GAUGE, COUNTER, STATE, INFO, HISTOGRAM)

# Aggregation rules: how one value is formed from several chunks or ranks.
WMEAN = "weighted_mean"  # sum(v*w)/sum(w) by the declared weight
SUM = "sum"
MAX = "max"
MIN = "min"
MEAN = "mean"
LAST = "last"            # "the applied update": the last chunk's value

AGGS = (WMEAN, SUM, MAX, MIN, MEAN, LAST)

# Label conventions, used everywhere (see README "Naming"):
# - `stat` appears only for statistics other than the mean (min, max, std, median, pNN);
#   the unlabelled series of a metric is its mean/primary value.
# - `split="eval"` marks a metric computed on held-out data by a trainer that logs
#   eval copies of training keys (HF/TRL `eval_*`); absent means training data.
STAT_NAMES = {"avg": "mean", "mean": "mean", "min": "min", "max": "max", "std": "std",
              "median": "median", "var": "var", "sum": "sum"}

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Metric:
    """One canonical series family."""

    name: str
    kind: str
    unit: str
    help: str
    labels: tuple[str, ...] = ()
    agg: str = MEAN
    weight: str | None = None        # canonical metric whose value weights this one (WMEAN)
    states: tuple[str, ...] = ()     # STATE: the known states
    buckets: tuple[float, ...] = ()  # HISTOGRAM: explicit bucket bounds
    group: str = ""                  # family used by docs and dashboards

    def __post_init__(self):
        if not _NAME_RE.match(self.name):
            raise ValueError(f"bad metric name {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: bad kind {self.kind!r}")
        if self.agg not in AGGS:
            raise ValueError(f"{self.name}: bad aggregation {self.agg!r}")
        if self.agg == WMEAN and not self.weight:
            raise ValueError(f"{self.name}: weighted_mean needs a weight")
        if (self.kind == COUNTER) != self.name.endswith("_total"):
            raise ValueError(f"{self.name}: only counters end in _total")
        if self.kind == STATE and "state" not in self.labels:
            object.__setattr__(self, "labels", self.labels + ("state",))


@dataclass(frozen=True)
class Alias:
    """A raw key (or a family of raw keys) that feeds a metric.

    `labels` are fixed label values; for patterns, a value may name a regex group
    as "{group}", and every named group that is also a label of the metric is
    applied automatically. `scale` converts to base units (ms -> s: 0.001).
    `agg`/`weight` override the metric's rule where the framework reduces the
    key differently (the weight is a raw key of the same framework).
    """

    metric: str
    labels: tuple[tuple[str, str], ...] = ()
    scale: float = 1.0
    agg: str | None = None
    weight: str | None = None
    note: str = ""
    since: str = ""   # first mined release tag that emits the key ("" where not mined)
    until: str = ""   # last release tag that emitted it; "" while the latest release still does


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern
    alias: Alias


@dataclass
class Vocabulary:
    """One framework's keys. Built by each module in catalog/frameworks/."""

    name: str
    title: str
    keys: dict[str, Alias] = field(default_factory=dict)
    patterns: list[Pattern] = field(default_factory=list)
    ignored: dict[str, str] = field(default_factory=dict)          # exact key -> why
    ignored_patterns: list[tuple[re.Pattern, str]] = field(default_factory=list)
    # keys that carry no meaning of their own: exported on the bounded fallback on purpose
    fallback_patterns: list[tuple[re.Pattern, str]] = field(default_factory=list)
    step_keys: tuple[str, ...] = ()      # keys that carry the step number
    stat_suffixes: bool = True           # resolve "<base>/max" through "<base>"
    eval_prefixes: tuple[str, ...] = ()  # "eval_" -> same metric with split="eval"
    doc: str = ""


def alias(metric: str, *, scale: float = 1.0, agg: str | None = None,
          weight: str | None = None, note: str = "", **labels: str) -> Alias:
    if agg is not None and agg not in AGGS:
        raise ValueError(f"bad aggregation {agg!r}")
    return Alias(metric, tuple(sorted(labels.items())), scale, agg, weight, note)


def pattern(regex: str, metric: str, **kw) -> Pattern:
    return Pattern(re.compile(regex), alias(metric, **kw))


def stat_rule(stat: str | None, default: str) -> str:
    """The aggregation a statistic implies: a max composes by max, a min by min."""
    if stat == "max":
        return MAX
    if stat == "min":
        return MIN
    if stat in ("std", "median", "var") or (stat and stat.startswith("p")):
        return MEAN  # does not compose exactly; the mean is the honest approximation
    return default
