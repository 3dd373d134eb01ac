"""A restart from the hook to the alert, with the real parts: the Exporter's own scrapes of a run
that restarts (the real prometheus-client exposition, one per 2-minute step) are the input series
of a promtool unit test against the shipped rule file. The restart exports its segment start and
no RLRewardCollapse fires and no baseline reaches across the restart; the same run from an
exporter that notes no segment start has a baseline across the seam (the old run's late values
against the new one's early ones: what a relative rule reads as a collapse)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from exporter import Exporter
from exporter import rules as shipped
from exporter.testing import scrape

pytestmark = pytest.mark.integration
PROMTOOL = shutil.which("promtool")
STEP_S = 120


def _label_text(labels: tuple) -> str:
    return ", ".join(f'{k}="{v}"' for k, v in labels)


def scrapes(segments: bool) -> list[dict]:
    """One scrape per step of a veRL run whose score climbs 0.2 -> 0.8 over 60 steps, then a
    second run in the same process from step 1 (0.2 again, climbing at half the pace). Frames
    are stamped from t = 0 on: promtool's clock."""
    ex = Exporter(run="r", framework="verl", serve=False)
    if not segments:  # an exporter from before segments: the seam is not exported
        ex.pipeline.worker.segmenter = None
    try:
        out = []
        for i, (step, score) in enumerate([(s, 0.2 + 0.01 * (s - 1)) for s in range(1, 61)]
                                          + [(s, 0.2 + 0.005 * (s - 1)) for s in range(1, 101)]):
            ex.process_now({"critic/score/mean": score, "actor/entropy": 0.5}, step, i * STEP_S)
            out.append(scrape(ex, with_run=True))
        return out
    finally:
        ex.close()


def input_series(samples: list[dict]) -> list[dict]:
    keys = sorted({k for s in samples for k in s if not k[0].startswith("rl_exporter_")})
    return [{"series": f"{name}{{{_label_text(labels)}}}",
             "values": " ".join("_" if (name, labels) not in s else repr(float(s[(name, labels)]))
                                for s in samples)} for name, labels in keys]


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt install prometheus)")
def test_a_restart_through_the_exporter_is_no_reward_collapse(tmp_path):
    live, old = scrapes(segments=True), scrapes(segments=False)
    start = [s.get(("rl_run_segment_start_timestamp_seconds", (("run", "r"),))) for s in live]
    assert start[:60] == [None] * 60 and set(start[60:]) == {60 * STEP_S}
    assert all(k[0] != "rl_run_segment_start_timestamp_seconds" for s in old for k in s)
    quiet = [{"eval_time": f"{t}m", "alertname": "RLRewardCollapse", "exp_alerts": []}
             for t in range(100, 241, 5)]
    doc = {"rule_files": [str(shipped.RULES_FILE)], "evaluation_interval": "5m", "tests": [
        {"name": "the hook's restart", "interval": "2m", "input_series": input_series(live),
         "alert_rule_test": quiet,
         "promql_expr_test": [{"expr": "count(run:rl_task_reward:avg_baseline)", "eval_time": "175m",
                               "exp_samples": []}]},
        {"name": "the same run, no segment start", "interval": "2m",
         "input_series": input_series(old),
         "promql_expr_test": [{"expr": "count(run:rl_task_reward:avg_baseline)", "eval_time": "175m",
                               "exp_samples": [{"labels": "{}", "value": 1}]}]},
    ]}
    f = tmp_path / "restart.test.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    p = subprocess.run([PROMTOOL, "test", "rules", str(f)], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]

