"""The alert rules source: generated files current, names from the catalog, runbook anchors,
overrides and time scaling (no external tools needed)."""
import re
import subprocess
import sys

import pytest
import yaml

from exporter.alerts import check, recordings, rules
from exporter.alerts.rules import ALERTS
from exporter.alerts.render import OverrideError, duration, render
from exporter.alerts.recordings import metric_names
from exporter.promql import parse_duration
from exporter.catalog import CATALOG


def _alerts(doc):
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"] if "alert" in r}


def test_committed_files_are_current_and_consistent():
    assert check.run_checks() == []


def test_every_alert_has_the_mixin_fields():
    for name, r in _alerts(render()).items():
        assert r["labels"]["severity"] in ("critical", "warning", "info"), name
        a = r["annotations"]
        assert a["summary"] and "{{" not in a["summary"], name
        assert "$labels.run" in a["description"] and "$value" in a["description"], name
        assert a["runbook_url"].endswith("#" + name.lower()), name
        assert parse_duration(r["for"]) > 0, name


def test_rules_name_only_catalog_metrics():
    from exporter.catalog.engines import NAMES as ENGINE_SERIES
    recorded = {r.record for r in recordings.RECORDINGS}
    known = CATALOG.names | check.PROMETHEUS_NAMES | recorded | ENGINE_SERIES
    for g in render()["groups"]:
        for r in g["rules"]:
            for m in metric_names(r["expr"]):
                assert m in known, (r, m)
    for a in ALERTS:
        for m in recordings.alert_metrics(a):
            assert m in CATALOG.metrics or m in ENGINE_SERIES or m in check.PROMETHEUS_NAMES, (a.name, m)


def test_unknown_metric_is_reported():
    doc = {"groups": [{"name": "x", "rules": [{"alert": "RLBogus", "expr": "rl_no_such_metric > 1"},
                                              {"record": "run:x:y", "expr": "run:missing:rule > 0"}]}]}
    problems = check.unknown_metrics(doc)
    assert any("rl_no_such_metric is not in the catalog" in p for p in problems)
    assert any("run:missing:rule is not defined" in p for p in problems)


def test_label_values_are_not_mistaken_for_metrics():
    assert metric_names('label_replace(rl_loss{split=""} != rl_loss, "metric", "rl_nope", "", "")') == {"rl_loss"}
    # recording rules are names this file declares; an engine's own vllm:* name is a metric
    assert metric_names("run:rl_task_reward:avg_recent > 1") == set()
    assert metric_names("vllm:kv_cache_usage_perc > 0.9") == {"vllm:kv_cache_usage_perc"}


def test_engine_name_typos_fail_the_check():
    doc = {"groups": [{"name": "x", "rules": [{"alert": "RLBogus", "expr": "vllm:kv_cache_usage > 0.9"}]}]}
    assert check.unknown_metrics(doc) == ["RLBogus: metric vllm:kv_cache_usage is not in the catalog"]


def test_hardware_name_typos_fail_the_check():
    """One extractor (exporter/promql.py) for alerts, dashboards and doctor: any name, not only rl_*."""
    doc = {"groups": [{"name": "x", "rules": [
        {"alert": "RLBogus", "expr": "hw_gpu_memroy_usage_bytes / hw_gpu_memory_limit_bytes > 0.9"}]}]}
    assert check.unknown_metrics(doc) == ["RLBogus: metric hw_gpu_memroy_usage_bytes is not in the catalog"]
    from exporter import promql
    assert recordings.metric_names("rate(hw_gpu_clock_event_seconds_total[5m]) > 0") == \
        set(promql.metric_names("rate(hw_gpu_clock_event_seconds_total[5m]) > 0"))


def test_alert_metrics_are_derived_through_recording_rules():
    a = rules.alert("RLRewardCollapse")
    # the alert names only recording rules; what it reads comes from their expressions
    assert "rl_score" not in a.expr and {"rl_score", "rl_reward", "rl_training_step"} <= set(recordings.alert_metrics(a))
    # its NVML baseline is gated on the step-window evidence, which no segment start crosses
    assert recordings.alert_metrics(rules.alert("RLGPUMemoryNearFull")) == (
        "hw_gpu_memory_limit_bytes", "hw_gpu_memory_usage_bytes", "rl_gpu_memory_peak_bytes",
        "rl_run_segment_start_timestamp_seconds", "rl_training_step")


def test_every_critical_states_why():
    for a in ALERTS:
        assert bool(a.why_critical) == (a.severity == "critical"), a.name


def test_step_window_ladder_scales_and_gates():
    doc = render(time_scale=0.5)
    rec = {r["record"]: r["expr"] for g in doc["groups"] for r in g["rules"] if "record" in r}
    assert "changes(rl_training_step[2m30s])" in rec["run:rl_training_step:changes_w1"]
    ready = rec["run:rl_step_window:baseline_steps"]
    assert ">= 20" in ready and "max by (run) (rl_training_step) >= 20" in ready
    # ... and not across a segment start: both windows of the tier (2m30s + 10m) after it
    assert ready.rstrip().endswith("unless on (run) run:rl_step_window:crosses_segment_start == 1")
    seam = rec["run:rl_step_window:crosses_segment_start"]
    assert "(rl_run_segment_start_timestamp_seconds) < bool 750)" in seam
    # every relative baseline exists only with enough baseline steps and past warm-up
    gated = {n for n, e in rec.items()
             if n.endswith("_baseline") and e.rstrip().endswith("and on (run) run:rl_step_window:baseline_steps")}
    assert gated == {n for n in rec if n.endswith("_baseline")}
    # the trend window's best and lowest levels read only such baselines, over TREND_FACTOR
    # recent windows scaled like them, and never across a segment start
    # (the reward's windows REWARD_WINDOW_FACTOR = 2 times the rung's)
    for name, seconds in (("run:rl_task_reward:max_baseline_trend", 4500),
                          ("run:rl_response_length_tokens:min_baseline_trend", 2250)):
        read = {r for r in recordings.recording_names(rec[name]) if ":changes_w" not in r}
        assert read and read <= gated, name
        # (10 + 1 + 4) x 150 s, x 2 for the reward
        assert f"(rl_run_segment_start_timestamp_seconds) < {seconds})" in rec[name]
    assert "run:rl_task_reward:avg_baseline[50m]" in rec["run:rl_task_reward:max_baseline_trend"]
    # the reward's recent and baseline windows (5m + 20m at this scale) begin after a segment start
    assert "avg_over_time(rl_score{stat=\"\", split=\"\"}[5m])" in rec["run:rl_task_reward:avg_recent"]
    for name in ("run:rl_task_reward:avg_baseline", "run:rl_task_reward:stddev_baseline"):
        assert "[20m] offset 5m" in rec[name]
        assert "(rl_run_segment_start_timestamp_seconds) < 1500)" in rec[name], name


def test_cadence_matrix_covers_every_paging_and_ticket_alert():
    from exporter.alerts import cadence
    assert cadence.problems() == []
    assert set(cadence.PATHOLOGIES) == {a.name for a in ALERTS if a.severity in ("critical", "warning")}
    got = cadence.measured()
    assert set(got) == set(cadence.CADENCES)


def test_runbook_anchor_resolution():
    anchors = check.runbook_anchors("# Title\n## RLRunStalled\ntext\n### Some Heading!\n")
    assert {"rlrunstalled", "some-heading", "title"} <= anchors
    assert "rlrewardcollapse" not in anchors


def test_threshold_for_severity_overrides():
    doc = render({"thresholds": {"clip_ratio_high": 0.42, "step_window_1": "7m"},
                  "alerts": {"RLMFULow": {"for": "2h", "severity": "warning"},
                             "RLGPUThrottling": {"disabled": True}},
                  "runbook_base_url": "https://wiki.example/rl"})
    a = _alerts(doc)
    assert "> 0.42" in a["RLClipFractionHigh"]["expr"] and "[7m]" in a["RLClipFractionHigh"]["expr"]
    assert a["RLMFULow"]["for"] == "2h" and a["RLMFULow"]["labels"]["severity"] == "warning"
    assert "RLGPUThrottling" not in a
    assert a["RLRunStalled"]["annotations"]["runbook_url"] == "https://wiki.example/rl#rlrunstalled"
    # the default render is unchanged by an override
    assert "> 0.3" in _alerts(render())["RLClipFractionHigh"]["expr"]


def test_override_descriptions_follow_thresholds():
    a = _alerts(render({"thresholds": {"entropy_collapse_ratio": 0.25}}))
    assert "< 0.25 *" in a["RLEntropyCollapse"]["expr"]
    assert "under 0.25x" in a["RLEntropyCollapse"]["annotations"]["description"]


@pytest.mark.parametrize("bad, msg", [
    ({"thresholds": {"nope": 1}}, "unknown threshold"),
    ({"thresholds": {"clip_ratio_high": "high"}}, "must be a number"),
    ({"alerts": {"RLNope": {"for": "5m"}}}, "unknown alert"),
    ({"alerts": {"RLMFULow": {"severity": "page"}}}, "severity must be one of"),
    ({"alerts": {"RLMFULow": {"for": "soon"}}}, "bad duration"),
    ({"alerts": {"RLMFULow": {"labels": {}}}}, "unknown keys"),
    ({"threshold": {}}, "unknown override sections"),
])
def test_bad_overrides_are_clear_errors(bad, msg):
    with pytest.raises((OverrideError, ValueError), match=msg):
        render(bad)


def test_time_scale_shrinks_windows_for_and_time_thresholds_only():
    a = _alerts(render(time_scale=1 / 120))
    assert a["RLClipFractionHigh"]["for"] == "500ms"
    assert "[2s500ms]" in a["RLClipFractionHigh"]["expr"] and "> 0.3" in a["RLClipFractionHigh"]["expr"]
    assert ">= 5)" in a["RLClipFractionHigh"]["expr"]  # step counts are not time: never scaled
    stalled = a["RLRunStalled"]["expr"]
    assert "15" in stalled and "[2m40s]" in stalled  # 1800 s floor and 5h20m window, scaled
    assert "0.008333333333333333 * max" in stalled  # step durations are simulated seconds: scaled too


def test_durations_roundtrip():
    for s in (0.25, 1, 59, 60, 90, 600, 3600, 5400, 86400 + 61):
        assert parse_duration(duration(s)) == pytest.approx(s)
    assert duration(5400) == "1h30m" and duration(0.25) == "250ms"


def test_cli_renders_with_overrides_file(tmp_path):
    ov = tmp_path / "ov.yaml"
    ov.write_text("thresholds:\n  mfu_low: 0.25\nalerts:\n  RLMFULow:\n    for: 3h\n")
    out = tmp_path / "rules.yaml"
    p = subprocess.run([sys.executable, "-m", "exporter.alerts", "render", "--overrides", str(ov), "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    a = _alerts(yaml.safe_load(out.read_text()))
    assert "< 0.25" in a["RLMFULow"]["expr"] and a["RLMFULow"]["for"] == "3h"
    ov.write_text("thresholds:\n  mfu_lo: 0.25\n")
    p = subprocess.run([sys.executable, "-m", "exporter.alerts", "render", "--overrides", str(ov), "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown threshold 'mfu_lo'" in p.stderr


def test_check_cli_fails_on_drift(tmp_path, monkeypatch):
    monkeypatch.setattr(check, "RULES_FILE", tmp_path / "stale.yaml")
    (tmp_path / "stale.yaml").write_text("groups: []\n")
    assert any("differs from the generated rules" in p for p in check.run_checks())


def test_every_alert_has_a_runbook_section_with_the_four_parts():
    text = check.RUNBOOK.read_text()
    for a in ALERTS:
        sec = text.split(f"## {a.name}\n", 1)[1].split("\n## ", 1)[0]
        for part in ("**Meaning**", "**Impact**", "**Diagnosis**", "**Mitigation**"):
            assert part in sec, (a.name, part)


def test_inhibitions_name_real_alerts_and_route_by_severity():
    from exporter.alerts.alertmanager import config, loopback
    c = config()
    names = {a.name for a in ALERTS}
    for r in c["inhibit_rules"]:
        assert r["equal"] == ["run"]
        for m in r["source_matchers"] + r["target_matchers"]:
            if m.startswith("alertname="):
                assert m.split('"')[1] in names
    lb = loopback("http://127.0.0.1:1")
    assert "pagerduty_configs" not in str(lb) and "127.0.0.1:1/pagerduty" in str(lb)
    assert lb["inhibit_rules"] == c["inhibit_rules"] and lb["route"]["routes"][0]["receiver"] == "pagerduty"


def test_one_human_duration_for_status_and_doctor():
    """exporter/promql.human_duration is what `status` and doctor's report print."""
    from exporter import promql
    from exporter.commands import status
    from exporter.postmortem import report
    assert status.human_duration is promql.human_duration is report.human_duration
    assert [promql.human_duration(s) for s in (None, 40, 750, 11100)] == ["-", "40.0s", "12.5m", "3h05m"]


def test_one_duration_grammar_for_the_renderer_overrides_and_doctor():
    """exporter/promql.py: what the renderer writes, overrides and doctor read back."""
    from exporter import promql
    from exporter.postmortem import rules as post
    for s in (0.25, 59, 5400, 86400 * 3 + 7, 12.5):
        assert promql.parse_duration(promql.format_duration(s)) == pytest.approx(s)
    assert promql.parse_duration("2w") == 14 * 86400 and promql.parse_duration("1.5h") == 5400
    from exporter.alerts import render as rendering
    assert rendering.parse_duration is promql.parse_duration and post.duration("1y") == 31536000
    assert post.duration(None) == 0.0 and promql.parse_duration(30) == 30.0
    for bad in ("", "5x", "m5", "1h 30m"):
        with pytest.raises(ValueError):
            promql.parse_duration(bad or "  ")
    with pytest.raises(post.RulesError):
        post.duration("5x")


def _subqueries(doc):
    pat = re.compile(r"(\w+)\((?:[^()\[\]]|\([^()]*\))*\[(\w+):(\w+)\]")
    return [(m.group(1), m.group(2), m.group(3)) for g in doc["groups"] for r in g["rules"]
            for m in pat.finditer(r["expr"])]


@pytest.mark.parametrize("scale", [1.0, 1 / 120])
def test_long_windows_are_sampled_under_the_lookback_and_only_for_estimates(scale):
    """A subquery's step stays under Prometheus's 5 min lookback (a sample written once is
    still seen), scales with the windows, and samples only means, medians and spreads (and the
    best of each piece): an extreme, a count or a counter keeps every sample."""
    doc = render(time_scale=scale)
    subs = _subqueries(doc)
    assert len(subs) >= 40  # the third and fourth rungs' baselines and trends, and validation
    for fn, window, step in subs:
        assert fn in ("avg_over_time", "quantile_over_time", "stddev_over_time", "stdvar_over_time",
                      "max_over_time"), (fn, window, step)
        assert parse_duration(step) <= 240 * scale + 1e-9, (fn, window, step)
        assert parse_duration(window) / parse_duration(step) >= 20, (fn, window, step)
    for g in doc["groups"]:
        for r in g["rules"]:
            if "max_over_time(max_over_time(" in r["expr"]:
                continue
            for fn in ("max_over_time", "min_over_time", "changes", "increase", "rate", "resets",
                       "last_over_time", "count_over_time"):
                for m in re.finditer(fn + r"\([^()\[\]]*\[(\w+)(:\w*)?\]", r["expr"]):
                    assert not m.group(2), (r.get("alert") or r.get("record"), m.group(0))


def test_a_finished_or_paused_run_is_recorded_once_and_the_alerts_read_the_recording():
    """Each inline read of a finished run is five last_over_time reads of the lifecycle window,
    of a pause three: the alerts read two recordings written earlier in the same group (the
    same evaluation), and the fleet recordings, which read scraped series only, keep the
    expressions."""
    from exporter.alerts.exprs import RUN_FINISHED, RUN_PAUSED
    group = render()["groups"][0]["rules"]
    at = {(r.get("record") or r.get("alert")): i for i, r in enumerate(group)}
    expr = {(r.get("record") or r.get("alert")): r["expr"] for r in group}
    for rec, state in ((RUN_FINISHED, "finished"), (RUN_PAUSED, "paused")):
        assert expr[rec].startswith("group by (run) (") and f'rl_run_state{{state=~"{state}"}}' in expr[rec]
        readers = [r["alert"] for r in group if "alert" in r and rec in r["expr"]]
        assert readers, rec
        for name in readers:
            assert at[rec] < at[name], (rec, name)   # written before it, in the same evaluation
        for r in group:
            if "alert" in r:
                assert f'rl_run_state{{state=~"{state}"}}' not in r["expr"], (r["alert"], state)
    # RLRunStalled: a finished run and a declared pause, both through the recordings
    assert {RUN_FINISHED, RUN_PAUSED} <= set(re.findall(r"run:rl_run_state:\w+", expr["RLRunStalled"]))
    for fleet in ("run:rl_run_state:code", "run:hw_gpus_failing:count"):
        assert RUN_FINISHED not in expr[fleet] and RUN_PAUSED not in expr[fleet]
        assert 'rl_run_state{state=~"finished"}' in expr[fleet]
