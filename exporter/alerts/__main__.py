"""python -m exporter.alerts [render|check|test-file|cadence|alertmanager] — render the rule files and check them.

    python -m exporter.alerts render                       # rewrite exporter/rules/rl-exporter.rules.yaml
    python -m exporter.alerts render --overrides my.yaml --out /tmp/rules.yaml
    python -m exporter.alerts render --baseline recipe.yaml [--helm-values]   # a baseline's rules (docs/baselines.md)
    python -m exporter.alerts alertmanager                 # rewrite helm/rl-exporter/files/alertmanager/alertmanager.yml
    python -m exporter.alerts test-file                    # write exporter/alerts/tests/*.test.yaml (unit + cadence;
                                                  # generated for promtool, not committed)
    python -m exporter.alerts cadence --measure            # rerun promtool, record steps-to-fire per alert
                                                  # and cadence (exporter/alerts/tests/cadence-steps.json)
    python -m exporter.alerts cadence                      # print the alert x cadence x steps table
    python -m exporter.alerts docs                         # rewrite the generated tables of docs/alerts.md
                                                  # and the runbook's Meaning lines
    python -m exporter.alerts --check                      # CI: committed files current, names in catalog,
                                                  # runbook anchors resolve
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from . import check as _check
from .render import OverrideError, render, yaml_text
from exporter.postmortem.baseline import BaselineError
from .paths import AM_FILE, HERE, RULES_FILE, RUNBOOK, TEST_FILE  # noqa: F401 (re-exported)


def load_overrides(path: str | None) -> dict | None:
    if not path:
        return None
    text = Path(path).read_text()
    if path.endswith(".json"):
        return json.loads(text)
    import yaml
    return yaml.safe_load(text) or {}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m exporter.alerts", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", nargs="?", default="render", choices=("render", "check", "test-file", "cadence", "docs", "alertmanager"))
    p.add_argument("--measure", action="store_true", help="cadence: rerun promtool and record steps-to-fire")
    p.add_argument("--long", type=int, metavar="STEPS",
                   help="cadence: replay one healthy run of STEPS steps per cadence through promtool "
                        "(no alert of any severity may fire)")
    p.add_argument("--check", action="store_true", help="same as the 'check' command")
    p.add_argument("--overrides", help="YAML/JSON: thresholds, alerts.<Name>.{for,severity,disabled,"
                   "runbook_url}, runbook_base_url")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="multiply every window, for: and time threshold (tests)")
    p.add_argument("--out", help="write here instead of the committed file ('-' = stdout)")
    p.add_argument("--baseline", metavar="FILE",
                   help="render: the bands of an `rl-exporter baseline` file as a second rule "
                        "file (RLOutsideBaseline), to --out or stdout; the shipped rules stay")
    p.add_argument("--helm-values", action="store_true",
                   help="render --baseline: as Helm chart values (prometheusRule.baselines.<recipe>) "
                        "for `helm install -f`")
    a = p.parse_args(argv)
    if a.check or a.command == "check":
        problems = _check.run_checks()
        for line in problems:
            print("FAIL:", line, file=sys.stderr)
        if not problems:
            print("alerts: OK (rules current, metric names in catalog, runbook anchors resolve, "
                  "promtool cases for every alert, cadence budgets hold)")
        return 1 if problems else 0
    if a.command == "docs":
        from . import docs, runbook
        docs.write()
        RUNBOOK.write_text(runbook.render())
        print(f"wrote {docs.DOC} and {RUNBOOK}")
        return 0
    if a.command == "cadence":
        from . import cadence
        if a.long:
            return cadence.run_long(a.long)
        if a.measure:
            got = cadence.measure()
            fired = {c: r.pop("_healthy_fired", []) for c, r in got.items()}
            if any(fired.values()):
                print(f"healthy runs fired alerts: {fired}", file=sys.stderr)
                return 1
            cadence.MEASURED_FILE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
            print(f"wrote {cadence.MEASURED_FILE}")
            for c in cadence.CADENCES:
                cadence.cadence_file(c).write_text(cadence.render_cadence(c))
                print(f"wrote {cadence.cadence_file(c)}")
        print(cadence.table())
        problems = cadence.problems()
        for line in problems:
            print("FAIL:", line, file=sys.stderr)
        return 1 if problems else 0
    try:
        if a.command == "alertmanager":
            from .alertmanager import config, yaml_text as am_yaml
            text = am_yaml(config())
            target = a.out or str(AM_FILE)
        elif a.command == "test-file":
            from .testcases import render_tests, write_test_files
            if not a.out:
                for path in write_test_files():
                    print(f"wrote {path}")
                return 0
            text, target = render_tests(), a.out
        elif a.baseline:
            from . import baseline
            from exporter.postmortem.baseline import load
            doc, over = load(a.baseline), load_overrides(a.overrides)
            if a.helm_values:
                body = yaml_text(baseline.helm_values(doc, over))
                body = body[body.index("\nprometheusRule:") + 1:]  # a head of its own
                text = (f"# Generated by `python -m exporter.alerts render --baseline {a.baseline} "
                        "--helm-values`: pass to helm with -f (docs/baselines.md).\n" + body)
            else:
                text = yaml_text(baseline.render(doc, a.time_scale, over))
            target = a.out or "-"
        else:
            text = yaml_text(render(load_overrides(a.overrides), a.time_scale))
            target = a.out or str(RULES_FILE)
    except (OverrideError, ValueError, KeyError, BaselineError) as e:
        print(f"python -m exporter.alerts: {e}", file=sys.stderr)
        return 2
    if target == "-":
        sys.stdout.write(text)
    else:
        Path(target).write_text(text)
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
