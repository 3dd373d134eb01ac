"""The ranks of one run against each other: a rank that stays slower than the run's median rank.

Each exporting rank is its own scrape target (`instance`); its rl_run_info names its `rank`.
Thresholds: the "ranks of one run" block of alerts/config.py; the per-rank levels are recording
rules (alerts/recordings.py RANK_MIN, RANK_MEDIAN).
"""
from __future__ import annotations

from ..config import Dur
from ..exprs import R
from ..model import Alert
from ..recordings import RANK_MEDIAN, RANK_MIN

_RATIO = f"{RANK_MIN}\n  / on (run, phase) group_left () {RANK_MEDIAN}"
_EXCESS = f"{RANK_MIN}\n  - on (run, phase) group_left () {RANK_MEDIAN}"

ALERTS: list[Alert] = [
    # A warning: a slow rank costs every synchronous step its excess, but the run goes on.
    Alert("RLRankStraggler", "warning",
          "(\n"
          f"  ({_RATIO}\n  > {{straggler_factor}})\n"
          f"  and on (run, instance, phase) ({_EXCESS}\n  > {{straggler_min_excess_seconds}})\n"
          f"  and on (run, phase) (count by (run, phase) ({RANK_MIN}) >= {{straggler_min_ranks}})\n"
          ")\n"
          # the rank's name: the hook's rl_run_info on the same target
          "* on (run, instance) group_left (rank) group by (run, instance, rank) (rl_run_info)",
          Dur(0), "One rank of the run is much slower than the others in a phase: every step waits for it.",
          f"Run {R}: rank {{{{ $labels.rank }}}} ({{{{ $labels.instance }}}}) took at least "
          "{{ printf \"%.1f\" $value }}x the median rank's time in phase {{ $labels.phase }} on every "
          "step of the recent window (over [[straggler_factor]]x and "
          "[[straggler_min_excess_seconds]] s more)."),
]
