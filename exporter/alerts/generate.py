"""Everything generated from the alerts' records, in one go: the rule file, the runbook, the
tables of docs/alerts.md, the Alertmanager example, the dashboards and the Helm chart's copies.

    rl-exporter alerts generate            # write them all (in a source checkout), then check
    rl-exporter alerts generate --check    # write nothing; fail on any drift (what CI runs)

`--check` also holds the records to what the files cannot show: metric names in the catalog,
runbook anchors, a promtool case or cadence row for every alert, cadence budgets
(exporter/alerts/check.py), the dashboards' names (exporter/dashboards/generate.py) and the
chart's validation (helm/sync.py).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Callable

from .paths import AM_FILE, CHART, DOC, RULES_FILE, RUNBOOK, need_checkout

DASHBOARDS_HINT = "pip install 'rl-exporter[dashboards]'"


def alert_files() -> list[tuple[Path, Callable[[], str]]]:
    """The files written from the alerts alone, and how to make each."""
    from . import docs, runbook
    from .alertmanager import config, yaml_text as am_yaml
    from .render import render, yaml_text
    return [(RULES_FILE, lambda: yaml_text(render())),
            (RUNBOOK, runbook.render),
            (DOC, lambda: docs.render(DOC.read_text())),
            (AM_FILE, lambda: am_yaml(config()))]


def dashboards_missing() -> str | None:
    """The install hint when the dashboards extra (grafana-foundation-sdk) is absent."""
    try:
        import grafana_foundation_sdk  # noqa: F401
    except ImportError:
        return DASHBOARDS_HINT
    return None


def _helm_sync(root: Path, check: bool) -> int:
    spec = importlib.util.spec_from_file_location("rl_exporter_helm_sync", root / "helm" / "sync.py")
    sync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sync)
    return sync.main(["--root", str(root), "--chart", str(CHART)] + (["--check"] if check else []))


def run(check: bool = False, out=None, err=None) -> int:
    """0 when every generated file is current (after writing them, unless `check`)."""
    out, err = out or sys.stdout, err or sys.stderr
    root = need_checkout("rl-exporter alerts generate")
    if not check:
        for path, make in alert_files():
            text = make()
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                print(f"wrote {path.relative_to(root)}", file=out)
    from . import check as checks
    problems = checks.run_checks()
    hint = dashboards_missing()
    if hint:
        problems.append(f"dashboards: not generated or checked: grafana-foundation-sdk is not "
                        f"installed ({hint})")
    else:
        from exporter.dashboards import generate as dashboards
        if not check:
            before = dashboards.existing()
            written = dashboards.write()
            changed = sum(before.get(rel) != text for rel, text in dashboards.outputs().items())
            print(f"dashboards: {len(written)} files, {changed} changed", file=out)
        if dashboards.check(err=err):
            problems.append("dashboards: see above")
    if _helm_sync(root, check):
        problems.append("helm/rl-exporter: the chart's copies (helm/sync.py, above)")
    for p in problems:
        print("FAIL:", p, file=err)
    if not problems:
        print("alerts generate: everything current (rules, runbook, docs/alerts.md, Alertmanager "
              "example, dashboards, chart); metric names in catalog, runbook anchors resolve, "
              "promtool cases for every alert, cadence budgets hold", file=out)
    return 1 if problems else 0
