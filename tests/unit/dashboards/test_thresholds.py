"""No dashboard paints a healthy value as a warning.

Every threshold-coloured panel (stat, bargauge, table, state-timeline, gauge, and the
threshold lines of a timeseries) is read against the healthy ranges the sources state
(exporter/dashboards/healthy.py): a value inside one of them must not fall in a yellow, orange or red
threshold step."""
from __future__ import annotations

import re

import pytest

from exporter.dashboards import DASHBOARDS
from exporter.dashboards.healthy import HEALTHY
from exporter.dashboards.model import TEXT, TIMESERIES
from exporter.promql import metric_names

WARNING = re.compile(r"yellow|orange|red")
SELECTOR = re.compile(r"([a-zA-Z_:][\w:]*)\{([^}]*)\}")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def colour_at(steps, v: float) -> str:
    """Grafana's absolute thresholds: the colour of the last step at or below v."""
    colour = steps[0][1]
    for t, c in steps[1:]:
        if v >= t:
            colour = c
    return colour


def colours_over(steps, lo: float, hi: float) -> set[str]:
    """Every colour a value in [lo, hi) takes (just lo for a point)."""
    return {colour_at(steps, lo)} | {c for t, c in steps[1:] if lo < t < hi}


def _matchers(expr: str, metric: str) -> list[tuple[str, str, str]]:
    for name, body in SELECTOR.findall(expr):
        if name == metric:
            return MATCHER.findall(body)
    return []


def _compatible(matchers, labels: dict) -> bool:
    for k, op, v in matchers:
        if k not in labels or "$" in v:
            continue
        want = labels[k]
        ok = {"=": want == v, "!=": want != v, "=~": re.fullmatch(v, want) is not None,
              "!~": re.fullmatch(v, want) is None}[op]
        if not ok:
            return False
    return True


def applies(h, expr: str) -> bool:
    names = metric_names(expr)
    if not names or names[0] != h.metric:
        return False
    if h.per is None:
        if set(names) != {h.metric}:
            return False
    elif h.per not in names[1:]:
        return False
    return _compatible(_matchers(expr, h.metric), h.labels)


def painted_panels():
    for d in DASHBOARDS:
        for p in d.panels:
            if p.kind == TEXT or not p.thresholds:
                continue
            if p.kind == TIMESERIES and p.threshold_style == "off":
                continue
            yield d, p


def violations():
    out, checked = [], []
    for d, p in painted_panels():
        for q in p.queries:
            for h in HEALTHY:
                if not applies(h, q.expr):
                    continue
                checked.append((d.uid, p.title, h))
                bad = sorted(c for c in colours_over(p.thresholds, h.lo, h.hi) if WARNING.search(c))
                if bad:
                    out.append(f"{d.uid} / {p.title}: {h.metric} {h.lo:g}-{h.hi:g} is healthy "
                               f"({h.source}: {h.note or 'stated range'}) but painted {', '.join(bad)}")
    return out, checked


def test_no_panel_paints_a_healthy_value():
    bad, _ = violations()
    assert not bad, "\n".join(bad)


def test_the_check_reads_the_panels_the_review_named():
    _, checked = violations()
    seen = {(uid, title) for uid, title, _ in checked}
    for panel in [("rl-overview", "Response truncation"), ("rl-overview", "Prompt truncation"),
                  ("rl-overview", "Clip fraction"), ("rl-algorithms", "Non-finite log-probs"),
                  ("rl-gpu", "Phase share of step time"), ("rl-diagnosis", "Check first: phase share of the step")]:
        assert panel in seen, panel


@pytest.mark.parametrize("steps, lo, hi, want", [
    ([(None, "green"), (0.05, "yellow"), (0.2, "red")], 0.02, 0.43, {"green", "yellow", "red"}),
    ([(None, "green"), (0.3, "yellow")], 0.05, 0.3, {"green"}),      # a step at hi starts the next band
    ([(None, "yellow"), (0.05, "green")], 0.0, 0.0, {"yellow"}),
])
def test_colours_over(steps, lo, hi, want):
    assert colours_over(steps, lo, hi) == want


def test_every_range_names_its_source():
    for h in HEALTHY:
        assert h.source and h.lo <= h.hi, h
