"""rl-exporter's Prometheus alerting and recording rules, generated from alerts/rules.py."""
from .rules import ALERTS, CONFIG, RECORDINGS, render  # noqa: F401
