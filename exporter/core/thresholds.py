"""When a phase or a run counts as hung, in the exporter's own process: the same conditions
as the RLPhaseHung and RLRunStalled alert rules (exporter/alerts/rules.py CONFIG; a unit test keeps
the numbers equal), so a stack dump, the goodput's "stalled" bucket and /status agree with
the page that fires.

- a phase is hung when open longer than max(PHASE_HUNG_FLOOR_S, PHASE_HUNG_FACTOR x its
  recent median), or PHASE_HUNG_NO_HISTORY_S while it has never closed;
- a run is stalled when no step arrived for max(STALL_FLOOR_S, STALL_STEP_FACTOR x its
  expected step time), or STALL_FLOOR_S before it has a step time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

PHASE_HUNG_FACTOR = 6
PHASE_HUNG_FLOOR_S = 600.0
PHASE_HUNG_NO_HISTORY_S = 3600.0
STALL_STEP_FACTOR = 5
STALL_FLOOR_S = 1800.0


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


DEFAULT = HangThresholds()
