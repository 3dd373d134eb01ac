"""Grafana dashboards for rl-exporter, generated from code.

    rl-exporter dashboards generate   # regenerate the chart's JSON (helm/rl-exporter/files/dashboards/)
                                      # and exporter/dashboards/provisioning/
    rl-exporter dashboards --check    # fail if the committed files differ or a panel queries
                                      # a metric the catalog lacks

Panels are declared as data (model.py) in one module per dashboard; render.py builds the
Grafana JSON with grafana-foundation-sdk (pinned 1769699379!11.6.0).
"""
from __future__ import annotations

from . import algorithms, diagnosis, exporter_health, fleet, gpu, overview

# Order = order of the dashboard links and of the docs.
DASHBOARDS = [overview.DASHBOARD, diagnosis.DASHBOARD, algorithms.DASHBOARD, gpu.DASHBOARD,
              fleet.DASHBOARD, exporter_health.DASHBOARD]
FOLDER = "RL training"

_uids = [d.uid for d in DASHBOARDS]
if len(set(_uids)) != len(_uids):
    raise ValueError(f"duplicate dashboard uid in {_uids}")
