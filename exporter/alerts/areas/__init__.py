"""One module per area of alerts, each with its ALERTS list (assembled in exporter/alerts/rules.py)."""
