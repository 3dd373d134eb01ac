"""The shipped rule files and runbook, read generically (whatever rules are there).

Rules: every group of every file; recording rules keep their order, alerting rules give
name, expr, for, labels and annotations. The runbook: one section per alert, found by the
anchor of the alert's `runbook_url` (or its name); each `- **Label**: text` bullet becomes
a field, so sections may grow new fields without a change here.
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

from .. import promql
from .. import rules as shipped
from ..promql import parse_duration

# package data: present in a wheel and the image, not only in a checkout
DEFAULT_RULES = str(shipped.DIR / "*.yaml")
DEFAULT_RUNBOOK = str(shipped.RUNBOOK)
# fields that say what to look at next, most specific first
NEXT_FIELDS = ("check next", "next", "diagnosis", "triage", "what to check")


class RulesError(Exception):
    pass


@dataclass
class Recording:
    record: str
    expr: str
    group: str
    interval: float | None
    labels: dict = field(default_factory=dict)


@dataclass
class Alert:
    name: str
    expr: str
    for_s: float
    labels: dict
    annotations: dict
    group: str
    interval: float | None
    keep_firing_s: float = 0.0

    @property
    def severity(self) -> str:
        return self.labels.get("severity", "")

    @property
    def anchor(self) -> str:
        url = self.annotations.get("runbook_url", "")
        return url.split("#", 1)[1] if "#" in url else slug(self.name)


@dataclass
class RuleSet:
    files: list = field(default_factory=list)
    recording: list = field(default_factory=list)
    alerts: list = field(default_factory=list)


def duration(text) -> float:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise RulesError(str(e)) from None


def load(patterns: list[str] | None = None) -> RuleSet:
    try:
        import yaml
    except ImportError as e:
        raise RulesError("reading rule files needs PyYAML: pip install 'rl-exporter[report]'") from e
    files: list[str] = []
    for pat in patterns or [DEFAULT_RULES]:
        hits = sorted(glob.glob(pat)) if any(c in pat for c in "*?[") else [pat]
        files.extend(h for h in hits if os.path.isfile(h))
    if not files:
        raise RulesError(f"no rule files at {', '.join(patterns or [DEFAULT_RULES])} (pass "
                         "--rules FILE)")
    rs = RuleSet(files=files)
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        for g in doc.get("groups", []) or []:
            interval = duration(g["interval"]) if g.get("interval") else None
            for r in g.get("rules", []) or []:
                if "record" in r:
                    rs.recording.append(Recording(r["record"], str(r["expr"]), g.get("name", ""),
                                                  interval, dict(r.get("labels") or {})))
                elif "alert" in r:
                    rs.alerts.append(Alert(r["alert"], str(r["expr"]), duration(r.get("for")),
                                           dict(r.get("labels") or {}),
                                           dict(r.get("annotations") or {}), g.get("name", ""),
                                           interval, duration(r.get("keep_firing_for"))))
    return rs


def layers(recording: list[Recording]) -> list[list[Recording]]:
    """Recording rules in dependency layers (a rule reading another's output comes after it)."""
    names = {r.record for r in recording}
    uses = {r.record: {n for n in names if n != r.record and _mentions(r.expr, n)}
            for r in recording}
    done: set[str] = set()
    out = []
    left = list(recording)
    while left:
        layer = [r for r in left if uses[r.record] <= done]
        if not layer:  # a cycle: evaluate the rest together rather than loop forever
            layer = left
        out.append(layer)
        done |= {r.record for r in layer}
        left = [r for r in left if r.record not in done]
    return out


# Series an alerting rule writes (Prometheus's names): recording rules reading them come after
# the alerts, as in a live group they read the alerts' last evaluation.
ALERT_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})
# Functions that give a result without any input series (absent(), vector(0), a scalar).
_FROM_NOTHING = re.compile(r"\b(absent|absent_over_time|vector|scalar)\s*\(")


def reads(expr: str) -> set[str]:
    """Every series name an expression reads (a rule the reader cannot follow: every
    identifier in it)."""
    try:
        return set(promql.metric_names(expr))
    except promql.PromQLError:
        return set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))


def may_have_data(expr: str, available: set[str]) -> bool:
    """False only when the expression is empty for certain. PromQL's set operators decide
    it where they bind the loosest: `a or b` is empty when both are, `a and b` / `a unless b`
    when `a` is; below them any aggregation, function or operator of empty vectors is empty,
    so it is enough that none of the series read exists. An expression reading nothing, or
    with absent()/vector()/scalar() in it, may make its own."""
    if _FROM_NOTHING.search(expr):
        return True
    ors = _split_top(expr, ("or",))
    if len(ors) > 1:
        return any(may_have_data(part, available) for part in ors)
    ands = _split_top(expr, ("and", "unless"))
    if len(ands) > 1:
        return may_have_data(ands[0], available)
    inner = _unwrap(expr)
    if inner != expr:
        return may_have_data(inner, available)
    names = reads(expr)
    return not names or bool(names & available)


_OPEN, _CLOSE = "([{", ")]}"
_WORD = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def _blank_strings(expr: str) -> str:
    return promql._STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', expr)


def _split_top(expr: str, words: tuple[str, ...]) -> list[str]:
    """`expr` cut at the binary operators `words` outside any bracket (strings aside)."""
    plain = _blank_strings(expr)
    depth, cuts, i = 0, [], 0
    while i < len(plain):
        ch = plain[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and (ch.isalpha() or ch in "_:"):
            m = _WORD.match(plain, i)
            if m.group(0) in words and (i == 0 or not (plain[i - 1].isalnum()
                                                       or plain[i - 1] in "_:")):
                cuts.append((i, m.end()))
            i = m.end()
            continue
        i += 1
    parts, last = [], 0
    for a, b in cuts:
        parts.append(expr[last:a])
        last = b
    parts.append(expr[last:])
    return [p.strip() for p in parts]


def _unwrap(expr: str) -> str:
    """The inside of one pair of parentheses around the whole expression, else itself."""
    e = expr.strip()
    if not (e.startswith("(") and e.endswith(")")):
        return e
    plain = _blank_strings(e)
    depth = 0
    for i, ch in enumerate(plain):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0 and i != len(e) - 1:
                return e  # `(a) + (b)`: the first pair closes early
    return e[1:-1].strip()


def read_by_alerts(ruleset) -> set[str]:
    """The recording rules the alerts read, directly or through other recordings."""
    exprs = {r.record: r.expr for r in ruleset.recording}
    out: set[str] = set()
    todo = [a.expr for a in ruleset.alerts]
    while todo:
        for n in reads(todo.pop()):
            if n in exprs and n not in out:
                out.add(n)
                todo.append(exprs[n])
    return out


def after_alerts(recording: list[Recording]) -> set[str]:
    """Recording rules that read ALERTS, directly or through other recordings."""
    exprs = {r.record: reads(r.expr) for r in recording}
    out = {n for n, names in exprs.items() if names & ALERT_SERIES}
    grew = True
    while grew:
        more = {n for n, names in exprs.items() if n not in out and names & out}
        out |= more
        grew = bool(more)
    return out


def _mentions(expr: str, name: str) -> bool:
    return re.search(r"(?<![\w:])" + re.escape(name) + r"(?![\w:])", expr) is not None


def metric_names(expr: str, known: set[str]) -> set[str]:
    """Series names an expression reads that exist in `known`. A user's rule the small
    PromQL reader cannot follow is read as every identifier in it (doctor only plots these)."""
    try:
        names = promql.metric_names(expr)
    except promql.PromQLError:
        names = re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr)
    return {m for m in names if m in known}


_TPL_LABEL = re.compile(r"{{\s*\$labels\.(\w+)\s*}}")
_TPL_VALUE = re.compile(r"{{\s*\$value\s*(?:\|\s*\w+\s*)?}}")
_TPL_PRINTF = re.compile(r'{{\s*printf\s+"([^"]*)"\s+\$value\s*}}')


def expand(template: str, labels: dict, value: float) -> str:
    """The common parts of an annotation template ($labels.x, $value, printf of $value);
    anything else is left as written."""
    if "{{" not in template:
        return template
    out = _TPL_LABEL.sub(lambda m: str(labels.get(m.group(1), "")), template)

    def printf(m):
        try:
            return m.group(1) % value
        except (TypeError, ValueError):
            return m.group(0)
    out = _TPL_PRINTF.sub(printf, out)
    return _TPL_VALUE.sub(lambda m: f"{value:.4g}", out)


# ------------------------------------------------------------------ runbook
def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


_BULLET = re.compile(r"^\s*[-*]\s+\*\*([^*]+?)\*\*(?:\s*\(([^)]*)\))?\s*:?\s*(.*)$")


def runbook(path: str | None = None) -> dict[str, dict]:
    """anchor -> {"title": heading, "order": n, "fields": {label lowercased: text}, "text": body}."""
    path = path or DEFAULT_RUNBOOK
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return {}
    out: dict[str, dict] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^(#{2,6})\s+(.*?)\s*$", line)
        if m:
            title = m.group(2)
            cur = {"title": title, "order": len(out), "fields": {}, "lines": []}
            out[slug(title)] = cur
            continue
        if cur is None:
            continue
        cur["lines"].append(line)
        b = _BULLET.match(line)
        if b:
            label = b.group(1).strip().rstrip(":").lower()
            cur["fields"][label] = b.group(3).strip().lstrip(":").strip()
            cur["_last"] = label
        elif line.startswith("  ") and cur.get("_last") and line.strip():
            cur["fields"][cur["_last"]] += " " + line.strip()  # a wrapped bullet
    for sec in out.values():
        sec["text"] = "\n".join(sec.pop("lines")).strip()
        sec.pop("_last", None)
    return out


def next_check(section: dict | None) -> str:
    if not section:
        return ""
    fields = section["fields"]
    for want in NEXT_FIELDS:
        for label, text in fields.items():
            if label == want or label.startswith(want):
                return text
    return next(iter(fields.values()), section.get("text", "")[:400])
