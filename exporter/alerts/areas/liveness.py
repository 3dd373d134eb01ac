"""Liveness: the run stopped, or its exporter is gone (pages), or it restarts without getting
anywhere (a crash loop, a ticket)."""
from __future__ import annotations

from ..config import TIERS, Dur
from ..exprs import R, FINISHED, STEP
from ..model import Alert



def _restart_loop() -> str:
    """Runs that restarted at least restart_loop_count times within a step window (any tier of
    the ladder) while the highest step of that window is not restart_min_progress_steps past
    the highest of the step_window_4 before it: each process redoes the steps the last one did.
    A restart is the step going back (the trainer resumed from an older checkpoint: the hook's
    new process, or the sidecar reading the new process's log) or the exporter's own counters
    resetting (a new hook process that resumed exactly where the last one logged), whichever
    counts more."""
    parts = []
    for i in TIERS:
        w = f"{{w{i}}}"
        restarts = ("max by (run) (\n"
                    f"    label_replace(resets({STEP}[{w}]), \"restart\", \"step\", \"\", \"\")\n"
                    f"    or label_replace(resets(rl_exporter_frames_received_total[{w}]), "
                    "\"restart\", \"process\", \"\", \"\"))")
        progress = (f"max by (run) (max_over_time({STEP}[{w}]))\n"
                    f"    - on (run) max by (run) (max_over_time({STEP}[{{w4}}] offset {w}))")
        parts.append(f"  ({restarts} >= {{restart_loop_count}})\n"
                     f"  and on (run) ({progress} < {{restart_min_progress_steps}})")
    return "max by (run) (\n" + "\nor\n".join(parts) + "\n)"


ALERTS: list[Alert] = [
    Alert("RLRunStalled", "critical",
          "run:rl_training_step_timestamp_seconds:age > on (run) (\n"
          "  clamp_min({stall_step_factor} * {time_scale}max by (run) "
          "(max_over_time(rl_step_duration_seconds{{stat=\"\", split=\"\"}}[{w4}])), "
          "{stall_floor_seconds})\n"
          "  or on (run) (0 * run:rl_training_step_timestamp_seconds:age + {stall_floor_seconds})\n)\n"
          # a finished run (last step == the configured total) whose exporter still serves
          "unless on (run)\n" + FINISHED,
          Dur(300), "An RL run stopped advancing its training step while its exporter is up.",
          f"Run {R} has not advanced its training step for {{{{ $value | humanizeDuration }}}} "
          "(longer than max(floor, k x its longest recent step)).",
          why_critical="Certain: the step counter is the run's own, read from a live exporter, and "
                       "the run has not reached its configured total steps (a finished run whose "
                       "exporter keeps serving does not page). Persistent: no step for max(30 min, "
                       "5x the longest step of 5 h 20 min), so no checkpoint or validation pause "
                       "qualifies. Fatal: GPUs are held and nothing trains."),
    Alert("RLExporterDown", "critical",
          "max by (job, instance, run) (last_over_time(rl_run_info[{w4}]))\n"
          "* on (job, instance) group_left ()\n"
          "(up{{{exporter_job_selector}}} == 0)\n"
          "or\n(up{{{exporter_job_selector}}} == 0) unless on (job, instance) "
          "last_over_time(rl_run_info[{w3}])",
          Dur(300), "Prometheus cannot scrape an rl-exporter target (trainer crashed or exporter gone).",
          "Target {{ $labels.instance }} (run {{ if $labels.run }}{{ $labels.run }}{{ else }}unknown"
          "{{ end }}) has been down: up == {{ $value }}.",
          why_critical="Certain: Prometheus itself failed every scrape for 5 minutes of a target that "
                       "service discovery still lists (a finished pod leaves discovery, it does not go "
                       "down). Persistent: 5 minutes, many scrapes. Fatal: the trainer process that "
                       "serves /metrics is dead or hung, and every other alert is blind."),
    Alert("RLRestartWithoutProgress", "warning", _restart_loop(),
          Dur(600), "An RL run keeps restarting without getting past the step it had reached (a crash loop).",
          f"Run {R} restarted {{{{ $value }}}} times within a recent step window and its step never got "
          "past the highest it had reached before: each restart redoes the same steps.",
          ),
]
