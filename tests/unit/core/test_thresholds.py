"""The exporter's own hang and stall conditions are the alert rules' (exporter/alerts/rules.py CONFIG):
a stack dump, the goodput's stalled bucket and /status agree with the page that fires."""
import math

from exporter.alerts.rules import CONFIG
from exporter.core import thresholds as t


def test_thresholds_equal_the_alert_rules_config():
    assert t.PHASE_HUNG_FACTOR == CONFIG["phase_hung_factor"]
    assert t.PHASE_HUNG_FLOOR_S == CONFIG["phase_hung_floor_seconds"].seconds
    assert t.PHASE_HUNG_NO_HISTORY_S == CONFIG["phase_hung_no_history_seconds"].seconds
    assert t.STALL_STEP_FACTOR == CONFIG["stall_step_factor"]
    assert t.STALL_FLOOR_S == CONFIG["stall_floor_seconds"].seconds


def test_limits():
    d = t.DEFAULT
    assert d.phase_limit(None) == 3600 and d.phase_limit(math.nan) == 3600
    assert d.phase_limit(30) == 600 and d.phase_limit(200) == 1200
    assert d.stall_limit(None) == 1800 and d.stall_limit(100) == 1800 and d.stall_limit(600) == 3000
