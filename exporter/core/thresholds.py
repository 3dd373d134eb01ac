"""When a phase or a run counts as hung, in the exporter's own process: the same conditions
as the RLPhaseHung and RLRunStalled alert rules (exporter/alerts/rules.py CONFIG; a unit test keeps
the numbers equal), so a stack dump, the goodput's "stalled" bucket and /status agree with
the page that fires.

- a phase is hung when open longer than max(PHASE_HUNG_FLOOR_S, PHASE_HUNG_FACTOR x its
  recent median), or PHASE_HUNG_NO_HISTORY_S while it has never closed;
- a run is stalled when no step arrived for max(STALL_FLOOR_S, STALL_STEP_FACTOR x its
  expected step time), or STALL_FLOOR_S before it has a step time;
- a run is late (GET /status only, no page) when no step arrived for max(LATE_FLOOR_S,
  LATE_STEP_FACTOR x its expected step time) but the stall threshold is not reached yet;
- time in a declared pause (a phase named PAUSE_PHASES open: the alert rules' pause_phases)
  counts for none of these: a pause of the whole run holds every phase and every step.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

PHASE_HUNG_FACTOR = 6
PHASE_HUNG_FLOOR_S = 600.0
PHASE_HUNG_NO_HISTORY_S = 3600.0
STALL_STEP_FACTOR = 5
STALL_FLOOR_S = 1800.0
LATE_STEP_FACTOR = 10
LATE_FLOOR_S = 60.0
# phase names a run reports a pause of the whole run with (the Miles lab's heat guard), matched
# whole as PromQL's =~ matches them
PAUSE_PHASES = "pause|heat_guard|thermal_pause"
_PAUSE = re.compile(PAUSE_PHASES)


def is_pause(phase) -> bool:
    """A phase that reports a pause of the whole run (PAUSE_PHASES, matched whole)."""
    return isinstance(phase, str) and _PAUSE.fullmatch(phase) is not None


@dataclass(frozen=True)
class HangThresholds:
    phase_factor: float = PHASE_HUNG_FACTOR
    phase_floor_s: float = PHASE_HUNG_FLOOR_S
    phase_no_history_s: float = PHASE_HUNG_NO_HISTORY_S
    stall_factor: float = STALL_STEP_FACTOR
    stall_floor_s: float = STALL_FLOOR_S

    def phase_limit(self, median: float | None) -> float:
        """Seconds a phase may stay open before it counts as hung."""
        if median is None or not math.isfinite(median):
            return self.phase_no_history_s
        return max(self.phase_floor_s, self.phase_factor * median)

    def stall_limit(self, expected_step: float | None) -> float:
        """Seconds without a step before the run counts as stalled."""
        if expected_step is None or not math.isfinite(expected_step):
            return self.stall_floor_s
        return max(self.stall_floor_s, self.stall_factor * expected_step)

    def late_limit(self, expected_step: float | None) -> float | None:
        """Seconds without a step before the run reads as late (None without a step time)."""
        if expected_step is None or not math.isfinite(expected_step):
            return None
        return max(LATE_FLOOR_S, LATE_STEP_FACTOR * expected_step)


DEFAULT = HangThresholds()
