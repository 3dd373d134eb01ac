"""Baselines in the Helm chart: `prometheusRule.baselines` (the values `python -m exporter.alerts render
--baseline recipe.yaml --helm-values` writes) makes the PrometheusRule carry exactly the rules
`python -m exporter.alerts render --baseline` writes, through the chart's thresholds and overrides;
without baselines the chart renders as before. Real helm, promtool and CRD validators."""
from __future__ import annotations

import pytest
import yaml

from exporter.alerts.__main__ import main as alerts_main
from exporter.alerts import baseline as live
from exporter.alerts.render import render as shipped_render
from exporter.postmortem import baseline as bl
from tests.integration.test_helm import (CRDS, ROOT, crd_validate, helm, node_modules,  # noqa: F401 (fixtures)
                                         promtool_check, repo_chart, rule_groups_from, template, work)

pytestmark = pytest.mark.integration


def recipe(name: str, **identity) -> dict:
    return {
        "rl_exporter_baseline": bl.VERSION, "recipe": name,
        "identity": identity or {"framework": "trl", "algorithm": ["grpo", "dr_grpo"]},
        "runs": [{"name": "a", "source": "a.spool", "steps": [0, 99]}],
        "method": {"by": "step", "windows": 2},
        "bands": {"rl_entropy": [[0, 10, 1.0, 3.0], [10, 100, 0.5, 1.5]],
                  'rl_score{stat="max"}': [[0, 100, 0.0, 1.0]]},
        "unbanded": {},
    }


def values_file(work, doc: dict, *extra: str) -> str:
    """The documented path: a baseline file, then `python -m exporter.alerts render --baseline ... --helm-values`."""
    src = work / f"{doc['recipe']}.yaml"
    src.write_text(bl.dump(doc))
    out = work / f"{doc['recipe']}.values.yaml"
    assert alerts_main(["render", "--baseline", str(src), "--helm-values", "--out", str(out), *extra]) == 0
    return str(out)


def test_chart_carries_exactly_the_python_rendered_baseline_rules(helm, repo_chart, work, node_modules):
    a, b = recipe("tiny-grpo"), recipe("verl-ppo", framework="verl", algorithm="ppo")
    docs = template(helm, repo_chart, *CRDS, "-f", values_file(work, a), "-f", values_file(work, b))
    pr = docs.one("PrometheusRule")
    extra = live.render(a)["groups"] + live.render(b)["groups"]
    assert pr["spec"]["groups"] == rule_groups_from(ROOT) + extra  # shipped first, then by recipe name
    promtool_check(work, pr["spec"]["groups"], "with-baselines")  # exit 0, or it fails
    rendered = work / "rendered-baselines.yaml"
    rendered.write_text(yaml.safe_dump_all(list(docs)))
    assert "OK rendered-baselines.yaml PrometheusRule" in crd_validate(node_modules, work, [rendered])


def test_chart_thresholds_tune_the_baseline_rules_as_python_overrides_do(helm, repo_chart, work):
    """One threshold implementation: recent_min_steps (the persistence of RLOutsideBaseline) set
    in the chart equals `python -m exporter.alerts render --baseline --overrides` with it."""
    doc = recipe("tiny-grpo")
    tuned = {"thresholds": {"recent_min_steps": 7}}
    pr = template(helm, repo_chart, *CRDS, "-f", values_file(work, doc),
                  "--set", "prometheusRule.thresholds.recent_min_steps=7").one("PrometheusRule")
    assert pr["spec"]["groups"] == shipped_render(tuned)["groups"] + live.render(doc, overrides=tuned)["groups"]
    assert live.render(doc, overrides=tuned) != live.render(doc)
    alert = next(r for g in pr["spec"]["groups"] for r in g["rules"] if r.get("alert") == live.ALERT)
    assert ">= 7)" in alert["expr"] and "last 7 or more" in alert["annotations"]["description"]


def test_rule_overrides_and_labels_apply_to_the_baseline_alert(helm, repo_chart, work):
    vf = values_file(work, recipe("tiny-grpo"))
    pr = template(helm, repo_chart, *CRDS, "-f", vf, "--set", f"prometheusRule.rules.{live.ALERT}.severity=critical",
                  "--set", "prometheusRule.additionalRuleLabels.team=rl").one("PrometheusRule")
    alert = next(r for g in pr["spec"]["groups"] for r in g["rules"] if r.get("alert") == live.ALERT)
    assert alert["labels"] == {"severity": "critical", "team": "rl"}
    # without a baseline there is no such rule to override: the chart says so
    r = template(helm, repo_chart, *CRDS, "--set", f"prometheusRule.rules.{live.ALERT}.severity=critical", check=False)
    assert r.returncode != 0 and f"prometheusRule.rules.{live.ALERT}: no alert or recording rule" in r.stderr


def test_without_baselines_nothing_in_the_chart_output_changes(helm, repo_chart, work):
    """Every rendered object but the PrometheusRule is identical with and without a baseline, and
    the PrometheusRule differs only by the baseline's group appended; an empty map adds nothing."""
    plain = list(template(helm, repo_chart, *CRDS))
    empty = list(template(helm, repo_chart, *CRDS, "--set-json", "prometheusRule.baselines={}"))
    assert empty == plain
    doc = recipe("tiny-grpo")
    loaded = list(template(helm, repo_chart, *CRDS, "-f", values_file(work, doc)))
    assert [d["kind"] for d in loaded] == [d["kind"] for d in plain]
    for before, after in zip(plain, loaded):
        if before["kind"] != "PrometheusRule":
            assert after == before, before["kind"]
        else:
            groups = after["spec"]["groups"]
            assert groups[-1]["name"] == f"rl-exporter-baseline-{doc['recipe']}"
            assert dict(after, spec={"groups": groups[:-1]}) == before
    assert not any(live.ALERT in yaml.safe_dump(d) for d in plain if d["kind"] == "PrometheusRule")


def test_bad_or_duplicate_baselines_fail_clearly(helm, repo_chart, work):
    r = template(helm, repo_chart, *CRDS, "--set", "prometheusRule.baselines.mine.groups=oops", check=False)
    assert r.returncode != 0 and "prometheusRule.baselines" in r.stderr, r.stderr
    # one baseline file loaded under two names: Prometheus would refuse the duplicate group
    vf = work / "twice.values.yaml"
    groups = live.render(recipe("tiny-grpo"))
    vf.write_text(yaml.safe_dump({"prometheusRule": {"baselines": {"a": groups, "b": groups}}}))
    r = template(helm, repo_chart, *CRDS, "-f", str(vf), check=False)
    assert r.returncode != 0 and "rule group rl-exporter-baseline-tiny-grpo twice" in r.stderr, r.stderr
