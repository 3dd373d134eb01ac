"""The bands of a baseline as live rules (alerts/baseline.py), run by promtool next to the
shipped rules: RLOutsideBaseline fires for a run of the recipe that stays outside its band
for the step-window persistence, not before, and not for a run of another recipe."""
import shutil
import subprocess

import pytest
import yaml

from alerts.baseline import render
from alerts.render import yaml_text
from exporter import rules as shipped
from exporter.postmortem import baseline as bl

pytestmark = pytest.mark.integration
PROMTOOL = shutil.which("promtool")
need_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt install prometheus)")

DOC = {
    "rl_exporter_baseline": bl.VERSION, "recipe": "tiny-grpo",
    "identity": {"framework": "trl"},
    "runs": [{"name": "a", "source": "a.spool", "steps": [0, 99]}],
    "method": {"by": "step", "windows": 2},
    "bands": {"rl_entropy": [[0, 10, 1.0, 3.0], [10, 100, 0.5, 1.5]],
              'rl_score{stat="max"}': [[0, 100, 0.0, 1.0]]},
    "unbanded": {},
}
# 30 s steps: the 5 min window holds 9-10 step changes (>= recent_min_steps)
SERIES = [
    {"series": 'rl_run_info{run="a", framework="trl"}', "values": "1x80"},
    {"series": 'rl_run_info{run="b", framework="verl"}', "values": "1x80"},
    {"series": 'rl_training_step{run="a"}', "values": "0+1x80"},
    {"series": 'rl_training_step{run="b"}', "values": "0+1x80"},
    # inside (2.0 in warm-up, 1.2 after) until step 30, then 0.1: outside the 0.5..1.5 band
    {"series": 'rl_entropy{run="a"}', "values": "2x9 1.2x20 0.1x50"},
    {"series": 'rl_entropy{run="b"}', "values": "2x9 1.2x20 0.1x50"},
    # the stat="max" series stays inside; the mean series of rl_score is not banded
    {"series": 'rl_score{run="a", stat="max"}', "values": "1x80"},
    {"series": 'rl_score{run="a"}', "values": "7x80"},
]


def test_render_without_bands_is_empty_and_labels_select_the_recipe():
    assert render(dict(DOC, bands={}))["groups"] == []
    text = yaml_text(render(DOC))
    assert 'rl_run_info{framework="trl"}' in text
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
