"""promtool unit tests: every alert's cases (`cases=` in its record, exporter/alerts/areas/: a
series that fires it with full labels and annotations asserted, and a healthy series that must
stay silent) and the recording rules' own groups. Rendered to
exporter/alerts/tests/rl-exporter.test.yaml by `rl-exporter alerts test-file` (generated, not committed)."""
from __future__ import annotations
from .rules import ALERTS
from .render import GENERATED, render, yaml_text
from .paths import RULES_FROM_TESTS

from .series import life, s


def case_name(alert: str, title: str) -> str:
    return f"{alert} ({title})" if title else alert


def _steps(series: list[dict]) -> list[dict]:
    """Add a training step per minute (1-minute steps) unless the case brings its own."""
    if any(x["series"].startswith("rl_training_step{") for x in series):
        return series
    return series + [s("rl_training_step", "1+1x200")]


def missing_cases() -> list[str]:
    """Every alert has a promtool case or a cadence row; case names are unique."""
    out = [f"{a.name}: no promtool case and no cadence row in its record (exporter/alerts/areas/)"
           for a in ALERTS if not a.cases and a.cadence is None]
    out += [f"{case_name(a.name, c.title)}: the alert has an evidence annotation, the case expects "
            "none (Case.evidence)" for a in ALERTS if a.evidence for c in a.cases if not c.evidence]
    names = [case_name(a.name, c.title) for a in ALERTS for c in a.cases]
    out += [f"{n}: two cases of that name" for n in sorted({n for n in names if names.count(n) > 1})]
    return out


def render_tests() -> str:
    rules = {r["alert"]: r for g in render()["groups"] for r in g["rules"] if "alert" in r}
    tests = []
    for a in ALERTS:
        r = rules[a.name]
        for c in a.cases:
            case = case_name(a.name, c.title)
            # a label given as None is one the alert does not carry (a target that reported no run)
            labels = {k: v for k, v in {"severity": r["labels"]["severity"], "run": "r", **c.labels}.items()
                      if v is not None}
            tests.append({
                "name": f"{case} fires",
                "interval": "1m",
                "input_series": _steps(c.fire),
                "alert_rule_test": [{
                    "eval_time": c.at, "alertname": a.name,
                    "exp_alerts": [{"exp_labels": labels, "exp_annotations": {
                        "summary": r["annotations"]["summary"], "description": c.desc,
                        "runbook_url": r["annotations"]["runbook_url"],
                        **({"evidence": c.evidence} if "evidence" in r["annotations"] else {})}}],
                }],
            })
            tests.append({
                "name": f"{case} stays silent on healthy series",
                "interval": "1m",
                "input_series": _steps(c.silent),
                "alert_rule_test": [{"eval_time": c.silent_at, "alertname": a.name, "exp_alerts": []}],
            })
    # recording rules: the step-window ladder, the recent level, its baseline, none in warm-up
    tests.append({
        "name": "recording rules: window chosen by steps, recent level, baseline after warm-up",
        "interval": "1m",
        "input_series": [s("rl_reward", "0.6x80 0.2x20"), s("rl_reward", "1x100", stat="max"),
                         s("rl_training_step", "1+1x100")],
        "promql_expr_test": [
            {"expr": "run:rl_training_step:changes_w1", "eval_time": "100m",
             "exp_samples": [{"labels": 'run:rl_training_step:changes_w1{run="r"}', "value": 5}]},
            {"expr": "run:rl_task_reward:avg_recent", "eval_time": "100m",
             "exp_samples": [{"labels": 'run:rl_task_reward:avg_recent{run="r"}', "value": 0.2}]},
            # 5m holds 5 changes (both ends inclusive): baseline = the 20m before the last 5m
            {"expr": "run:rl_task_reward:avg_baseline", "eval_time": "80m",
             "exp_samples": [{"labels": 'run:rl_task_reward:avg_baseline{run="r"}', "value": 0.6}]},
            {"expr": "run:rl_task_reward:avg_baseline", "eval_time": "15m", "exp_samples": []},
        ],
    })
    # restarts: no baseline across a segment start (exporter/alerts/segment_cases.py)
    from .segment_cases import segment_tests
    tests += segment_tests(rules)
    # goodput: run r (8 GPUs) spends 45 s of each minute stepping and 15 s redoing steps, and its
    # process restarts at 31m (the counters start again from 0); run q (no GPU series: weight 1)
    # spends all of its 59 s a minute redoing steps. Read at 61m, the rules are those of the 60m
    # evaluation (every 5m): the windows hold the samples of 0m-60m, r's step 1350 + 1305 = 2655 s
    # and restart 450 + 435 = 885 s (increase() adds back what the reset dropped; a counter that
    # starts at 0 is not extrapolated), q's restart 59 x 60 s. Run m is a synchronous Miles run
    # (50 s step, 9 s log-prob pass, 1 s weight push a minute: all required, nothing wasted);
    # run u reported no mode, so its 30 s rollout call a minute is unclassified.
    def gp(run, bucket, values):
        return {"series": f'rl_goodput_seconds_total{{run="{run}", bucket="{bucket}"}}', "values": values}
    tests.append({
        "name": "recording rules: goodput ratio, bucket and class shares, comparable runs, fleet ratio by GPUs, GPU-hours",
        "interval": "1m",
        "input_series": [s("rl_goodput_seconds_total", "0+45x30 0+45x30", bucket="step"),
                         s("rl_goodput_seconds_total", "0+15x30 0+15x30", bucket="restart"),
                         {"series": 'rl_goodput_seconds_total{run="q", bucket="restart"}', "values": "0+59x61"},
                         gp("m", "step", "0+50x61"), gp("m", "logprob_recompute", "0+9x61"),
                         gp("m", "weight_sync", "0+1x61"),
                         gp("u", "step", "0+30x61"), gp("u", "rollout_unclassified", "0+30x61")]
        + [s("hw_gpu_memory_limit_bytes", "80e9x61", gpu=str(g)) for g in range(8)],
        "promql_expr_test": [
            {"expr": "run:rl_goodput:ratio_1h", "eval_time": "61m",
             "exp_samples": [{"labels": 'run:rl_goodput:ratio_1h{run="r"}', "value": 0.75},
                             {"labels": 'run:rl_goodput:ratio_1h{run="q"}', "value": 0},
                             {"labels": 'run:rl_goodput:ratio_1h{run="m"}', "value": 3000 / 3600},
                             {"labels": 'run:rl_goodput:ratio_1h{run="u"}', "value": 0.5}]},
            # u's ratio is not comparable; m's required overhead is not waste
            {"expr": "run:rl_goodput:comparable_ratio_1h", "eval_time": "61m",
             "exp_samples": [{"labels": 'run:rl_goodput:comparable_ratio_1h{run="r"}', "value": 0.75},
                             {"labels": 'run:rl_goodput:comparable_ratio_1h{run="q"}', "value": 0},
                             {"labels": 'run:rl_goodput:comparable_ratio_1h{run="m"}', "value": 3000 / 3600}]},
            {"expr": "run:rl_goodput:not_wasted_ratio_1h", "eval_time": "61m",
             "exp_samples": [{"labels": 'run:rl_goodput:not_wasted_ratio_1h{run="r"}', "value": 0.75},
                             {"labels": 'run:rl_goodput:not_wasted_ratio_1h{run="q"}', "value": 0},
                             {"labels": 'run:rl_goodput:not_wasted_ratio_1h{run="m"}', "value": 1}]},
            {"expr": 'run_class:rl_goodput:share_1h{run="m"}', "eval_time": "61m",
             "exp_samples": [{"labels": 'run_class:rl_goodput:share_1h{run="m", class="productive"}', "value": 3000 / 3600},
                             {"labels": 'run_class:rl_goodput:share_1h{run="m", class="overhead"}', "value": 600 / 3600},
                             {"labels": 'run_class:rl_goodput:share_1h{run="m", class="waste"}', "value": 0},
                             {"labels": 'run_class:rl_goodput:share_1h{run="m", class="unclassified"}', "value": 0}]},
            {"expr": 'run_bucket:rl_goodput:share_1h{run="r"}', "eval_time": "61m",
             "exp_samples": [{"labels": 'run_bucket:rl_goodput:share_1h{run="r", bucket="step"}', "value": 0.75},
                             {"labels": 'run_bucket:rl_goodput:share_1h{run="r", bucket="restart"}',
                              "value": 0.25}]},
            # productive GPU-seconds over accounted GPU-seconds of the comparable runs (u is not):
            # (8 x 2655 + 3000) / (8 x 3540 + 1 x 3540 + 1 x 3600)
            {"expr": ":rl_goodput:ratio_1h", "eval_time": "61m",
             "exp_samples": [{"labels": ":rl_goodput:ratio_1h",
                              "value": (8 * 2655 + 3000) / (8 * 3540 + 3540 + 3600)}]},
            {"expr": 'run_bucket:rl_goodput_gpu_hours:increase_1d{run="r"}', "eval_time": "61m",
             "exp_samples": [{"labels": 'run_bucket:rl_goodput_gpu_hours:increase_1d{run="r", bucket="step"}',
                              "value": 2655 * 8 / 3600},
                             {"labels": 'run_bucket:rl_goodput_gpu_hours:increase_1d{run="r", bucket="restart"}',
                              "value": 885 * 8 / 3600}]},
        ],
    })
    tests.append(_fleet_states_test())
    # Rules are evaluated every 5m (series are sampled every 1m): promtool evaluates every rule of
    # the file at every tick of every test group, and 1m ticks made this file take ~1 min on 2 cores.
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": "5m", "tests": tests}
    return yaml_text(doc).replace(GENERATED, "# Generated by `rl-exporter alerts test-file` from the alerts' cases.")


def _fleet_states_test() -> dict:
    """The fleet's state code read from the run lifecycle: f finished on a static target that
    then went down (5), c crashed with its sidecar still serving (4), s silent for 35 min (3),
    x restarting (2), p in a declared pause as long as s's silence (1: no fault)."""
    def target(run, up="1x40", info="1x40"):
        t = {"job": "rl-exporter", "instance": f"{run}:9464"}
        return t, [{"series": f'up{{job="rl-exporter", instance="{run}:9464"}}', "values": up},
                   s("rl_run_info", info, run, **t)]
    series = []
    for run, segments, up, info, stamps in (
            ("f", [("running", 10, 0), ("finished", 1, 600), (None, 30, 0)], "1x10 0x30", "1x10 _x30",
             "0+60x9 540 _x30"),
            ("c", [("running", 10, 0), ("crashed", 31, 600)], "1x40", "1x40", "0+60x9 540x31"),
            ("s", [("running", 41, 0)], "1x40", "1x40", "0+60x5 300x35"),
            ("p", [("running", 5, 0), ("paused", 36, 300)], "1x40", "1x40", "0+60x5 300x35"),
            ("x", [("running", 20, 0), ("restarting", 21, 1200)], "1x40", "1x40", "0+60x40")):
        t, own = target(run, up, info)
        series += own + life(segments, run, **t)
        series.append(s("rl_training_step_timestamp_seconds", stamps, run, **t))
        series.append(s("rl_step_duration_seconds", "60x40", run, **t))
    return {
        "name": "recording rules: the fleet's state code from the run lifecycle",
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [{"expr": "run:rl_run_state:code", "eval_time": "40m", "exp_samples": [
            {"labels": f'run:rl_run_state:code{{run="{run}"}}', "value": code}
            for run, code in (("f", 5), ("c", 4), ("s", 3), ("x", 2), ("p", 1))]}],
    }


def write_test_files() -> list:
    """Write the promtool unit tests (these cases and the cadence matrix) into exporter/alerts/tests/.
    They are generated, not committed: the tests write them before running promtool."""
    from . import cadence
    from .paths import TEST_FILE
    TEST_FILE.write_text(render_tests())
    out = [TEST_FILE]
    for c in cadence.CADENCES:
        cadence.cadence_file(c).write_text(cadence.render_cadence(c))
        out.append(cadence.cadence_file(c))
    return out
