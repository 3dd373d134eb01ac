"""promtool cases for runs with a restart in them (merged into exporter/alerts/tests/rl-exporter.test.yaml
by exporter/alerts/testcases.py): the exporter exports rl_run_segment_start_timestamp_seconds where the
step counter went back (exporter/core/worker.py), and no baseline counts across it.

A run on 2-minute steps whose reward climbs 0.2 -> 0.8 over 60 steps restarts at step 1 at
t = 120m (a second run in the same log: reward 0.2 again, climbing at half the pace): read as one
series, the new segment's early values against the old one's late ones are a reward collapse
from about 20 steps after the restart (past warm-up) for 15 minutes. With the segment start,
every relative rule waits until its recent and baseline windows begin after the restart (tier 2
here: 20m + 80m; the reward's are twice as long, 40m + 160m); a real collapse later in the new
segment still fires.
"""
from __future__ import annotations

from .series import RUN, s

RESTART_AT = 120                    # minutes: step 60 of the first segment was logged at 118m
CLIMB = "0.2+0.01x59"               # 60 two-minute steps from 0.2 to 0.79
AGAIN = "0.2+0.005x99"              # the next run: 0.2 again, climbing at half the pace
STEPS = "1+1x59"


def segment_start(steps: int) -> dict:
    return s("rl_run_segment_start_timestamp_seconds", f"_x60 {RESTART_AT * 60}x{steps - 1}")


SEGMENT_START = segment_start(100)
# the restart as the exporter exports it, and alone: the next run climbs as the first one did
RESTART = [s("rl_training_step", f"{STEPS} 1+1x99"), s("rl_reward", f"{CLIMB} {AGAIN}")]
# ... and a longer next run that climbs to 0.795 and collapses to 0.2 at its step 121 (t = 360m),
# after the reward's windows (40m + 160m) begin after the restart (t = 320m)
COLLAPSE = [s("rl_training_step", f"{STEPS} 1+1x149"),
            s("rl_reward", f"{CLIMB} 0.2+0.005x119 0.2x29"), segment_start(150)]
QUIET_FROM, QUIET_TO = 100, 240     # evaluated every 5m over the restart and the 60 steps after it


def _quiet() -> list[dict]:
    return [{"eval_time": f"{t}m", "alertname": "RLRewardCollapse", "exp_alerts": []}
            for t in range(QUIET_FROM, QUIET_TO + 1, 5)]


def _fired(rule: dict, drop: float) -> dict:
    return {"exp_labels": {"severity": "warning", "run": "r"},
            "exp_annotations": {
                "summary": rule["annotations"]["summary"],
                "description": f"Run r: mean task reward fell by {drop:.3f} below its baseline "
                               "over the preceding steps.",
                "runbook_url": rule["annotations"]["runbook_url"]}}


def segment_tests(rules: dict) -> list[dict]:
    """The test groups; `rules`: alert name -> its rendered rule (for the annotations)."""
    r = rules["RLRewardCollapse"]
    return [
        # the same series from an exporter that exports no segment start: the reward's baseline
        # reaches across the seam (the old run's late values against the new one's early ones;
        # RLRewardCollapse's noise guard alone keeps this one quiet, the relative rules without
        # such a guard read it), so the quiet case below is quiet because of the gate
        {"name": "without the segment start, the baseline reaches across the restart",
         "interval": "2m", "input_series": RESTART,
         "promql_expr_test": [{"expr": "count(run:rl_task_reward:avg_baseline)", "eval_time": "175m",
                               "exp_samples": [{"labels": "{}", "value": 1}]}]},
        {"name": "with the segment start, no baseline reaches across the restart",
         "interval": "2m", "input_series": RESTART + [SEGMENT_START],
         "promql_expr_test": [{"expr": "count(run:rl_task_reward:avg_baseline)", "eval_time": "175m",
                               "exp_samples": []}]},
        {"name": "a real reward collapse after a restart still fires",
         "interval": "2m", "input_series": COLLAPSE,
         "alert_rule_test": [
             *({"eval_time": f"{t}m", "alertname": "RLRewardCollapse", "exp_alerts": []}
               for t in (330, 355)),  # the gate is open, the reward still healthy
             {"eval_time": "400m", "alertname": "RLRewardCollapse",
              "exp_alerts": [_fired(r, 0.393)]}]},
        # one group for both (promtool evaluates every rule of the file at every tick of a group)
        {"name": "a restart at step 1 is no reward collapse: the segment start holds the evidence "
                 "gate until both windows begin after it",
         "interval": "2m", "input_series": RESTART + [SEGMENT_START],
         "alert_rule_test": _quiet(),
         "promql_expr_test": [
             # before the restart: no seam, the gate as ever
             {"expr": "run:rl_step_window:crosses_segment_start", "eval_time": "110m",
              "exp_samples": []},
             {"expr": "run:rl_step_window:baseline_steps", "eval_time": "110m",
              "exp_samples": [{"labels": f"run:rl_step_window:baseline_steps{{{RUN}}}",
                               "value": 40}]},
             # 60 steps after the restart the tier-2 windows (20m + 80m) still reach back over it
             {"expr": "run:rl_step_window:crosses_segment_start", "eval_time": "215m",
              "exp_samples": [{"labels": f"run:rl_step_window:crosses_segment_start{{{RUN}}}",
                               "value": 1}]},
             {"expr": "run:rl_step_window:baseline_steps", "eval_time": "215m",
              "exp_samples": []},
             # 100m after it both begin after it: the gate opens on the new segment's steps
             {"expr": "run:rl_step_window:crosses_segment_start", "eval_time": "225m",
              "exp_samples": [{"labels": f"run:rl_step_window:crosses_segment_start{{{RUN}}}",
                               "value": 0}]},
             {"expr": "run:rl_step_window:baseline_steps", "eval_time": "225m",
              "exp_samples": [{"labels": f"run:rl_step_window:baseline_steps{{{RUN}}}",
                               "value": 39}]},
         ]},
    ]
