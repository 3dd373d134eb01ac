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
