"""PromQL helpers for everything that reads or writes rules: the metric names an expression
reads (alerts' and dashboards' name checks, doctor's report), and Prometheus durations both
ways (the rule renderer writes them, overrides and doctor read them), and for people
(`human_duration`: status and doctor).

Metric names are found without a full parser.

Strings, label matchers `{...}`, range/subquery brackets `[...]`, label lists after
`by/without/on/ignoring/group_left/group_right` and Grafana variables are removed first;
what remains are identifiers, and an identifier is a metric name unless it is a
function or aggregation call (followed by `(`), a keyword, or a number/duration.
Recording-rule names (`level:metric:op`) come out like any other name; callers decide
whether they exist.
"""
from __future__ import annotations

import re

KEYWORDS = frozenset({
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
    "offset", "bool", "inf", "nan", "atan2", "start", "end",
})
AGGREGATIONS = frozenset({
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
})

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")
_LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_TOKEN = re.compile(r"(?P<num>\d[\w.]*)|(?P<id>[A-Za-z_:][A-Za-z0-9_:]*)|(?P<other>\S)")


class PromQLError(ValueError):
    pass


def _strip_bracketed(expr: str, open_: str, close: str) -> str:
    out, depth = [], 0
    for ch in expr:
        if ch == open_:
            depth += 1
            if depth == 1:
                out.append(open_)
            continue
        if ch == close:
            if depth == 0:
                raise PromQLError(f"unbalanced {close!r} in {expr!r}")
            depth -= 1
            if depth == 0:
                out.append(close)
            continue
        if depth == 0:
            out.append(ch)
    if depth:
        raise PromQLError(f"unclosed {open_!r} in {expr!r}")
    return "".join(out)


def metric_names(expr: str) -> list[str]:
    """Metric (or recording-rule) names `expr` selects, in order of first appearance."""
    s = _STRING.sub('""', expr)
    s = _VARIABLE.sub("1", s)
    s = _strip_bracketed(s, "{", "}")
    s = _strip_bracketed(s, "[", "]")
    if s.count("(") != s.count(")"):
        raise PromQLError(f"unbalanced parentheses in {expr!r}")
    s = _LABEL_LIST.sub(r"\1", s)
    names: list[str] = []
    tokens = list(_TOKEN.finditer(s))
    for i, t in enumerate(tokens):
        name = t.group("id")
        if not name:
            continue
        nxt = tokens[i + 1].group(0) if i + 1 < len(tokens) else ""
        if nxt == "(":
            continue  # function or aggregation call
        low = name.lower()
        if low in KEYWORDS or name in AGGREGATIONS:
            continue  # e.g. `sum by (x) (...)` after the label list is removed
        if name not in names:
            names.append(name)
    return names


# ------------------------------------------------------------------ durations
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|y|w|d|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def parse_duration(text) -> float:
    """Seconds in a Prometheus duration ("1h30m", "250ms", "2w"); a number is seconds already;
    None, "" and 0 are 0. A ValueError names what cannot be read."""
    if text in (None, "", 0):
        return 0.0
    if isinstance(text, (int, float)):
        return float(text)
    s, total, pos = str(text).strip(), 0.0, 0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise ValueError(f"bad duration {text!r} (use e.g. 90s, 15m, 1h30m)")
    return total


def format_duration(seconds: float) -> str:
    """Prometheus duration string, largest exact units (e.g. 5400 -> 1h30m, 0.25 -> 250ms)."""
    ms = int(round(seconds * 1000))
    if ms <= 0:
        return "0s"
    out = ""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out


def human_duration(seconds) -> str:
    """A duration for people (status, doctor): 40.0s, 12.5m, 3h05m; "-" when unknown."""
    if seconds is None:
        return "-"
    s = float(seconds)
    if s < 120:
        return f"{s:.1f}s"
    if s < 7200:
        return f"{s / 60:.1f}m"
    m = int(round(s / 60))
    return f"{m // 60}h{m % 60:02d}m"
