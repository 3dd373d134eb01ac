"""rl-exporter alerts [render|check|generate|docs|alertmanager|test-file|cadence] ...

    rl-exporter alerts render --overrides my.yaml --out rules.yaml   # your thresholds (works from a wheel)
    rl-exporter alerts render --baseline recipe.yaml [--helm-values]  # a baseline's rules (docs/baselines.md)
    rl-exporter alerts generate            # rewrite every generated file: rules, runbook, docs/alerts.md
                                           # tables, Alertmanager example, dashboards, the chart's copies
    rl-exporter alerts generate --check    # CI: fail on any drift (also `alerts check`, `alerts --check`)
    rl-exporter alerts test-file           # write exporter/alerts/tests/*.test.yaml for promtool
    rl-exporter alerts cadence [--measure] # the alert x cadence x steps table (--measure: rerun promtool)

`python -m exporter.alerts ...` is the same command. Without --out, render, docs, alertmanager,
test-file and generate write into the source tree, so they run only in a clone of the
repository; from an installed package give --out.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HELP = ("render the alert rules (your thresholds: --overrides), and in a checkout generate or "
        "check every file generated from them (rules, runbook, docs, Alertmanager, chart)")
COMMANDS = ("render", "check", "generate", "docs", "alertmanager", "test-file", "cadence")


def add_arguments(p):
    p.description = __doc__.split("\n\n", 1)[1]
    p.formatter_class = __import__("argparse").RawDescriptionHelpFormatter
    p.add_argument("alerts_command", nargs="?", default=None, choices=COMMANDS, metavar="COMMAND",
                   help=f"one of {', '.join(COMMANDS)} (default render)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; fail on any drift of a generated file (the same as `check`)")
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
    p.add_argument("--measure", action="store_true", help="cadence: rerun promtool and record steps-to-fire")
    p.add_argument("--long", type=int, metavar="STEPS",
                   help="cadence: replay one healthy run of STEPS steps per cadence through promtool "
                        "(no alert of any severity may fire)")


def load_overrides(path: str | None) -> dict | None:
    if not path:
        return None
    text = Path(path).read_text()
    if path.endswith(".json"):
        return json.loads(text)
    import yaml
    return yaml.safe_load(text) or {}


def _cadence(a) -> int:
    from ..alerts import cadence
    if a.long:
        return cadence.run_long(a.long)
    if a.measure:
        from ..alerts.paths import need_checkout
        need_checkout("rl-exporter alerts cadence --measure")
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


def _text(a, prog: str) -> tuple[str, str]:
    """(text, target) of the single-file commands; target '' = the committed file."""
    from ..alerts.render import render, yaml_text
    if a.alerts_command == "alertmanager":
        from ..alerts.alertmanager import config, yaml_text as am_yaml
        return am_yaml(config()), a.out or ""
    if a.alerts_command == "test-file":
        from ..alerts.testcases import render_tests
        return render_tests(), a.out or ""
    if a.baseline:
        from ..alerts import baseline
        from ..postmortem.baseline import load
        doc, over = load(a.baseline), load_overrides(a.overrides)
        if a.helm_values:
            body = yaml_text(baseline.helm_values(doc, over))
            body = body[body.index("\nprometheusRule:") + 1:]  # a head of its own
            return (f"# Generated by `{prog} render --baseline {a.baseline} --helm-values`: pass to "
                    "helm with -f (docs/baselines.md).\n" + body), a.out or "-"
        return _head(yaml_text(baseline.render(doc, a.time_scale, over)),
                     f"`{prog} render --baseline {a.baseline}`"), a.out or "-"
    text = yaml_text(render(load_overrides(a.overrides), a.time_scale))
    if a.overrides or a.time_scale != 1:
        text = _head(text, f"`{prog} render` with --overrides {a.overrides} --time-scale {a.time_scale:g}")
    return text, a.out or ""


def _head(text: str, how: str) -> str:
    from ..alerts.render import GENERATED
    return text.replace(GENERATED, f"# Generated by {how} from exporter/alerts/.", 1)


def run(a, prog: str = "rl-exporter alerts") -> int:
    from ..alerts.paths import NotACheckout, need_checkout
    from ..alerts.render import OverrideError
    from ..postmortem.baseline import BaselineError
    command = "check" if a.check else (a.alerts_command or "render")
    if command in ("check", "generate"):
        from ..alerts import generate
        try:
            return generate.run(check=command == "check")
        except NotACheckout as e:
            print(f"{prog}: {e}", file=sys.stderr)
            return 2
    try:
        if command == "docs":
            from ..alerts import docs, runbook
            from ..alerts.paths import RUNBOOK
            need_checkout(f"{prog} docs")
            docs.write()
            RUNBOOK.write_text(runbook.render())
            print(f"wrote {docs.DOC} and {RUNBOOK}")
            return 0
        if command == "cadence":
            return _cadence(a)
        if command == "test-file" and not a.out:
            from ..alerts.testcases import write_test_files
            need_checkout(f"{prog} test-file")
            for path in write_test_files():
                print(f"wrote {path}")
            return 0
        text, target = _text(a, prog)
        if not target:
            from ..alerts.paths import AM_FILE, RULES_FILE
            need_checkout(f"{prog} {command}")
            target = str(AM_FILE if command == "alertmanager" else RULES_FILE)
    except NotACheckout as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except (OverrideError, ValueError, KeyError, BaselineError, OSError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    if target == "-":
        sys.stdout.write(text)
    else:
        Path(target).write_text(text)
        print(f"wrote {target}")
    return 0
