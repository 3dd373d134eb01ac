"""helm/sync.py: discovery, copies, --check, and the errors it raises on bad sources."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import helm_sync

ROOT = Path(__file__).resolve().parents[2]
sync = helm_sync()

RULES = "groups:\n- name: g1\n  rules:\n  - alert: A\n    expr: up == 0\n    annotations:\n      description: '{{ $labels.run }}'\n"
DASH = {"uid": "rl-x", "title": "X", "panels": [{"id": 1, "targets": [{"legendFormat": "{{run}}"}]}]}


def make_root(tmp: Path) -> Path:
    (tmp / "exporter" / "rules").mkdir(parents=True)
    (tmp / "exporter" / "rules" / "a.yaml").write_text(RULES)
    (tmp / "exporter" / "rules" / "notes.md").write_text("not a rule file")
    (tmp / "helm" / "rl-exporter" / "files" / "alertmanager").mkdir(parents=True)
    (tmp / "helm" / "rl-exporter" / "files" / "alertmanager" / "alertmanager.yml").write_text("route:\n  receiver: x\nreceivers:\n- name: x\n")
    (tmp / "helm" / "rl-exporter" / "files" / "dashboards").mkdir(parents=True)
    (tmp / "helm" / "rl-exporter" / "files" / "dashboards" / "rl-x.json").write_text(json.dumps(DASH, indent=2))
    (tmp / "dashboards" / "provisioning").mkdir(parents=True)
    (tmp / "dashboards" / "provisioning" / "skip.json").write_text("{}")
    return tmp


def test_plan_discovers_by_glob_and_copies_verbatim(tmp_path):
    root = make_root(tmp_path / "r")
    want = sync.plan(root)
    assert set(want) == {"files/rules/a.yaml", "files/dashboards/rl-x.json", "files/alertmanager/alertmanager.yml"}
    assert want["files/rules/a.yaml"] == RULES  # verbatim, {{ }} untouched
    # the generator writes the chart's dashboards (the one copy): carried byte for byte
    assert want["files/dashboards/rl-x.json"] == (root / "helm" / "rl-exporter" / "files" / "dashboards" / "rl-x.json").read_text()


def test_only_generated_dashboards_are_carried(tmp_path):
    root = make_root(tmp_path / "r")
    (root / "dashboards" / "other").mkdir()
    (root / "dashboards" / "other" / "rl-y.json").write_text(json.dumps({**DASH, "uid": "rl-y"}))
    assert [k for k in sync.plan(root) if k.startswith("files/dashboards/")] == ["files/dashboards/rl-x.json"]


def test_write_then_check_then_drift(tmp_path, capsys):
    root, chart = make_root(tmp_path / "r"), tmp_path / "chart"
    (chart / "files" / "dashboards").mkdir(parents=True)
    (chart / "files" / "dashboards" / "old.json").write_text("{}")
    assert sync.main(["--root", str(root), "--chart", str(chart)]) == 0
    assert not (chart / "files" / "dashboards" / "old.json").exists(), "stale copies are removed"
    assert sync.main(["--root", str(root), "--chart", str(chart), "--check"]) == 0
    (root / "exporter" / "rules" / "a.yaml").write_text(RULES.replace("up == 0", "up == 1"))
    (root / "helm" / "rl-exporter" / "files" / "dashboards" / "rl-y.json").write_text(json.dumps({**DASH, "uid": "rl-y"}))
    capsys.readouterr()
    assert sync.main(["--root", str(root), "--chart", str(chart), "--check"]) == 1
    err = capsys.readouterr().err
    assert "differs from its source: files/rules/a.yaml" in err
    assert "missing in chart: files/dashboards/rl-y.json" in err


def test_empty_sources_are_fine(tmp_path):
    assert sync.plan(tmp_path) == {}


@pytest.mark.parametrize("mutate, message", [
    (lambda r: (r / "exporter/rules/b.yaml").write_text(RULES), "group 'g1' also in"),
    (lambda r: (r / "exporter/rules/b.yaml").write_text("groups: nope\n"), "no 'groups' list"),
    (lambda r: (r / "exporter/rules/b.yaml").write_text("groups: [\n"), "not YAML"),
    (lambda r: (r / "helm/rl-exporter/files/dashboards/rl-x.json").write_text("{not json"), "not JSON"),
    (lambda r: (r / "helm/rl-exporter/files/dashboards/rl-x.json").write_text(json.dumps({**DASH, "big": "x" * (1024 * 1024)})),
     "too large for one ConfigMap"),
    (lambda r: (r / "helm/rl-exporter/files/alertmanager/alertmanager.yml").write_text("receivers: []\n"), "no 'route'"),
])
def test_bad_sources_are_refused(tmp_path, mutate, message, capsys):
    root = make_root(tmp_path / "r")
    mutate(root)
    with pytest.raises(sync.SyncError, match=message):
        sync.plan(root)
    assert sync.main(["--root", str(root), "--chart", str(tmp_path / "c"), "--check"]) == 2
    assert message.split("'")[0] in capsys.readouterr().err


def test_committed_chart_is_current():
    problems = sync.diff(sync.plan(ROOT), sync.current(ROOT / "helm" / "rl-exporter"))
    assert not problems, "run `python helm/sync.py`: " + "; ".join(problems)
