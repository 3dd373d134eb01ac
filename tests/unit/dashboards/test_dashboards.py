"""Unit checks of the dashboard generator: structure, descriptions, names, outputs."""
from __future__ import annotations

import json
import re

import pytest

from exporter.alerts.baseline import BAND_LOWER, BAND_UPPER
from exporter.dashboards import DASHBOARDS, FOLDER, overview
from exporter.dashboards import generate, healthy, names
from exporter import promql
from exporter.dashboards.model import HEATMAP, PANEL_TYPES, TEXT, Panel, Query
from exporter.dashboards.render import build

BY_UID = {d.uid: d for d in DASHBOARDS}
SOURCE_NAMES = (healthy.MILES, "Miles lab", healthy.VERL, healthy.POSTTRAIN, healthy.DICTIONARY,
                healthy.AREAL, "this project")


@pytest.fixture(scope="module")
def built():
    return {d.uid: build(d, generate.links_for(d.uid)) for d in DASHBOARDS}


# ------------------------------------------------------------------ PromQL names
@pytest.mark.parametrize("expr, expected", [
    ('rl_reward{run=~"$run"}', ["rl_reward"]),
    ('sum by (le) (increase(rl_phase_timing_seconds_bucket{phase="gen"}[$__rate_interval]))',
     ["rl_phase_timing_seconds_bucket"]),
    ('a{x="rl_fake"} / ignoring(phase) group_left b', ["a", "b"]),
    ("max by (run) (time() - rl_training_step_timestamp_seconds) > 1e-6 or vector(0)",
     ["rl_training_step_timestamp_seconds"]),
    ('label_replace(rl:reward:avg5m, "dst", "$1", "src", "(.*)")', ["rl:reward:avg5m"]),
    ("topk(5, sum without (stat) (x)) * on (run) group_left(framework, model) rl_run_info",
     ["x", "rl_run_info"]),
    ("histogram_quantile(0.99, sum by (run, le) (rate(h_bucket[5m]))) offset 1h", ["h_bucket"]),
    ("sum(rate(x[5m:30s])) by (run) unless y and on() z", ["x", "y", "z"]),
    ('count(ALERTS{alertstate="firing"}) or vector(0)', ["ALERTS"]),
])
def test_metric_names(expr, expected):
    assert promql.metric_names(expr) == expected


@pytest.mark.parametrize("expr", ["rate(x[5m]", "x{a=\"b\"", "sum(x))"])
def test_metric_names_rejects_unbalanced(expr):
    with pytest.raises(promql.PromQLError):
        promql.metric_names(expr)


# ------------------------------------------------------------------ catalog names
def test_every_queried_name_is_known():
    result = names.check_names(DASHBOARDS)
    assert result.unknown == []


def test_unknown_names_fail():
    assert names.classify("rl_no_such_metric", frozenset()) == "unknown"
    assert names.classify("rl_reward", frozenset()) == "catalog"
    assert names.classify("rl_phase_timing_seconds_bucket", frozenset()) == "catalog"
    assert names.classify("ALERTS", frozenset()) == "prometheus"
    assert names.classify("rl:reward:avg5m", frozenset()) == "unknown"
    assert names.classify("rl:reward:avg5m", frozenset({"rl:reward:avg5m"})) == "recording"
    gpu = names.GPU_METRICS[0]
    assert names.classify(gpu, frozenset()) == "catalog"
    assert names.classify(gpu, frozenset(), catalog_names=frozenset()) == "unknown"


def test_gpu_panels_query_only_the_declared_gpu_names():
    for p in BY_UID["rl-gpu"].panels:
        for m in p.metrics:
            if m.startswith("hw_"):
                assert m in names.GPU_METRICS


def test_recording_rules_are_read_from_rule_files(tmp_path):
    (tmp_path / "r.yaml").write_text(
        "groups:\n- name: g\n  rules:\n  - record: rl:x:rate5m\n    expr: rate(rl_x[5m])\n"
        "  - alert: A\n    expr: up == 0\n")
    assert names.recording_rules(tmp_path) == {"rl:x:rate5m"}
    assert names.recording_rules(tmp_path / "absent") == frozenset()


# ------------------------------------------------------------------ panels
def test_panels_are_modern_typed_described_and_unit_set(built):
    for uid, j in built.items():
        for p in j["panels"]:
            if p["type"] == "row":
                continue
            assert p["type"] in PANEL_TYPES, (uid, p["title"], p["type"])
            desc = p["description"]
            assert "Healthy: " in desc, (uid, p["title"])
            if p["type"] == TEXT:
                continue
            exprs = [t["expr"] for t in p["targets"]]
            used = []
            for e in exprs:
                used += [m for m in promql.metric_names(e) if m not in used]
            assert desc.endswith("Metrics: " + ", ".join(f"`{m}`" for m in used) + "."), \
                (uid, p["title"], desc)
            assert p["fieldConfig"]["defaults"].get("unit"), (uid, p["title"])
            assert [t["refId"] for t in p["targets"]] == [chr(65 + i) for i in range(len(exprs))]
            assert all(t["datasource"]["uid"] == "${datasource}" for t in p["targets"])


def test_histograms_are_heatmaps():
    for d in DASHBOARDS:
        for p in d.panels:
            for q in p.queries:
                if any(m.endswith("_bucket") for m in q.metrics) and "histogram_quantile" not in q.expr:
                    assert p.kind == HEATMAP and q.format == "heatmap", (d.uid, p.title)
    heatmapped = {m for d in DASHBOARDS for p in d.panels if p.kind == HEATMAP for m in p.metrics}
    assert {"rl_phase_timing_seconds_bucket", "rl_exporter_frame_processing_seconds_bucket"} <= heatmapped


def test_heuristic_ranges_name_their_source():
    for d in DASHBOARDS:
        for p in d.panels:
            if "heuristic" in p.healthy:
                # a source by name (exporter/dashboards/healthy.py), or this project's own heuristic
                assert any(s in p.healthy for s in SOURCE_NAMES), (d.uid, p.title, p.healthy)


def test_every_query_is_scoped_by_run():
    for d in DASHBOARDS:
        for p, q in d.queries:
            if "rl_" in q.expr or "hw_" in q.expr or "ALERTS" in q.expr:
                assert 'run=~"$run"' in q.expr, (d.uid, p.title, q.expr)


def test_panel_rejects_deprecated_type_and_missing_text():
    with pytest.raises(ValueError):
        Panel("graph", "t", "shows", "healthy", [Query("x")])
    with pytest.raises(ValueError):
        Panel("timeseries", "t", "", "healthy", [Query("x")])


def test_variables_and_links(built):
    for uid, j in built.items():
        vars_ = {v["name"]: v for v in j["templating"]["list"]}
        assert list(vars_) == ["datasource", "job", "namespace", "run"]
        assert vars_["run"]["multi"] and vars_["run"]["includeAll"] and vars_["run"]["allValue"] == ".*"
        assert "rl_run_info" in vars_["namespace"]["query"]
        assert len(j["links"]) == len(DASHBOARDS) - 1
        ids = [p["id"] for p in j["panels"]]
        assert len(ids) == len(set(ids))


def test_timeseries_legends_are_per_run():
    """Except a baseline band's pair: one fixed name each, which its fillBelowTo override names."""
    for d in DASHBOARDS:
        for p, q in d.queries:
            if set(q.metrics) <= {BAND_LOWER, BAND_UPPER}:
                assert "{{run}}" not in q.legend and q.legend.endswith(("baseline lower", "baseline upper"))
            elif p.kind == "timeseries" and "by (le)" not in q.expr:
                assert "{{run}}" in q.legend, (d.uid, p.title, q.legend)


# ------------------------------------------------------------------ the overview's order
def test_overview_follows_the_order_of_attention():
    titles = [r.title for r in overview.DASHBOARD.rows]
    assert titles[0] == "Firing alerts"
    keys = ["Validation", "Reward", "Policy health", "Critic", "Lengths", "GRPO group",
            "Optimizer outcome", "Timing", "Where the time went", "Throughput", "MFU", "GPU summary"]
    assert len(titles) == len(keys) + 1
    for key, title in zip(keys, titles[1:]):
        assert key.lower() in title.lower(), (key, title)
    alerts = overview.DASHBOARD.rows[0].panels[0]
    assert alerts.queries[0].expr == 'ALERTS{alertstate="firing", run=~"$run"}'
    policy = [p.title for p in overview.DASHBOARD.rows[3].panels]
    assert policy[:7] == ["Policy loss", "Gradient norm", "Entropy", "Policy KL (old vs new)",
                          "KL to reference", "Clip fraction", "Learning rate"]


def test_fleet_table_links_to_the_overview(built):
    table = next(p for p in built["rl-fleet"]["panels"] if p["type"] == "table")
    links = [prop for o in table["fieldConfig"]["overrides"] for prop in o["properties"]
             if prop["id"] == "links"]
    assert links and "/d/rl-overview/" in links[0]["value"][0]["url"]
    assert "var-run=${__value.raw}" in links[0]["value"][0]["url"]


# ------------------------------------------------------------------ outputs
def test_committed_outputs_match_the_code():
    assert generate.check() == 0


def test_check_fails_on_a_hand_edit(tmp_path):
    for rel, text in generate.outputs().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert generate.check(tmp_path) == 0
    p = tmp_path / "json" / "rl-overview.json"
    p.write_text(p.read_text().replace("RL run overview", "RL run overview (edited)"))
    assert generate.check(tmp_path) == 1
    p.unlink()
    assert generate.check(tmp_path) == 1


def test_check_fails_on_an_unknown_metric(monkeypatch, tmp_path, capsys):
    bad = Panel("timeseries", "bad", "shows", "healthy", [Query('rl_not_a_metric{run=~"$run"}')])
    monkeypatch.setattr(overview.DASHBOARD.rows[1], "panels", overview.DASHBOARD.rows[1].panels + [bad])
    for rel, text in generate.outputs().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert generate.check(tmp_path) == 1
    assert "rl_not_a_metric" in capsys.readouterr().err


def test_configmaps():
    yaml = pytest.importorskip("yaml")
    maps = generate.configmaps()
    for d in DASHBOARDS:
        text = maps[f"{d.uid}.yaml"]
        assert len(text.encode()) < generate.CONFIGMAP_LIMIT
        cm = yaml.safe_load(text)
        assert cm["kind"] == "ConfigMap" and cm["apiVersion"] == "v1"
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["annotations"]["grafana_folder"] == FOLDER
        (key, value), = cm["data"].items()
        assert key == f"{d.uid}.json" and "\n" not in value
        assert json.loads(value) == json.loads((generate.OUTPUT_DIRS["json"] / key).read_text())


def test_configmaps_validate_as_kubernetes_objects():
    kv = pytest.importorskip("kubernetes_validate")
    yaml = pytest.importorskip("yaml")
    maps = generate.configmaps()
    for d in DASHBOARDS:
        obj = yaml.safe_load(maps[f"{d.uid}.yaml"])
        kv.validate(obj, "1.30.0", strict=True)


def test_provisioning_files():
    yaml = pytest.importorskip("yaml")
    prov = yaml.safe_load((generate.ROOT / "provisioning" / "dashboards.yaml").read_text())
    (provider,) = prov["providers"]
    assert provider["type"] == "file" and provider["folder"] == FOLDER
    ds = yaml.safe_load((generate.ROOT / "provisioning" / "datasource.yaml").read_text())
    assert ds["datasources"][0]["type"] == "prometheus"
