"""The bands of a baseline as live rules (exporter/alerts/baseline.py), run by promtool next to the
shipped rules: RLOutsideBaseline fires for a run of the recipe that stays outside its band
for the step-window persistence, not before; a run of another recipe (another framework, or
the same framework and another algorithm) gets no band and no alert."""
import shutil
import subprocess

import pytest
import yaml

from exporter.alerts.baseline import render
from exporter.alerts.render import yaml_text
from exporter import rules as shipped
from exporter.postmortem import baseline as bl

pytestmark = pytest.mark.integration
PROMTOOL = shutil.which("promtool")
need_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt install prometheus)")

DOC = {
    "rl_exporter_baseline": bl.VERSION, "recipe": "tiny-grpo",
    "identity": {"framework": "trl", "algorithm": "grpo"},
    "runs": [{"name": "a", "source": "a.spool", "steps": [0, 99]}],
    "method": {"by": "step", "windows": 2},
    "bands": {"rl_entropy": [[0, 10, 1.0, 3.0], [10, 100, 0.5, 1.5]],
              'rl_score{stat="max"}': [[0, 100, 0.0, 1.0]]},
    "unbanded": {},
}
# 30 s steps: the 5 min window holds 9-10 step changes (>= recent_min_steps)
SERIES = [
    {"series": 'rl_run_info{run="a", framework="trl", algorithm="grpo"}', "values": "1x80"},
    {"series": 'rl_run_info{run="b", framework="verl", algorithm="grpo"}', "values": "1x80"},
    {"series": 'rl_run_info{run="c", framework="trl", algorithm="ppo"}', "values": "1x80"},
    {"series": 'rl_run_info{run="d", framework="trl", algorithm=""}', "values": "1x80"},
    # the same steps and entropy in every run: inside (2.0 in warm-up, 1.2 after) until step
    # 30, then 0.1, outside the 0.5..1.5 band; only run a is the recipe's
    *({"series": f'rl_training_step{{run="{r}"}}', "values": "0+1x80"} for r in "abcd"),
    *({"series": f'rl_entropy{{run="{r}"}}', "values": "2x9 1.2x20 0.1x50"} for r in "abcd"),
    # the stat="max" series stays inside; the mean series of rl_score is not banded
    {"series": 'rl_score{run="a", stat="max"}', "values": "1x80"},
    {"series": 'rl_score{run="a"}', "values": "7x80"},
]


def test_render_without_bands_is_empty_and_labels_select_the_recipe():
    assert render(dict(DOC, bands={}))["groups"] == []
    text = yaml_text(render(DOC))
    assert 'rl_run_info{framework="trl", algorithm="grpo"}' in text
    assert 'rl_score{split="", stat="max"}' in text  # the exact series, not every rl_score


@need_promtool
def test_promtool_outside_baseline_fires_after_the_step_persistence(tmp_path):
    rules = tmp_path / "baseline.rules.yaml"
    rules.write_text(yaml_text(render(DOC)))
    alert = {"exp_labels": {"severity": "warning", "run": "a", "metric": "rl_entropy",
                            "series": "rl_entropy", "baseline": "tiny-grpo"},
             "exp_annotations": {
                 "summary": "A metric left the band its recipe's healthy runs stay in.",
                 "description": "Run a: rl_entropy has been outside the baseline tiny-grpo band on "
                                "every step of the last 5 or more.",
                 "runbook_url": "https://github.com/rl-exporter/rl-exporter/blob/main/docs/baselines.md"}}
    test = {
        "rule_files": [str(shipped.RULES_FILE), str(rules)],
        "evaluation_interval": "30s",
        "tests": [{
            "interval": "30s", "input_series": SERIES,
            "promql_expr_test": [
                {"expr": 'run:rl_baseline_band:lower{series="rl_entropy"}', "eval_time": "2m",
                 "exp_samples": [{"labels": 'run:rl_baseline_band:lower{run="a", metric="rl_entropy", '
                                            'series="rl_entropy", baseline="tiny-grpo"}', "value": 1.0}]},
                {"expr": 'run:rl_baseline_band:upper{series="rl_entropy"}', "eval_time": "10m",
                 "exp_samples": [{"labels": 'run:rl_baseline_band:upper{run="a", metric="rl_entropy", '
                                            'series="rl_entropy", baseline="tiny-grpo"}', "value": 1.5}]},
                {"expr": 'run:rl_baseline_outside:bool{series="rl_entropy"}', "eval_time": "16m",
                 "exp_samples": [{"labels": 'run:rl_baseline_outside:bool{run="a", metric="rl_entropy", '
                                            'series="rl_entropy", baseline="tiny-grpo"}', "value": 1.0}]},
                # runs b (verl), c (ppo) and d (no algorithm) get no band at all: only a's
                # lower, upper and outside of its two banded series
                {"expr": 'count by (run) ({__name__=~"run:rl_baseline_.+"})', "eval_time": "25m",
                 "exp_samples": [{"labels": '{run="a"}', "value": 6.0}]},
            ],
            "alert_rule_test": [
                # outside from 15 m (step 30): not yet a window of 5+ steps outside
                {"eval_time": "20m", "alertname": "RLOutsideBaseline", "exp_alerts": []},
                # 5 min of steps outside, then the 1 m for:
                {"eval_time": "22m", "alertname": "RLOutsideBaseline", "exp_alerts": [alert]},
                {"eval_time": "35m", "alertname": "RLOutsideBaseline", "exp_alerts": [alert]},
                {"eval_time": "12m", "alertname": "RLOutsideBaseline", "exp_alerts": []},
            ],
        }],
    }
    path = tmp_path / "baseline.test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    p = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout


def promtool_test(tmp_path, name, rule_files, expr_tests):
    test = {"rule_files": [str(p) for p in rule_files], "evaluation_interval": "30s",
            "tests": [{"interval": "30s", "input_series": SERIES, "promql_expr_test": expr_tests}]}
    path = tmp_path / f"{name}.test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    p = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


@need_promtool
def test_overview_band_queries_draw_the_band_only_with_a_baseline(tmp_path):
    """The overview's entropy band, queried as Grafana would (all runs selected): the band of
    the run's progress, window by window; nothing at all when only the shipped rules load."""
    from exporter.dashboards import overview
    exprs = [q.expr.replace("$run", ".*") for p, q in overview.DASHBOARD.queries
             if 'series="rl_entropy"' in q.expr]
    assert len(exprs) == 2 and "lower" in exprs[0] and "upper" in exprs[1]
    rules = tmp_path / "baseline.rules.yaml"
    rules.write_text(yaml_text(render(DOC)))
    # step 4 (2 m) is in the warm-up window [0, 10): 1.0..3.0; step 20 (10 m): 0.5..1.5
    promtool_test(tmp_path, "with", [shipped.RULES_FILE, rules], [
        {"expr": e, "eval_time": t, "exp_samples": [{"labels": "{}", "value": v}]}
        for t, lo, hi in (("2m", 1.0, 3.0), ("10m", 0.5, 1.5)) for e, v in zip(exprs, (lo, hi))])
    promtool_test(tmp_path, "without", [shipped.RULES_FILE], [
        {"expr": e, "eval_time": t, "exp_samples": []} for t in ("2m", "10m") for e in exprs])
