"""Liveness: the run crashed, stopped, or its exporter is gone (pages), or it restarts without
getting anywhere (a crash loop, a ticket). Every page here first asks how the run's life went
(rl_run_state, exporter/alerts/exprs.py run_state): a run whose last known state is finished
never pages, a declared pause is no stall, and a restart elsewhere supersedes the old target."""
from __future__ import annotations

from ..config import TIERS, Dur
from ..exprs import RUN_FINISHED, RUN_STEP, LIFE_W, RUN_PAUSED, STEP, superseded, target_state
from ..model import Alert, Case, Threshold
from ..series import crash_info, life, s
from ..sim.pathology import Pathology, assign, from_entry
from ..sim.run import CRASH_EVERY, ONSET


def _restart_loop() -> str:
    """Runs that restarted at least restart_loop_count times within a step window (any tier of
    the ladder) while the highest step of that window is not restart_min_progress_steps past
    the highest of the step_window_4 before it: each process redoes the steps the last one did.
    A restart is the step going back (the trainer resumed from an older checkpoint: the hook's
    new process, or the sidecar reading the new process's log) or the exporter's own counters
    resetting (a new hook process that resumed exactly where the last one logged), whichever
    counts more. The step is read per series and per run (run:rl_training_step:max, the highest
    over the run's targets): a process that comes back as a new scrape target (a new pod, another
    node) starts new series with no reset in them, while the run's highest step goes back."""
    parts = []
    for i in TIERS:
        w = f"{{w{i}}}"
        restarts = ("max by (run) (\n"
                    f"    label_replace(resets({STEP}[{w}]), \"restart\", \"step\", \"\", \"\")\n"
                    f"    or label_replace(resets(rl_exporter_frames_received_total[{w}]), "
                    "\"restart\", \"process\", \"\", \"\")\n"
                    # the run's highest step over all its targets: a restart on a new node or pod
                    # is a new series (no reset of its own), but the run's step still goes back
                    f"    or label_replace(resets({RUN_STEP}[{w}]), \"restart\", \"run_step\", \"\", \"\"))")
        progress = (f"max by (run) (max_over_time({STEP}[{w}]))\n"
                    f"    - on (run) max by (run) (max_over_time({STEP}[{{w4}}] offset {w}))")
        parts.append(f"  ({restarts} >= {{restart_loop_count}})\n"
                     f"  and on (run) ({progress} < {{restart_min_progress_steps}})")
    return "max by (run) (\n" + "\nor\n".join(parts) + "\n)"


# The states in which a run goes on: a later state change in one of them on another target
# supersedes an older target's crash (a restart on a new node or pod).
_ALIVE = "starting|running|paused|restarting|finished"
_CRASH_INFO = ('last_over_time(rl_run_crash_info{{exception!~"{crash_stop_signals}"}}' + LIFE_W + ")\n"
               "    and on (job, instance, run) " + target_state("crashed") + "\n"
               "    unless on (job, instance, run) " + superseded(_ALIVE).replace("\n", "\n    "))
# the value: the target's last step (-1 where it crashed before its first)
_CRASHED = ("max by (run, exception, message) (\n"
            f"  last_over_time({STEP}{LIFE_W}) * on (job, instance, run) group_right ()\n"
            f"  (\n    {_CRASH_INFO}\n  )\n"
            f"  or -1 * (\n    {_CRASH_INFO}\n  )\n)")
def _crash_at(v: dict, k: int) -> None:
    """The simulated run's trainer dies of an out-of-memory after step ONSET - 1."""
    if k >= ONSET - 1:
        v.update({'rl_run_state{state="running"}': 0, 'rl_run_state{state="crashed"}': 1,
                  "rl_run_state_change_timestamp_seconds": float(k),
                  'rl_run_crash_info{exception="torch.OutOfMemoryError", message="CUDA out of memory"}': 1})


# no step after minute 10, one-minute steps: 40 minutes of silence at 50m
_QUIET = [s("rl_training_step_timestamp_seconds", "0+60x10 600x50"), s("rl_step_duration_seconds", "60x60")]
_STALL_DESC = ("Run r has not advanced its training step for 40m 0s (since its last step or the end of a "
               "declared pause; longer than max(floor, k x its longest recent step)).")
_T = {"job": "rl-exporter", "instance": "h:9464"}
_T2 = {"job": "rl-exporter", "instance": "h2:9464"}
_OOM = ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB")


def _up(values: str, **target) -> dict:
    return {"series": 'up{job="%s", instance="%s"}' % (target["job"], target["instance"]), "values": values}


def _info(values: str, **target) -> dict:
    return s("rl_run_info", values, **target, framework="verl")


def _pods(first, minutes: int = 180) -> list[dict]:
    """A run whose first pod steps once a minute from step 1 to 70, then dies every 10 minutes
    and comes back as a new pod (its own instance) that steps from first(k) on."""
    out, t, k = [], 0, 0
    while t < minutes:
        n = 10 if k else 70
        vals = ["_"] * t + [str((first(k) if k else 1) + j) for j in range(n)]
        out.append(s(STEP, " ".join(vals), job="rl-exporter", instance=f"pod{k}:9464"))
        t, k = t + n, k + 1
    return out


ALERTS: list[Alert] = [
    Alert(
        name="RLRunCrashed", severity="critical", for_=Dur(30),
        expr=_CRASHED,
        thresholds={
            "crash_stop_signals": Threshold(
                "SIGTERM|SIGINT|SIGHUP|KeyboardInterrupt|SystemExit",
                "Endings that are a stop from outside, not a fault of the run: a scheduler's or a "
                "person's SIGTERM/SIGINT/SIGHUP (scancel, a pod deleted, a preemption, torchrun "
                "stopping the other ranks of a failed one), Ctrl-C, sys.exit. A run stopped that way "
                "and not brought back is RLExporterDown's, five minutes later."),
        },
        summary="An RL run crashed: its trainer died of an exception or a fatal signal.",
        description="Run {{ $labels.run }} crashed {{ if lt $value 0.0 }}before its first step"
                    "{{ else }}after step {{ $value }}{{ end }}: {{ $labels.exception }}"
                    "{{ if $labels.message }}: {{ $labels.message }}{{ end }}.",
        why_critical="Certain: the trainer itself says so: the hook's exception hooks saw the uncaught "
                     "exception (or the fatal signal), or the sidecar read the traceback, out-of-memory "
                     "or NCCL error at the end of the log; nothing statistical. What else could set "
                     "it: a stop from outside ({crash_stop_signals}) does not page; a crash the run "
                     "came back from (a later state on a new node or pod) does not page; another rank's "
                     "SIGTERM after the crash does not hide it. Persistent: a dead trainer does not "
                     "recover by itself; the state holds until a new process starts. Fatal: nothing "
                     "trains until someone (or a restart policy) resumes it. It pages at once (a "
                     "30 s `for`, one or two evaluations) and explains the RLRunStalled and RLExporterDown pages that would follow.",
        meaning="the run's trainer died of an uncaught exception or a fatal signal (`rl_run_state` "
                "crashed, its exception and message in `rl_run_crash_info`): the hook saw it, or "
                "the sidecar read a traceback, CUDA out of memory, an NCCL error or `Killed` at the "
                "end of the log. A stop from outside ({crash_stop_signals}) does not page, nor a crash "
                "the run came back from (a later state on another target of the run). The last known "
                "state is remembered {lifecycle_window} after the target's last scrape. Held {for}: "
                "it pages at once. It mutes RLRunStalled and RLExporterDown for the run (Alertmanager).",
        impact="the run is dead: GPUs may still be held by the job, and nothing trains until it is "
               "resumed. Paging.",
        diagnosis="first the exception and the frames above it in the log (the call that failed; for "
                  "CUDA out of memory, the phase and the allocation it names; for an NCCL error, the "
                  "rank that timed out first); next the last steps' memory and phase series (RL run "
                  "overview: GPU memory, phase durations) and whether the same step crashes every "
                  "time (a sample or a checkpoint), then `rl-exporter doctor` on the log for the "
                  "whole story.",
        mitigation="fix the cause (a smaller micro-batch or response length for out-of-memory, NCCL "
                   "timeouts and the failing node for NCCL errors), then resume from the last "
                   "checkpoint. A restart policy that resumes it by itself resolves this alert; a "
                   "loop of crashes is RLRestartWithoutProgress.",
        cases=[
            # the trainer dies of a CUDA out-of-memory after step 10, and its target goes with it
            Case(
                fire=[*life([("running", 10, 0), ("crashed", 1, 600), (None, 20, 0)], **_T),
                      crash_info(*_OOM, "_x10 1 _x20", **_T), s(STEP, "1+1x9 10 _x20", **_T)],
                at="15m", labels={"exception": _OOM[0], "message": _OOM[1]},
                desc="Run r crashed after step 10: torch.OutOfMemoryError: CUDA out of memory. "
                     "Tried to allocate 2.00 GiB.",
                # a scheduler stopped it (scancel, a preemption): RLExporterDown's, not a crash
                silent=[*life([("running", 10, 0), ("crashed", 1, 600), (None, 20, 0)], **_T),
                        crash_info("SIGTERM", "", "_x10 1 _x20", **_T), s(STEP, "1+1x9 10 _x20", **_T)],
                silent_at="15m"),
            # rank 1 dies of the NCCL watchdog; torchrun then stops rank 0 with SIGTERM a minute
            # later: the later SIGTERM neither pages nor hides the crash
            Case(
                title="one rank crashes, torchrun stops the others",
                fire=[*life([("running", 10, 0), ("crashed", 21, 600)], **_T2),
                      crash_info("torch.distributed.DistBackendError", "NCCL watchdog timeout",
                                 "_x10 1x20", **_T2),
                      *life([("running", 11, 0), ("crashed", 20, 660)], **_T),
                      crash_info("SIGTERM", "", "_x11 1x19", **_T),
                      s(STEP, "1+1x9 10x20", **_T), s(STEP, "1+1x9 10x20", **_T2)],
                at="15m", labels={"exception": "torch.distributed.DistBackendError",
                                  "message": "NCCL watchdog timeout"},
                desc="Run r crashed after step 10: torch.distributed.DistBackendError: NCCL watchdog timeout.",
                # the run came back on another node (a new pod, a requeued job) and runs
                silent=[*life([("running", 10, 0), ("crashed", 1, 600), (None, 20, 0)], **_T),
                        crash_info(*_OOM, "_x10 1 _x20", **_T), s(STEP, "1+1x9 10 _x20", **_T),
                        *life([(None, 12, 0), ("restarting", 19, 720)], **_T2),
                        s(STEP, "_x12 8+1x18", **_T2)],
                silent_at="15m"),
        ],
        cadence=Pathology(
            None, {"30s": 3, "2m": 3, "10m": 3}, stop=True,
            before=lambda v, k, rng: _crash_at(v, k), note="step-times after the last step",
            why="the demo's crash scenario ends its process without the crashed state (its target goes "
                "down: RLExporterDown's row); here the exporter stays up and reports the crash, as the "
                "sidecar does for a log that ends in a traceback"),
    ),
    Alert(
        name="RLRunStalled", severity="critical", for_=Dur(300),
        expr="run:rl_training_step_timestamp_seconds:age > on (run) (\n"
             "  clamp_min({stall_step_factor} * {time_scale}max by (run) "
             "(max_over_time(rl_step_duration_seconds{{stat=\"\", split=\"\"}}[{w4}])), "
             "{stall_floor_seconds})\n"
             "  or on (run) (0 * run:rl_training_step_timestamp_seconds:age + {stall_floor_seconds})\n)\n"
             # a finished run (its last state, or its last step == the configured total) whose
             # exporter still serves, and a declared pause, are no stall
             "unless on (run)\n" + RUN_FINISHED + "\nunless on (run)\n" + RUN_PAUSED,
        summary="An RL run stopped advancing its training step while its exporter is up.",
        description="Run {{ $labels.run }} has not advanced its training step for {{ $value | "
                    "humanizeDuration }} (since its last step or the end of a declared pause; longer "
                    "than max(floor, k x its longest recent step)).",
        why_critical="Certain: the step counter is the run's own, read from a live exporter. What else "
                     "could hold it still: a finished run (its last state finished, or its last step at "
                     "the configured total) does not page; a declared pause (state paused, or a "
                     "{pause_phases} phase open) does not page, and the stall clock starts again when "
                     "it ends; a crash the exporter reports is RLRunCrashed's page, which mutes this "
                     "one; a scrape gap leaves the step's timestamp as it was (a target down is "
                     "RLExporterDown's). Persistent: no step for max({stall_floor_seconds}, "
                     "{stall_step_factor}x the longest step of {step_window_4}), so no checkpoint or "
                     "validation pause qualifies. Fatal: GPUs are held and nothing trains.",
        meaning="`rl_training_step` has not advanced for longer than max({stall_floor_seconds}, "
                "{stall_step_factor} x the longest step of the last {step_window_4}) (counted from the "
                "last step, or from the end of a declared pause) while Prometheus still scrapes the "
                "exporter. A run whose last known state is finished (`rl_run_state`, remembered "
                "{lifecycle_window}), or whose last step reached its configured total "
                "(`rl_config_value{parameter=\"total_training_steps\"}`), does not page; nor does a run "
                "in a declared pause (state paused, or a {pause_phases} phase open). Held {for}.",
        impact="GPUs are held and nothing trains. Paging.",
        diagnosis="first whether it crashed (RLRunCrashed would say so) or ended without saying so: "
                  "the last log lines and a final checkpoint. An exporter older than the run lifecycle, "
                  "or a framework whose integration reports neither the end nor the total, can page "
                  "on a finished run: silence it and stop the sidecar or the exporter. Otherwise the "
                  "trainer's log tail and process state (hung NCCL collective, deadlocked "
                  "dataloader, rollout engine waiting on a dead worker); next "
                  "`rl_phase_duration_seconds` of the last step (which phase was running) and the "
                  "GPU utilisation of every rank (one rank at 0 % = the straggler others wait for).",
        mitigation="dump stacks (`py-spy dump`), kill and resume from the last checkpoint; set NCCL "
                   "timeouts so a hang becomes a crash. So that a finished run never pages with a "
                   "framework whose end the exporter cannot see: close the exporter when training "
                   "ends (`exporter.close()`, or leave the `with` block), or set the total once at "
                   "start (`exporter.store.set(\"rl_config_value\", total, "
                   "{\"parameter\": \"total_training_steps\"})`). A pause longer than the stall "
                   "window: run it inside `exporter.timer(\"pause\")` (or another of "
                   "{pause_phases}).",
        cases=[
            Case(
                fire=[s("rl_training_step_timestamp_seconds", "0+60x10 600x50"),
                      s("rl_step_duration_seconds", "60x60")],
                at="50m", desc=_STALL_DESC,
                # 10-minute steps: 40 minutes without a step is under 5 x 600 s, not a stall
                silent=[s("rl_training_step_timestamp_seconds", "0+60x10 600x40"),
                        s("rl_step_duration_seconds", "600x50")], silent_at="50m"),
            # the run reached its configured total steps and its exporter (a sidecar) keeps serving
            Case(
                title="a finished run is not stalled",
                fire=[*_QUIET,
                      s("rl_training_step", "1+1x10 11x50"), s("rl_config_value", "100x60", parameter="total_training_steps")],
                at="50m", desc=_STALL_DESC,
                silent=[*_QUIET,
                        s("rl_training_step", "1+1x10 11x50"), s("rl_config_value", "11x60", parameter="total_training_steps")],
                silent_at="50m"),
            # no total known: the run's own last state says it finished (the hook's close(), the
            # framework's closing line read by the sidecar)
            Case(
                title="a run whose last state is finished",
                fire=[*_QUIET,
                      *life([("running", 61, 0)])],
                at="50m", desc=_STALL_DESC,
                silent=[*_QUIET,
                        *life([("running", 10, 0), ("finished", 51, 600)])],
                silent_at="50m"),
            # a declared pause from minute 10: silent while it lasts; one that ended at minute 15
            # starts the stall clock there (40 min later at 55m)
            Case(
                title="a declared pause",
                fire=[*_QUIET,
                      *life([("running", 10, 0), ("paused", 5, 600), ("running", 46, 900)])],
                at="55m", desc=_STALL_DESC,
                silent=[*_QUIET,
                        *life([("running", 10, 0), ("paused", 51, 600)])],
                silent_at="55m"),
            # an exporter without the lifecycle: the pause phase still open (the heat guard)
            Case(
                title="a pause phase open",
                fire=[*_QUIET,
                      s("rl_phase_in_progress_start_timestamp_seconds", "_x10 600x50", phase="update_actor")],
                at="50m", desc=_STALL_DESC,
                silent=[*_QUIET,
                        s("rl_phase_in_progress_start_timestamp_seconds", "_x10 600x50", phase="heat_guard")],
                silent_at="50m"),
        ],
        cadence=from_entry("stall", {"30s": 93, "2m": 32, "10m": 21}, note="step-times after the last step"),
    ),
    Alert(
        name="RLExporterDown", severity="critical", for_=Dur(300),
        expr="max by (job, instance, run) (last_over_time(rl_run_info" + LIFE_W + "))\n"
             "* on (job, instance) group_left ()\n"
             "(up{{{exporter_job_selector}}} == 0)\n"
             # a finished run's static or file-based target stays listed, and down
             "unless on (run)\n" + RUN_FINISHED + "\n"
             # the run went on elsewhere: a restart on another node or pod
             "unless on (job, instance, run)\n" + superseded(),
        summary="Prometheus cannot scrape an rl-exporter target of a run that has not finished "
                "(trainer crashed or exporter gone).",
        description="Target {{ $labels.instance }} (run {{ $labels.run }}) has been down: up == "
                    "{{ $value }}.",
        why_critical="Certain: Prometheus itself failed every scrape for 5 minutes of a target that "
                     "served the run. What else could take a target down: a finished run (its last "
                     "state finished, or its last step at the configured total) does not page, on any "
                     "service discovery (a static or file-based target stays listed and goes down; a "
                     "finished pod leaves Kubernetes discovery); a restart on another node or pod "
                     "supersedes the old target (a later state change elsewhere in the run) and does "
                     "not page; a crash the exporter reported is RLRunCrashed's page, which mutes this "
                     "one; a target that never served a run (a trainer still loading, a stale or "
                     "wrong entry) is RLExporterTargetDown's ticket; a scrape gap shorter than 5 "
                     "minutes does not page, and a longer one leaves every other alert blind, which "
                     "is worth the page. Persistent: 5 minutes, many scrapes. Fatal: the trainer "
                     "process that serves /metrics is dead or hung.",
        meaning="Prometheus failed every scrape of an rl-exporter target (`up == 0`) {for}, a target "
                "that reported a run within {lifecycle_window} (`rl_run_info`; the `run` label is the "
                "one it last reported). A run whose last known state is finished (`rl_run_state`), or "
                "whose last step reached its configured total, does not page; nor a target whose run "
                "went on elsewhere (a later state change on another target of the run: a restart on "
                "a new node or pod).",
        impact="the run is blind, and the in-process exporter dies with the trainer, so this usually "
               "means the trainer crashed or was stopped. Paging.",
        diagnosis="first how the run ended: the last log lines, the job's state (Failed, Completed, "
                  "preempted), the process or pod exit code (137: killed, OOM). A run that ended "
                  "normally under an exporter older than the run lifecycle reads as down: remove "
                  "its target. Otherwise whether the trainer process or pod still exists (OOM kill, "
                  "node loss); next the network path (port, NetworkPolicy, ServiceMonitor selector) "
                  "if the trainer is alive.",
        mitigation="a crash or a stop: resume from the last checkpoint; a live trainer: fix the scrape "
                   "path; a static target of a finished run: remove it (or write file-based targets "
                   "per job and delete them with the job).",
        cases=[
            Case(
                fire=[{"series": 'up{job="rl-exporter", instance="h:9464"}', "values": "1x10 0x20"},
                      {"series": 'rl_run_info{job="rl-exporter", instance="h:9464", run="r", framework="verl"}',
                       "values": "1x10 _x20"}],
                at="25m", labels={"job": "rl-exporter", "instance": "h:9464"},
                desc="Target h:9464 (run r) has been down: up == 0.",
                silent=[{"series": 'up{job="rl-exporter", instance="h:9464"}', "values": "1x30"},
                        {"series": 'rl_run_info{job="rl-exporter", instance="h:9464", run="r"}', "values": "1x30"}],
                silent_at="25m"),
            # the seed review's case: step 11 of 11 on a static target that then goes down
            Case(
                title="a run that reached its total",
                fire=[_up("1x10 0x20", **_T), _info("1x10 _x20", **_T), s(STEP, "1+1x10 _x20", **_T),
                      s("rl_config_value", "100x10 _x20", **_T, parameter="total_training_steps")],
                at="25m", labels=_T, desc="Target h:9464 (run r) has been down: up == 0.",
                silent=[_up("1x10 0x20", **_T), _info("1x10 _x20", **_T), s(STEP, "1+1x10 _x20", **_T),
                        s("rl_config_value", "11x10 _x20", **_T, parameter="total_training_steps")],
                silent_at="25m"),
            # no total known; the hook's close() (or the sidecar's closing line) said finished
            Case(
                title="a run whose last state is finished",
                fire=[_up("1x10 0x20", **_T), _info("1x10 _x20", **_T),
                      *life([("running", 11, 0), (None, 20, 0)], **_T)],
                at="25m", labels=_T, desc="Target h:9464 (run r) has been down: up == 0.",
                silent=[_up("1x10 0x20", **_T), _info("1x10 _x20", **_T),
                        *life([("running", 10, 0), ("finished", 1, 600), (None, 20, 0)], **_T)],
                silent_at="25m"),
            # the old target went down at 11m and the run came back on another node at 12m (a new
            # pod, a requeued job: a new target); another rank that keeps running is no such thing
            Case(
                title="a restart on another node",
                fire=[_up("1x10 0x20", **_T), _info("1x10 _x20", **_T),
                      s("rl_training_step_timestamp_seconds", "0+60x10 _x20", **_T),
                      *life([("running", 11, 0), (None, 20, 0)], **_T),
                      _up("1x30", **_T2), _info("1x30", **_T2), *life([("running", 31, 5)], **_T2)],
                at="25m", labels=_T, desc="Target h:9464 (run r) has been down: up == 0.",
                silent=[_up("1x10 0x20", **_T), _info("1x10 _x20", **_T),
                        s("rl_training_step_timestamp_seconds", "0+60x10 _x20", **_T),
                        *life([("running", 11, 0), (None, 20, 0)], **_T),
                        _up("_x12 1x18", **_T2), _info("_x12 1x18", **_T2),
                        *life([(None, 12, 0), ("restarting", 19, 720)], **_T2)],
                silent_at="25m"),
            # four failed scrapes (a network blip) are not 5 minutes
            Case(
                title="a scrape gap",
                fire=[_up("1x10 0x20", **_T), _info("1x10 _x20", **_T)],
                at="25m", labels=_T, desc="Target h:9464 (run r) has been down: up == 0.",
                silent=[_up("1x10 0x3 1x16", **_T), _info("1x10 _x3 1x16", **_T)], silent_at="15m"),
        ],
        cadence=from_entry("crash", {"30s": 15, "2m": 6, "10m": 4},
                           note="step-times after the target went down"),
    ),
    # A target down that reported no run: not certain to be a dead run (a trainer still loading
    # its model before its exporter serves, a job waiting in the queue, a stale or wrong static
    # entry, a finished run's static target past lifecycle_window), so a ticket.
    Alert(
        name="RLExporterTargetDown", severity="warning", for_=Dur(900),
        expr="(up{{{exporter_job_selector}}} == 0)\n"
             "unless on (job, instance) last_over_time(rl_run_info" + LIFE_W + ")",
        summary="An rl-exporter target that has reported no run is down.",
        description="Target {{ $labels.instance }} (run {{ if $labels.run }}{{ $labels.run }}{{ else "
                    "}}unknown{{ end }}) has been down: up == {{ $value }}, and it has reported no "
                    "run in the last {lifecycle_window}.",
        meaning="Prometheus failed every scrape of an rl-exporter target (`up == 0`) {for}, and the "
                "target reported no run (`rl_run_info`) within {lifecycle_window}: a trainer that "
                "died before its exporter served, one still loading its model, a job still queued, "
                "a wrong target, or the static target of a run that ended more than "
                "{lifecycle_window} ago. A target that served a run is RLExporterDown's.",
        impact="nothing about that target's run is seen; it may never have started. A ticket: no "
               "run is known to be lost.",
        diagnosis="first whether a job should be running there (the scheduler's queue, the pod's "
                  "state and exit code); next whether the trainer starts its exporter (the hook's "
                  "`listen`, `RLX_PORT`) and on which port, against the target's address.",
        mitigation="remove targets of runs that ended (or write file-based targets per job and "
                   "delete them with the job); fix the port or the start-up of a run that never "
                   "served.",
        cases=[
            Case(
                fire=[_up("0x40", **_T)], at="30m", labels={**_T, "run": None},
                desc="Target h:9464 (run unknown) has been down: up == 0, and it has reported no run in "
                     "the last 12h.",
                # it served a run: RLExporterDown's
                silent=[_up("1x10 0x30", **_T), _info("1x10 _x30", **_T)], silent_at="30m"),
        ],
        cadence=Pathology(None, {"30s": 34, "2m": 10, "10m": 4}, down=True, anonymous=True,
                          note="step-times after the target went down",
                          why="an exporter that serves no run is no demo scenario: the simulated "
                              "run's target reports no rl_run_info"),
    ),
    Alert(
        name="RLRestartWithoutProgress", severity="warning", for_=Dur(600),
        expr=_restart_loop(),
        thresholds={
            "restart_loop_count": Threshold(
                3,
                "A crash loop: this many restarts (the run's step went back, or its exporter's "
                "counters reset) within a step window. NVIDIA's Resiliency Extension: Megatron "
                "Bridge's FaultTolerancePlugin allows 3 in-job restarts by default; past that budget "
                "an ordinary restart policy gives up, and a looping one does not."),
            "restart_min_progress_steps": Threshold(
                1,
                "... while the highest step of the window got past the highest before it by fewer "
                "than this many steps (the fault-tolerance launcher's --ft-min-progress-iterations "
                "defaults to 1)."),
        },
        summary="An RL run keeps restarting without getting past the step it had reached (a crash "
                "loop).",
        description="Run {{ $labels.run }} restarted {{ $value }} times within a recent step window "
                    "and its step never got past the highest it had reached before: each restart "
                    "redoes the same steps.",
        meaning="the run restarted {restart_loop_count} or more times within one of the step windows "
                "({step_window_1} to {step_window_4}) while its highest `rl_training_step` there got "
                "fewer than {restart_min_progress_steps} steps past the highest of the "
                "{step_window_4} before it. A restart is the step going back (a resume from an older "
                "checkpoint) or the exporter's counters resetting "
                "(`rl_exporter_frames_received_total`: a new process). Restarts are counted per run, "
                "across its targets: one that comes back as a new scrape target (a new pod, another "
                "node: a new `instance`) is the run's highest step going back. Held {for}. One "
                "restart that resumes and moves on never fires.",
        impact="a crash loop: every process redoes the steps the last one did and dies before it "
               "gets further, so the GPUs are held and the run makes no progress (the goodput "
               "`restart` bucket takes the time: the overview's \"Where the time went\" row). It "
               "does not stall (steps keep changing) and the exporter is up most of the time, so "
               "neither RLRunStalled nor RLExporterDown sees it. A ticket: a launcher with a restart "
               "budget (NVIDIA's fault-tolerance launcher `--max-restarts`, its progress tracker for "
               "restarts that never advance the checkpoint) stops the loop by itself, and "
               "RLExporterDown pages then.",
        diagnosis="first the exit reason of the restarted processes (OOM kill, NCCL timeout, a node "
                  "that fails every time: `kubectl describe pod`, the launcher's log); next the step "
                  "each process dies at: the same step every time points at the data or a checkpoint "
                  "that cannot be loaded (a corrupted shard, a sample that overflows memory), "
                  "different steps at hardware (one bad GPU or node: `hw_gpu_*` of the rank that "
                  "dies first).",
        mitigation="stop the loop first (it only burns GPU hours): cancel the job (`kubectl delete` "
                   "the Job or PyTorchJob, `ray job stop`) or set its restart budget to 0 "
                   "(`backoffLimit: 0`, torchrun `--max-restarts 0`, the fault-tolerance launcher's "
                   "`--max-restarts`); then exclude the bad node, skip the poisoned batch, or resume "
                   "from an earlier checkpoint; then restart once.",
        cases=[
            # a crash loop from minute 60: every process resumes from the checkpoint at step 60, gets to
            # step 64 and dies. At 100m the 20-minute window holds 5 step decreases (84, 88, ..., 100m)
            # and its highest step (64) is no higher than the one before it.
            Case(
                fire=[s("rl_training_step", "1+1x59 " + " ".join(["61 62 63 64"] * 12))], at="100m",
                desc="Run r restarted 5 times within a recent step window and its step never got past the "
                     "highest it had reached before: each restart redoes the same steps.",
                # a flaky node: a restart every 15 minutes, each resuming 5 steps back and moving on (the
                # exporter's counters reset too); 7 restarts, and every window's step is past the last
                silent=[s("rl_training_step", " ".join(str(m + 1 - 5 * (m // 15)) for m in range(121))),
                        s("rl_exporter_frames_received_total", " ".join(str(10 * (m % 15)) for m in range(121)))],
                silent_at="120m"),
            # every 10 minutes from minute 70 the run dies and comes back as a new pod (a new
            # instance: new series, no reset in any of them), resuming from the checkpoint at
            # step 60 and dying at step 70 again; the flaky node's run resumes 5 steps back each
            # time and moves on
            Case(
                title="restarts on new pods",
                fire=_pods(lambda k: 61), at="170m",
                desc="Run r restarted 8 times within a recent step window and its step never got past the "
                     "highest it had reached before: each restart redoes the same steps.",
                silent=_pods(lambda k: 61 + 5 * k), silent_at="170m"),
        ],
        # the demo's crash-loop: from the onset every process resumes at the checkpoint before it.
        # A step window must hold 3 restarts and no new highest step for the whole `for:`; a window
        # holding about 3 (5 min at 30 s steps, 20 min at 2 min) flips between 2 and 3, so the next,
        # 4x longer one decides: its length past the first loop, then 10 min.
        cadence=Pathology(
            assign(rl_training_step=lambda v, i, r: ONSET + i % CRASH_EVERY), {"30s": 80, "2m": 64, "10m": 48},
            loop=True, note="step-times since the loop began (a crash every 4 steps; the window that "
                            "holds 3 restarts for good, then for 10 min)",
            why="the demo's crash-loop restarts whole processes (a new exporter each time); this run "
                "loops the logged step of one series, as a scrape of those processes shows it"),
    ),
]
