"""Metric names a PromQL expression reads, without a full parser.

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
