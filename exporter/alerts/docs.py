"""Generated blocks of docs/alerts.md (alert table, thresholds and their sources, why each critical
pages, cadence table).

    rl-exporter alerts docs      # rewrite the blocks between <!-- name:start --> and <!-- name:end -->
                                 # (and the runbook, exporter/alerts/runbook.py)
"""
from __future__ import annotations

import re
from .recordings import alert_metrics
from .rules import ALERTS
from .render import duration
from .paths import DOC



def alerts_table() -> str:
    rows = ["| Alert | Severity | for | Reads (derived from the expression and its recording rules) |",
            "|---|---|---|---|"]
    for a in ALERTS:
        reads = ", ".join(f"`{m}`" for m in alert_metrics(a))
        rows.append(f"| [{a.name}](../exporter/rules/runbook.md#{a.name.lower()}) | {a.severity} | "
                    f"{duration(a.for_.seconds)} | {reads} |")
    return "\n".join(rows)


def criticals() -> str:
    from .runbook import fill
    return "\n".join(f"- **{a.name}**: {fill(a.why_critical, a)}" for a in ALERTS if a.severity == "critical")


def thresholds_table() -> str:
    from .runbook import value

    def cell(text: str) -> str:
        return text.replace("|", "\\|")
    rows = ["| Threshold | Default | Alert | Where the number comes from |", "|---|---|---|---|"]
    for a in ALERTS:
        for name, t in a.thresholds.items():
            rows.append(f"| `{name}` | {cell(value(name))} | {a.name} | {cell(t.source)} |")
    return "\n".join(rows)


def blocks() -> dict[str, str]:
    from .cadence import table
    return {"alerts-table": alerts_table(), "thresholds-table": thresholds_table(),
            "criticals": criticals(), "cadence-table": table()}


def render(text: str) -> str:
    for name, body in blocks().items():
        pat = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
        if not pat.search(text):
            raise ValueError(f"docs/alerts.md has no <!-- {name}:start/end --> block")
        text = pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
    return text


def write() -> None:
    DOC.write_text(render(DOC.read_text()))


def problems() -> list[str]:
    text = DOC.read_text()
    try:
        want = render(text)
    except ValueError as e:
        return [str(e)]
    return [] if want == text else ["docs/alerts.md tables differ from the rules; run `rl-exporter alerts generate`"]
