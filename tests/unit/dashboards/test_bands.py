"""The overview's baseline band overlay, in the generated Grafana JSON: each band query names a
series that exporter/alerts/baseline.py records for that metric (compared with what it renders, not with
strings written here), every key metric a baseline bands has its pair on a panel, and each pair
is shaded with a fillBelowTo override naming the pair's legends."""
from __future__ import annotations

import json
import re

from exporter.alerts import baseline as live
from exporter.dashboards import overview
from exporter.dashboards.generate import OUTPUT_DIRS
from exporter import promql
from exporter.postmortem import baseline as bl

OVERVIEW = OUTPUT_DIRS["json"] / f"{overview.DASHBOARD.uid}.json"
SERIES = re.compile(r'series="([^"]*)"')


def recorded() -> set[tuple[str, str]]:
    """(record, series label) of every band rule exporter/alerts/baseline.py renders for a baseline
    banding every key metric's primary series."""
    doc = {"rl_exporter_baseline": bl.VERSION, "recipe": "r", "identity": {"framework": "trl"},
           "runs": [], "method": {"by": "step"}, "unbanded": {},
           "bands": {bl.series_key(m, {}): [[0, 10, 0.0, 1.0]] for m in bl.KEY_METRICS}}
    return {(r["record"], r["labels"]["series"]) for g in live.render(doc)["groups"]
            for r in g["rules"] if "record" in r}


def band_targets(panel: dict) -> list[dict]:
    return [t for t in panel.get("targets", [])
            if set(promql.metric_names(t["expr"])) & {live.BAND_LOWER, live.BAND_UPPER}]


def test_band_queries_name_the_series_the_baseline_rules_record():
    rules = recorded()
    panels = json.loads(OVERVIEW.read_text())["panels"]
    banded: dict[str, set[str]] = {}
    for p in panels:
        for t in band_targets(p):
            (name,) = promql.metric_names(t["expr"])
            (series,) = SERIES.findall(t["expr"])
            assert (name, series) in rules, (p["title"], t["expr"])
            assert 'run=~"$run"' in t["expr"]
            banded.setdefault(series, set()).add(name)
    # every key metric a baseline bands (its primary series) is drawn with both bounds
    assert banded == {bl.series_key(m, {}): {live.BAND_LOWER, live.BAND_UPPER} for m in bl.KEY_METRICS}


def test_each_band_is_shaded_between_its_own_pair():
    panels = json.loads(OVERVIEW.read_text())["panels"]
    n = 0
    for p in panels:
        targets = band_targets(p)
        if not targets:
            continue
        assert p["type"] == "timeseries"
        legend = {promql.metric_names(t["expr"])[0] + " " + SERIES.findall(t["expr"])[0]: t["legendFormat"]
                  for t in targets}
        fills = {o["matcher"]["options"]: prop["value"] for o in p["fieldConfig"]["overrides"]
                 for prop in o["properties"] if prop["id"] == "custom.fillBelowTo"}
        for key, upper in legend.items():
            if not key.startswith(live.BAND_UPPER):
                continue
            lower = legend[key.replace(live.BAND_UPPER, live.BAND_LOWER)]
            assert fills[upper] == lower, p["title"]
            n += 1
        # the pair's names are the panel's own: fillBelowTo finds exactly one series each
        names = [t["legendFormat"] for t in p["targets"]]
        assert len(names) == len(set(names)), p["title"]
        assert "a baseline of the run's recipe is loaded (docs/baselines.md)" in p["description"]
    assert n == len(bl.KEY_METRICS)
