#!/usr/bin/env python3
"""Copy the generated alert rules, dashboards and Alertmanager example into the Helm chart.

Helm can only embed files inside the chart (`.Files.Get`), so the chart carries copies:

    alerts/rules/*.yaml                      -> helm/rl-exporter/files/rules/<name>.yaml       (verbatim)
    dashboards/**/*.json (not provisioning/) -> helm/rl-exporter/files/dashboards/<stem>.json  (minified)
    alerts/alertmanager/alertmanager.yml     -> helm/rl-exporter/files/alertmanager/alertmanager.yml

    python helm/sync.py            # write the copies, remove stale ones
    python helm/sync.py --check    # CI: exit 1 when the chart's copies differ from the sources

Sources are checked on the way: a rule file must be YAML with a `groups` list and group names
must be unique across files (they all land in one PrometheusRule); a dashboard must be a JSON
object with a `uid`, dashboard stems must be unique, and each minified dashboard must fit a
ConfigMap (1 MiB, with room for the object around it).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHART = HERE / "rl-exporter"
MANAGED = ("files/rules", "files/dashboards", "files/alertmanager")
CONFIGMAP_LIMIT = 1024 * 1024
CONFIGMAP_MARGIN = 16 * 1024           # metadata, labels, the data key
ALERTMANAGER_NAMES = ("alertmanager.yml", "alertmanager.yaml")


class SyncError(ValueError):
    pass


def minify(text: str, where: str) -> str:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise SyncError(f"{where}: not JSON: {e}") from None
    if not isinstance(doc, dict) or "panels" not in doc and "uid" not in doc:
        raise SyncError(f"{where}: not a Grafana dashboard (no uid/panels)")
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def rule_sources(root: Path) -> list[Path]:
    return sorted((root / "alerts" / "rules").glob("*.yaml"))


def dashboard_sources(root: Path) -> list[Path]:
    base = root / "dashboards"
    return sorted(p for p in base.glob("**/*.json")
                  if "provisioning" not in p.relative_to(base).parts
                  and "node_modules" not in p.relative_to(base).parts)


def alertmanager_source(root: Path) -> Path | None:
    for name in ALERTMANAGER_NAMES:
        p = root / "alerts" / "alertmanager" / name
        if p.is_file():
            return p
    return None


def plan(root: Path = ROOT) -> dict[str, str]:
    """Chart-relative path -> content the chart should carry."""
    out: dict[str, str] = {}
    groups: dict[str, Path] = {}
    for p in rule_sources(root):
        text = p.read_text(encoding="utf-8")
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SyncError(f"{p}: not YAML: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("groups"), list):
            raise SyncError(f"{p}: not a Prometheus rule file (no 'groups' list)")
        for g in doc["groups"]:
            name = g.get("name") if isinstance(g, dict) else None
            if not name:
                raise SyncError(f"{p}: a group without a name")
            if name in groups:
                raise SyncError(f"{p}: group {name!r} also in {groups[name]} "
                                "(both would land in one PrometheusRule)")
            groups[name] = p
        out[f"files/rules/{p.name}"] = text
    stems: dict[str, Path] = {}
    for p in dashboard_sources(root):
        if p.stem in stems:
            raise SyncError(f"{p}: same file name as {stems[p.stem]} (one ConfigMap per name)")
        stems[p.stem] = p
        text = minify(p.read_text(encoding="utf-8"), str(p))
        size = len(text.encode())
        if size > CONFIGMAP_LIMIT - CONFIGMAP_MARGIN:
            raise SyncError(f"{p}: {size} bytes minified, too large for one ConfigMap "
                            f"(limit {CONFIGMAP_LIMIT} bytes); split the dashboard")
        out[f"files/dashboards/{p.stem}.json"] = text + "\n"
    am = alertmanager_source(root)
    if am is not None:
        text = am.read_text(encoding="utf-8")
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SyncError(f"{am}: not YAML: {e}") from None
        if not isinstance(doc, dict) or "route" not in doc:
            raise SyncError(f"{am}: not an Alertmanager configuration (no 'route')")
        out["files/alertmanager/alertmanager.yml"] = text
    return out


def current(chart: Path) -> dict[str, str]:
    out = {}
    for d in MANAGED:
        base = chart / d
        if base.is_dir():
            for p in sorted(base.rglob("*")):
                if p.is_file():
                    out[p.relative_to(chart).as_posix()] = p.read_text(encoding="utf-8")
    return out


def diff(want: dict[str, str], have: dict[str, str]) -> list[str]:
    problems = []
    for rel in sorted(set(want) | set(have)):
        if rel not in have:
            problems.append(f"missing in chart: {rel}")
        elif rel not in want:
            problems.append(f"stale in chart (no source any more): {rel}")
        elif want[rel] != have[rel]:
            problems.append(f"differs from its source: {rel}")
    return problems


def write(chart: Path, want: dict[str, str]) -> list[str]:
    changed = []
    have = current(chart)
    for rel, text in want.items():
        if have.get(rel) != text:
            p = chart / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
            changed.append(f"wrote {rel}")
    for rel in sorted(set(have) - set(want)):
        (chart / rel).unlink()
        changed.append(f"removed {rel}")
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="helm/sync.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if the chart's copies are not current")
    ap.add_argument("--root", type=Path, default=ROOT, help="repository root holding alerts/ and dashboards/")
    ap.add_argument("--chart", type=Path, default=CHART, help="chart directory (default helm/rl-exporter)")
    a = ap.parse_args(argv)
    try:
        want = plan(a.root)
    except SyncError as e:
        print(f"helm/sync.py: {e}", file=sys.stderr)
        return 2
    n_rules = sum(r.startswith("files/rules/") for r in want)
    n_dash = sum(r.startswith("files/dashboards/") for r in want)
    n_am = sum(r.startswith("files/alertmanager/") for r in want)
    summary = f"{n_rules} rule file(s), {n_dash} dashboard(s), {n_am} alertmanager config"
    if a.check:
        problems = diff(want, current(a.chart))
        for p in problems:
            print(f"helm/sync.py --check: {p}", file=sys.stderr)
        if problems:
            print("run `python helm/sync.py` and commit the result", file=sys.stderr)
            return 1
        print(f"helm/sync.py: chart current ({summary})")
        return 0
    for line in write(a.chart, want):
        print(line)
    print(f"helm/sync.py: {summary} in {a.chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
