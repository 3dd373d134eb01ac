"""The ranks of one run against each other: a rank that stays slower than the run's median rank.

Each exporting rank is its own scrape target (`instance`); its rl_run_info names its `rank`.
Thresholds: the record's own, and straggler_min_ranks (shared: the recordings read it,
exporter/alerts/config.py); each rank's ratio to the median rank and its excess are recording
rules (exporter/alerts/recordings.py RANK_RATIO, RANK_EXCESS).
"""
from __future__ import annotations

from ..config import Dur
from ..exprs import RUN_PAUSED, ladder
from ..model import Alert, Case, Threshold
from ..series import life, rank, steps
from ..sim.healthy import uniform
from ..sim.pathology import Pathology
from ..recordings import RANK_EXCESS, RANK_RATIO

def _slow_rank(v, i, rng):
    """Rank 2's GPU runs at half speed (held down by its clocks, a slow host): its gen takes
    about twice the others', and they wait for it in update_actor."""
    v["=ranks"][2]["gen"] *= uniform(rng, 1.9, 2.1)


_RANKS = "per-rank phase durations: the simulated run (exporter/alerts/sim/run.py) has 4 ranks, the " \
         "demo's rank-straggler 3 (exporter/demo/beside.py; tests/integration/test_straggler_gloo.py " \
         "proves it on gloo ranks)"


ALERTS: list[Alert] = [
    # A warning: a slow rank costs every synchronous step its excess, but the run goes on.
    # The minimum over the window: slower than the median rank on every step of it.
    Alert(
        name="RLRankStraggler", severity="warning", for_=Dur(60),
        expr=ladder(f"min by (run, instance, phase) (min_over_time({RANK_RATIO}[{{W}}])) > {{straggler_factor}}\n"
                    "  and on (run, instance, phase)\n"
                    f"  min by (run, instance, phase) (min_over_time({RANK_EXCESS}[{{W}}]))"
                    " > {straggler_min_excess_seconds}", "{straggler_steps}") + "\n"
             # the rank's name: the hook's rl_run_info on the same target
             "* on (run, instance) group_left (rank) group by (run, instance, rank) (rl_run_info)\n"
             # a declared pause of the run is no rank's slowness
             "unless on (run) " + RUN_PAUSED,
        thresholds={
            "straggler_factor": Threshold(
                1.5,
                "Every one of a rank's durations over the window above this factor x the run's "
                "median rank. NVIDIA's Resiliency Extension (straggler detection) scores each rank's "
                "section time relative to a reference rank and leaves the threshold to the user; the "
                "median of ranks is the reference here. 1.5: every synchronous step waits a third of "
                "that phase again for the one rank, while healthy per-rank jitter of a phase (uneven "
                "sequence lengths after balancing) stays within +-20 %."),
            "straggler_steps": Threshold(
                5,
                "The shortest step window holding this many steps: slower on every step of it."),
            "straggler_min_excess_seconds": Threshold(
                Dur(5),
                "The rank must also lose this much time per step over the median rank: a 20 ms phase "
                "that takes 60 ms on one rank is 3x slower and costs nothing."),
        },
        summary="One rank of the run is much slower than the others in a phase: every step waits for "
                "it.",
        description="Run {{ $labels.run }}: rank {{ $labels.rank }} ({{ $labels.instance }}) took at "
                    "least {{ printf \"%.1f\" $value }}x the median rank's time in phase {{ "
                    "$labels.phase }} on every step of the recent window (over {straggler_factor}x "
                    "and {straggler_min_excess_seconds} s more).",
        meaning="on every step of {last_straggler_steps} one rank's duration of a phase "
                "(`rl_phase_duration_seconds`, or its step: `rl_step_duration_seconds` as phase "
                "`step`) was above {straggler_factor} x the median of the ranks' latest durations of "
                "that phase, and at least {straggler_min_excess_seconds} longer, in a run where at "
                "least {straggler_min_ranks} ranks report that phase. Ranks are the run's scrape "
                "targets (`instance`); the `rank` label comes from each target's `rl_run_info`. "
                "Pause phases ({pause_phases}) are left out, and a run in a declared pause (its "
                "state paused, remembered {lifecycle_window}, or a pause phase open) does not fire. "
                "Held {for}.",
        impact="in a synchronous run every step waits at the next collective for the slowest rank, "
               "so the whole run moves at that rank's pace: the excess over the median rank is lost "
               "on every GPU of the run, every step.",
        diagnosis="first which phase the alert names and which rank: the per-rank panel of the "
                  "diagnosis dashboard shows that rank's durations against the run's median. The "
                  "other ranks' wait shows up in the phase holding the next collective "
                  "(`update_actor`, a weight sync): those ranks look slow there but are not named, "
                  "because they are the majority. Next that rank's GPU (RLGPUThrottling on the same "
                  "host, `hw_gpu_clock_event_seconds_total`, `hw_gpu_temperature_celsius`, power), "
                  "its host (CPU steal or another job on the node, a slow local disk or network link "
                  "for data loading and checkpoint reads), and data skew (longer sequences routed to "
                  "that rank: `rl_dp_rank_tokens` max against min; sequence balancing off). A phase "
                  "that ends in a collective (the straggler computes while the others wait inside "
                  "the same phase) has the same duration on every rank and cannot name the "
                  "straggler: time the compute before the collective as its own phase.",
        mitigation="a throttling or faulty GPU: drain the node and resume from the last checkpoint "
                   "elsewhere; a busy host: move or isolate the job; data skew: turn on sequence "
                   "balancing (veRL `balance_batch`) or dynamic batch sizes. If one rank does "
                   "legitimately more work in a phase (a rank-0-only reward call or logging), time "
                   "that work as its own phase, or raise `straggler_factor`.",
        time_to_fire="the rank must be slow on every step of a window holding at least "
                     "{straggler_steps} steps, so it fires once the window holds only slow steps: 13 "
                     "steps at 30 s steps, 12 at 2 min, 10 at 10 min (the cadence matrix in "
                     "docs/alerts.md). With real ranks (3 gloo ranks on CPU, one 2.5x slower in "
                     "`gen`) it fired after 10-12 slowed steps. It needs every rank exporting: an "
                     "Exporter on each rank, one scrape target each (`log_across_ranks` publishes "
                     "the other ranks' own phase durations).",
        cases=[
            # rank 2's gen takes twice the others'; ranks 0 and 1 wait for it inside update_actor (the
            # phase that holds the gradient all-reduce), so they look slow there but are the majority
            Case(
                fire=[steps("r"),
                      *rank("r", 0, gen="20x30", update_actor="50x30"),
                      *rank("r", 1, gen="22x30", update_actor="48x30"),
                      *rank("r", 2, gen="45x30", update_actor="26x30")],
                at="10m", labels={"phase": "gen", "rank": "2", "instance": "r-2:9464"},
                desc="Run r: rank 2 (r-2:9464) took at least 2.0x the median rank's time in phase gen on every "
                     "step of the recent window (over 1.5x and 5 s more).",
                silent=[
                    # two ranks: the median cannot tell the slow one from the one that waits
                    steps("two"), *rank("two", 0, gen="20x30"), *rank("two", 1, gen="80x30"),
                    # a millisecond phase 3x slower on one rank costs nothing
                    steps("ms"), *rank("ms", 0, log="0.02x30"), *rank("ms", 1, log="0.02x30"),
                    *rank("ms", 2, log="0.06x30"),
                    # slow on every other step only: it does not stay slower
                    steps("alt"), *rank("alt", 0, gen="20x30"), *rank("alt", 1, gen="21x30"),
                    *rank("alt", 2, gen="45 20 45 20 45 20 45 20 45 20 45 20 45 20 45 20"),
                    # healthy jitter of +-20 % around the median
                    steps("jitter"), *rank("jitter", 0, gen="20 24 17 22 19 23 18 21 20 24 17 22"),
                    *rank("jitter", 1, gen="23 18 21 20 24 17 22 19 23 18 21 20"),
                    *rank("jitter", 2, gen="17 22 24 18 21 20 23 17 22 24 19 21"),
                ],
                silent_at="10m"),
            # the run declared a pause (its lifecycle state paused)
            Case(
                title="a declared pause",
                fire=[steps("r"), *rank("r", 0, gen="20x30"), *rank("r", 1, gen="22x30"),
                      *rank("r", 2, gen="45x30"), *life([("running", 31, 0)])],
                at="10m", labels={"phase": "gen", "rank": "2", "instance": "r-2:9464"},
                desc="Run r: rank 2 (r-2:9464) took at least 2.0x the median rank's time in phase gen on every "
                     "step of the recent window (over 1.5x and 5 s more).",
                silent=[steps("r"), *rank("r", 0, gen="20x30"), *rank("r", 1, gen="22x30"),
                        *rank("r", 2, gen="45x30"), *life([("running", 8, 0), ("paused", 23, 480)])],
                silent_at="10m"),
        ],
        # the ladder's window must hold only slow steps: 5 steps or more, as many as its tier holds
        cadence=Pathology(_slow_rank, {"30s": 14, "2m": 14, "10m": 12}, why=_RANKS),
    ),
]
