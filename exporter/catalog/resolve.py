"""Turn a raw framework key into a canonical series, and say why.

Order: exact alias -> family pattern -> "<base>/<stat>" through the base key ->
eval prefix through the training key -> deliberately ignored -> fallback.
The resolver is pure; the hook caches its answers per key.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

from .model import MEAN, STAT_NAMES, Alias, Metric, Vocabulary, stat_rule

FALLBACK_METRIC = "rl_unmapped_value"
MAX_LABEL_VALUE = 128  # longer label values are cut and suffixed with a hash, so they stay distinct

_SWAPPED = {"min": "max", "max": "min"}
_STAT_SUFFIX = re.compile(r"^(?P<base>.+)/(?P<stat>avg|mean|min|max|std|median|var)$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})  # Unicode categories never in a label


@dataclass(frozen=True)
class Resolution:
    key: str
    framework: str
    metric: Metric | None
    labels: tuple[tuple[str, str], ...] = ()
    scale: float = 1.0
    agg: str = MEAN
    weight: str | None = None       # raw key of the same framework, or None
    fallback: bool = False
    ignored: bool = False
    step: bool = False              # the key carries the step number
    reason: str = ""
    deliberate: bool = False        # fallback chosen by the vocabulary, with a reason

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "framework": self.framework,
            "metric": self.metric.name if self.metric else None,
            "labels": dict(self.labels),
            "fallback": self.fallback,
            "ignored": self.ignored,
            "step": self.step,
            "scale": self.scale,
            "aggregation": self.agg,
            "weight": self.weight,
            "reason": self.reason,
            "deliberate_fallback": self.deliberate,
        }


def sanitize_label_value(value: str) -> str:
    """Printable, bounded label value; distinct inputs stay distinct after a cut."""
    value = unicodedata.normalize("NFC", str(value))
    if value.isascii():
        clean = _CONTROL.sub("_", value)
    else:  # also bidi overrides, zero-width and other format characters (label spoofing)
        clean = "".join("_" if unicodedata.category(c) in _UNPRINTABLE else c for c in value)
    if len(clean) > MAX_LABEL_VALUE or clean != value:
        digest = hashlib.blake2s(value.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
        clean = clean[: MAX_LABEL_VALUE - 9] + "~" + digest
    return clean


class Resolver:
    def __init__(self, metrics: dict[str, Metric], vocabularies: dict[str, Vocabulary],
                 order: tuple[str, ...]):
        self.metrics = metrics
        self.vocabularies = vocabularies
        self.order = order  # vocabularies tried, in turn, for framework="auto"

    def resolve(self, key: str, framework: str = "auto") -> Resolution:
        names = self.order if framework in (None, "", "auto") else (framework,)
        for name in names:
            if name not in self.vocabularies:
                raise KeyError(f"unknown framework {framework!r}; known: {', '.join(self.order)}")
        if len(names) > 1:
            # auto: an exact key anywhere beats a family pattern of an earlier vocabulary
            # (OpenRLHF's W&B-style `train/*` must not shadow slime's or posttrain's own keys)
            for name in names:
                vocab = self.vocabularies[name]
                if key in vocab.keys or key in vocab.step_keys:
                    return self._resolve_in(key, vocab, depth=0)
        for name in names:
            found = self._resolve_in(key, self.vocabularies[name], depth=0)
            if found is not None:
                return found
        fw = names[0] if len(names) == 1 else "auto"
        return Resolution(key, fw, self.metrics[FALLBACK_METRIC],
                          (("key", sanitize_label_value(key)),), fallback=True,
                          reason="no alias in " + ("any vocabulary" if fw == "auto" else fw)
                          + f": exported as {FALLBACK_METRIC}{{key=...}}")

    def _resolve_in(self, key: str, vocab: Vocabulary, depth: int) -> Resolution | None:
        if key in vocab.step_keys:
            return Resolution(key, vocab.name, self.metrics["rl_training_step"], agg="max",
                              step=True, reason=f"step key of {vocab.name}")
        hit = vocab.keys.get(key)
        if hit is not None:
            return self._make(key, vocab, hit, {}, f"alias in {vocab.name}")
        for pat in vocab.patterns:
            m = pat.regex.match(key)
            if m:
                return self._make(key, vocab, pat.alias, m.groupdict(),
                                  f"pattern {pat.regex.pattern} in {vocab.name}")
        why = vocab.ignored.get(key)
        if why is None:
            for regex, reason in vocab.ignored_patterns:
                if regex.match(key):
                    why = reason
                    break
        if why is not None:
            return Resolution(key, vocab.name, None, ignored=True,
                              reason=f"ignored by {vocab.name}: {why}")
        for regex, why in vocab.fallback_patterns:
            if regex.match(key):
                return Resolution(key, vocab.name, self.metrics[FALLBACK_METRIC],
                                  (("key", sanitize_label_value(key)),), fallback=True,
                                  deliberate=True, reason=f"left on {FALLBACK_METRIC} by {vocab.name}: {why}")
        if depth > 2:
            return None
        if vocab.stat_suffixes:
            m = _STAT_SUFFIX.match(key)
            if m:
                base = self._resolve_in(m.group("base"), vocab, depth + 1)
                if base is not None and base.deliberate:
                    return Resolution(key, vocab.name, base.metric,
                                      (("key", sanitize_label_value(key)),), fallback=True,
                                      deliberate=True, reason=base.reason)
                if base is not None and base.metric is not None and "stat" in base.metric.labels \
                        and not any(k == "stat" for k, _ in base.labels):
                    stat = STAT_NAMES[m.group("stat")]
                    if base.scale < 0 and stat in _SWAPPED:  # a negated key: its max is our min
                        stat = _SWAPPED[stat]
                    labels = dict(base.labels)
                    if stat != "mean":
                        labels["stat"] = stat
                    return Resolution(key, vocab.name, base.metric, tuple(sorted(labels.items())),
                                      base.scale, stat_rule(stat, base.agg), base.weight,
                                      reason=f"statistic '{stat}' of {m.group('base')} ({base.reason})")
        for prefix in vocab.eval_prefixes:
            if key.startswith(prefix) and len(key) > len(prefix):
                base = self._resolve_in(key[len(prefix):], vocab, depth + 1)
                if base is not None and base.deliberate:
                    # the eval copy of a key left on the fallback on purpose stays there
                    return Resolution(key, vocab.name, base.metric,
                                      (("key", sanitize_label_value(key)),), fallback=True,
                                      deliberate=True, reason=base.reason)
                if base is not None and base.metric is not None and "split" in base.metric.labels \
                        and not base.fallback:
                    labels = dict(base.labels)
                    labels["split"] = "eval"
                    return Resolution(key, vocab.name, base.metric, tuple(sorted(labels.items())),
                                      base.scale, base.agg, base.weight,
                                      reason=f"eval copy of {key[len(prefix):]} ({base.reason})")
        return None

    def _make(self, key: str, vocab: Vocabulary, a: Alias, groups: dict, reason: str) -> Resolution:
        metric = self.metrics[a.metric]
        labels: dict[str, str] = {}
        for name, value in groups.items():
            if value is not None and name in metric.labels:
                labels[name] = value
        for name, value in a.labels:
            if "{" in value:
                value = value.format(**{k: (v or "") for k, v in groups.items()})
            labels[name] = value
        if "stat" in labels:
            labels["stat"] = STAT_NAMES.get(labels["stat"], labels["stat"])
            if labels["stat"] == "mean":
                del labels["stat"]
        labels = {k: sanitize_label_value(v) for k, v in labels.items() if v != ""}
        agg = a.agg or stat_rule(labels.get("stat"), metric.agg)
        weight = a.weight
        return Resolution(key, vocab.name, metric, tuple(sorted(labels.items())), a.scale, agg,
                          weight, reason=reason)
