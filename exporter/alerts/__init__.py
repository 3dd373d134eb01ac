"""rl-exporter's Prometheus alerting and recording rules, generated from this package
(exporter/alerts/rules.py lists the areas; exporter/alerts/render.py writes the rule file)."""
