"""The ranks of one run against each other: a rank that stays slower than the run's median rank.

Each exporting rank is its own scrape target (`instance`); its rl_run_info names its `rank`.
Thresholds: the "ranks of one run" block of exporter/alerts/config.py; each rank's ratio to the median
rank and its excess are recording rules (exporter/alerts/recordings.py RANK_RATIO, RANK_EXCESS).
"""
from __future__ import annotations

from ..config import Dur
from ..exprs import R, ladder
from ..model import Alert
from ..recordings import RANK_EXCESS, RANK_RATIO

ALERTS: list[Alert] = [
    # A warning: a slow rank costs every synchronous step its excess, but the run goes on.
    # The minimum over the window: slower than the median rank on every step of it.
    Alert("RLRankStraggler", "warning",
          ladder(f"min by (run, instance, phase) (min_over_time({RANK_RATIO}[{{W}}])) > {{straggler_factor}}\n"
                 "  and on (run, instance, phase)\n"
                 f"  min by (run, instance, phase) (min_over_time({RANK_EXCESS}[{{W}}]))"
                 " > {straggler_min_excess_seconds}", "{straggler_steps}") + "\n"
          # the rank's name: the hook's rl_run_info on the same target
          "* on (run, instance) group_left (rank) group by (run, instance, rank) (rl_run_info)",
          # the window's minimum already asks for every step; `for:` only rides out one evaluation
          Dur(60), "One rank of the run is much slower than the others in a phase: every step waits for it.",
          f"Run {R}: rank {{{{ $labels.rank }}}} ({{{{ $labels.instance }}}}) took at least "
          "{{ printf \"%.1f\" $value }}x the median rank's time in phase {{ $labels.phase }} on every "
          "step of the recent window (over [[straggler_factor]]x and "
          "[[straggler_min_excess_seconds]] s more)."),
]
