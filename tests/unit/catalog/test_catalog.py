"""Naming conventions and structure of the catalog (the single source of truth)."""
import json
import re

import pytest

from exporter.catalog import CATALOG, COUNTER, FRAMEWORKS, HISTOGRAM, INFO, STATE
from exporter.cli import main


def metrics():
    return list(CATALOG.metrics.values())


@pytest.mark.parametrize("m", metrics(), ids=lambda m: m.name)
def test_metric_names_follow_prometheus_conventions(m):
    assert re.fullmatch(r"(rl|hw)_[a-z0-9_]+", m.name)
    assert (m.kind == COUNTER) == m.name.endswith("_total")
    if m.name.endswith("_ratio"):
        assert m.unit == "1", "a _ratio is a 0..1 fraction"
    if m.unit == "s":
        assert "_seconds" in m.name
    if m.unit == "By":
        assert "_bytes" in m.name
    assert not re.search(r"_(ms|milliseconds|gb|mib|percent)(_|$)", m.name), "use base units"
    assert len(m.help) > 15, "help says what it is and who feeds it"
    if m.kind == HISTOGRAM:
        assert list(m.buckets) == sorted(m.buckets)
    if m.kind == STATE:
        assert m.states and "state" in m.labels
    assert "pod" not in m.labels and "namespace" not in m.labels


def test_identity_lives_only_on_run_info():
    identity = {"framework", "algorithm", "model", "host", "version", "rank"}
    for m in metrics():
        allowed = {"rank"} if m.name.startswith("hw_gpu_") else set()  # so "this run's GPUs" is a selector
        if m.kind != INFO:
            assert not (identity - allowed) & set(m.labels), m.name


def test_every_framework_has_a_vocabulary():
    assert set(FRAMEWORKS) == set(CATALOG.vocabularies)


def test_catalog_json_lists_every_metric_with_its_contract(capsys):
    assert main(["catalog", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {r["name"]: r for r in rows if r["name"]}
    assert set(by_name) == set(CATALOG.metrics)
    clip = by_name["rl_policy_clip_ratio"]
    assert clip["kind"] == "gauge" and clip["aggregation"] == "weighted_mean"
    assert clip["weight"] == "rl_valid_tokens" and "run" in clip["labels"]
    assert "actor/pg_clipfrac" in clip["aliases"]["verl"]


def test_explain_json_contract(capsys):
    assert main(["explain", "--json", "--framework", "verl", "timing_s/gen", "made/up"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["key"] for line in lines] == ["timing_s/gen", "made/up"]
    gen, unknown = lines
    assert gen["metric"] == "rl_phase_duration_seconds" and gen["labels"] == {"phase": "gen"}
    assert gen["fallback"] is False and gen["framework"] == "verl"
    assert unknown["metric"] == "rl_unmapped_value" and unknown["fallback"] is True
    assert unknown["labels"] == {"key": "made/up"}
    assert {"key", "framework", "metric", "labels", "fallback", "ignored"} <= set(gen)


def test_explain_rejects_unknown_framework(capsys):
    assert main(["explain", "--framework", "nope", "x"]) == 2
