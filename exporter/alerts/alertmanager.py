"""The example Alertmanager configuration, generated so its inhibitions follow exporter/alerts/rules.py.

- critical -> PagerDuty (Events API v2; routing key read from a file mounted from a Secret,
  our `severity` passed through), warning -> a ticket/chat webhook, info -> nowhere;
- grouped by run (and alertname);
- inhibitions: critical mutes warning/info of the same run; cause alerts mute the symptom
  alerts they explain (rules.CAUSES);
- fleets: one page per run, not one per rank (the PagerDuty route groups by run alone, so
  every rank's and every critical alert of a run share one notification), and a run-level
  critical alert mutes the rank-level alerts of its run (RANK_LEVEL: alerts kept per
  `instance`, e.g. RLExporterDown on each of a crashed job's ranks).

`loopback(...)` is the same routing with both receivers replaced by webhooks on 127.0.0.1,
for tests: a running Alertmanager must never call out to PagerDuty from here.
"""
from __future__ import annotations

import copy

from .rules import ALERTS, CAUSES

PAGERDUTY_KEY_FILE = "/etc/alertmanager/secrets/pagerduty/routing-key"
TICKET_WEBHOOK_URL = "http://alert-tickets.monitoring.svc:8080/rl-exporter"

# Alerts that fire once per scrape target (their expression keeps `instance`): one per rank.
RANK_LEVEL = tuple(a.name for a in ALERTS if "instance" in a.expr)


def fleet_inhibitions() -> list[dict]:
    """A run-level critical alert mutes the rank-level alerts of the same run."""
    run_level = f'alertname!~"{"|".join(RANK_LEVEL)}"'
    return [{"source_matchers": ['severity="critical"', run_level],
             "target_matchers": [f'alertname="{name}"'], "equal": ["run"]} for name in RANK_LEVEL]


def config() -> dict:
    inhibit = [
        {"source_matchers": ['severity="critical"'], "target_matchers": ['severity=~"warning|info"'],
         "equal": ["run"]},
        {"source_matchers": ['severity="warning"'], "target_matchers": ['severity="info"'],
         "equal": ["run"]},
    ]
    for cause, symptom in CAUSES:
        inhibit.append({"source_matchers": [f'alertname="{cause}"'],
                        "target_matchers": [f'alertname="{symptom}"'], "equal": ["run"]})
    inhibit += fleet_inhibitions()
    return {
        "global": {"resolve_timeout": "5m"},
        "route": {
            "receiver": "null",
            "group_by": ["run", "alertname"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [
                # one page per run: every critical alert of a run, from any rank, in one group
                {"matchers": ['severity="critical"'], "receiver": "pagerduty", "group_by": ["run"],
                 "repeat_interval": "1h"},
                {"matchers": ['severity="warning"'], "receiver": "tickets", "repeat_interval": "24h"},
                {"matchers": ['severity="info"'], "receiver": "null"},
            ],
        },
        "inhibit_rules": inhibit,
        "receivers": [
            {"name": "null"},
            {"name": "pagerduty", "pagerduty_configs": [{
                "routing_key_file": PAGERDUTY_KEY_FILE,
                "severity": '{{ if .CommonLabels.severity }}{{ .CommonLabels.severity }}{{ else }}critical{{ end }}',
                # a run's page may hold several alerts: name them when they differ
                "description": '{{ if .CommonLabels.alertname }}{{ .CommonLabels.alertname }}'
                               '{{ else }}{{ range .Alerts.Firing }}{{ .Labels.alertname }} {{ end }}'
                               '{{ end }} on run {{ .CommonLabels.run }}: '
                               '{{ if .CommonAnnotations.summary }}{{ .CommonAnnotations.summary }}'
                               '{{ else }}{{ .Alerts.Firing | len }} firing{{ end }}',
                "details": {
                    "run": "{{ .CommonLabels.run }}",
                    "alertname": "{{ .CommonLabels.alertname }}",
                    "description": "{{ .CommonAnnotations.description }}",
                    "runbook_url": "{{ .CommonAnnotations.runbook_url }}",
                    "firing": "{{ .Alerts.Firing | len }}",
                },
                "links": [{"href": "{{ .CommonAnnotations.runbook_url }}", "text": "runbook"}],
                "send_resolved": True,
            }]},
            {"name": "tickets", "webhook_configs": [{"url": TICKET_WEBHOOK_URL, "send_resolved": True,
                                                      "max_alerts": 20}]},
        ],
    }


def loopback(webhook_base: str, fast: bool = True) -> dict:
    """Same routing; PagerDuty and tickets are webhooks to `webhook_base`/pagerduty|tickets."""
    c = copy.deepcopy(config())
    for r in c["receivers"]:
        if r["name"] == "pagerduty":
            del r["pagerduty_configs"]
            r["webhook_configs"] = [{"url": f"{webhook_base}/pagerduty", "send_resolved": True}]
        elif r["name"] == "tickets":
            r["webhook_configs"] = [{"url": f"{webhook_base}/tickets", "send_resolved": True}]
    if fast:
        c["route"].update({"group_wait": "1s", "group_interval": "2s", "repeat_interval": "1m"})
        for r in c["route"]["routes"]:
            r.pop("repeat_interval", None)
    return c


def yaml_text(doc: dict) -> str:
    import yaml
    head = ("# Example Alertmanager routing for rl-exporter alerts. Generated by\n"
            "# `rl-exporter alerts generate` from exporter/alerts/alertmanager.py (inhibitions follow\n"
            "# exporter/alerts/rules.py CAUSES). Mount the PagerDuty Events v2 routing key from a Secret at\n"
            f"# {PAGERDUTY_KEY_FILE}; point the tickets webhook at your ticket/chat bridge.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, width=120)
