"""rl-exporter's Prometheus alerting and recording rules, generated from this package
(alerts/rules.py lists the areas; alerts/render.py writes the rule file)."""
