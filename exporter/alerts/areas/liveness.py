"""Liveness: the run stopped, or its exporter is gone (pages), or it restarts without getting
anywhere (a crash loop, a ticket)."""
from __future__ import annotations

from ..config import TIERS, Dur
from ..exprs import FINISHED, STEP
from ..model import Alert, Case, Threshold
from ..series import s
from ..sim.pathology import Pathology, assign, from_entry
from ..sim.run import CRASH_EVERY, ONSET


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
    Alert(
        name="RLRunStalled", severity="critical", for_=Dur(300),
        expr="run:rl_training_step_timestamp_seconds:age > on (run) (\n"
             "  clamp_min({stall_step_factor} * {time_scale}max by (run) "
             "(max_over_time(rl_step_duration_seconds{{stat=\"\", split=\"\"}}[{w4}])), "
             "{stall_floor_seconds})\n"
             "  or on (run) (0 * run:rl_training_step_timestamp_seconds:age + {stall_floor_seconds})\n)\n"
             # a finished run (last step == the configured total) whose exporter still serves
             "unless on (run)\n" + FINISHED,
        summary="An RL run stopped advancing its training step while its exporter is up.",
        description="Run {{ $labels.run }} has not advanced its training step for {{ $value | "
                    "humanizeDuration }} (longer than max(floor, k x its longest recent step)).",
        why_critical="Certain: the step counter is the run's own, read from a live exporter, and the "
                     "run has not reached its configured total steps (a finished run whose exporter "
                     "keeps serving does not page). Persistent: no step for "
                     "max({stall_floor_seconds}, {stall_step_factor}x the longest step of "
                     "{step_window_4}), so no checkpoint or validation pause qualifies. Fatal: GPUs "
                     "are held and nothing trains.",
        meaning="`rl_training_step` has not advanced for longer than max({stall_floor_seconds}, "
                "{stall_step_factor} x the longest step of the last {step_window_4}) while "
                "Prometheus still scrapes the exporter, and the run has not reached its configured "
                "total (`rl_config_value{parameter=\"total_training_steps\"}`): a finished run whose "
                "exporter keeps serving does not page. Held {for}.",
        impact="GPUs are held and nothing trains. Paging.",
        diagnosis="first whether it finished or paused on purpose: the last log lines and a final "
                  "checkpoint say so (a run whose integration exports its total steps, "
                  "`rl_config_value{parameter=\"total_training_steps\"}`, does not page when it "
                  "finishes); if it did, silence the alert and stop the sidecar or the exporter. "
                  "Otherwise the trainer's log tail and process state (hung NCCL collective, "
                  "deadlocked dataloader, rollout engine waiting on a dead worker); next "
                  "`rl_phase_duration_seconds` of the last step (which phase was running) and the "
                  "GPU utilisation of every rank (one rank at 0 % = the straggler others wait for).",
        mitigation="dump stacks (`py-spy dump`), kill and resume from the last checkpoint; set NCCL "
                   "timeouts so a hang becomes a crash. So that a finished run does not page next "
                   "time with a framework whose integration exports no total (veRL and TRL do): set "
                   "it once at start (`exporter.store.set(\"rl_config_value\", total, "
                   "{\"parameter\": \"total_training_steps\"})`) or close the exporter when training "
                   "ends.",
        cases=[
            Case(
                fire=[s("rl_training_step_timestamp_seconds", "0+60x10 600x50"),
                      s("rl_step_duration_seconds", "60x60")],
                at="50m", desc="Run r has not advanced its training step for 40m 0s (longer than max(floor, k x "
                               "its longest recent step)).",
                # 10-minute steps: 40 minutes without a step is under 5 x 600 s, not a stall
                silent=[s("rl_training_step_timestamp_seconds", "0+60x10 600x40"),
                        s("rl_step_duration_seconds", "600x50")], silent_at="50m"),
            # the run reached its configured total steps and its exporter (a sidecar) keeps serving
            Case(
                title="a finished run is not stalled",
                fire=[s("rl_training_step_timestamp_seconds", "0+60x10 600x50"), s("rl_step_duration_seconds", "60x60"),
                      s("rl_training_step", "1+1x10 11x50"), s("rl_config_value", "100x60", parameter="total_training_steps")],
                at="50m", desc="Run r has not advanced its training step for 40m 0s (longer than max(floor, k x "
                               "its longest recent step)).",
                silent=[s("rl_training_step_timestamp_seconds", "0+60x10 600x50"), s("rl_step_duration_seconds", "60x60"),
                        s("rl_training_step", "1+1x10 11x50"), s("rl_config_value", "11x60", parameter="total_training_steps")],
                silent_at="50m"),
        ],
        cadence=from_entry("stall", {"30s": 93, "2m": 32, "10m": 21}, note="step-times after the last step"),
    ),
    Alert(
        name="RLExporterDown", severity="critical", for_=Dur(300),
        expr="max by (job, instance, run) (last_over_time(rl_run_info[{w4}]))\n"
             "* on (job, instance) group_left ()\n"
             "(up{{{exporter_job_selector}}} == 0)\n"
             "or\n(up{{{exporter_job_selector}}} == 0) unless on (job, instance) "
             "last_over_time(rl_run_info[{w3}])",
        summary="Prometheus cannot scrape an rl-exporter target (trainer crashed or exporter gone).",
        description="Target {{ $labels.instance }} (run {{ if $labels.run }}{{ $labels.run }}{{ else "
                    "}}unknown{{ end }}) has been down: up == {{ $value }}.",
        why_critical="Certain: Prometheus itself failed every scrape for 5 minutes of a target that "
                     "service discovery still lists (a finished pod leaves discovery, it does not go "
                     "down). Persistent: 5 minutes, many scrapes. Fatal: the trainer process that "
                     "serves /metrics is dead or hung, and every other alert is blind.",
        meaning="Prometheus failed every scrape of an rl-exporter target (`up == 0`) {for}. The "
                "`run` label is the one the target last reported.",
        impact="the run is blind, and the in-process exporter dies with the trainer, so this usually "
               "means the trainer crashed. Paging.",
        diagnosis="first whether the run ended normally (the last log lines, a final checkpoint, the "
                  "job Completed): then nothing is lost, and the target should leave service "
                  "discovery with its pod; a static target that outlives its run reads as down. "
                  "Otherwise whether the trainer process or pod still exists (OOM kill, node loss, "
                  "exit code); next the network path (port, NetworkPolicy, ServiceMonitor selector) "
                  "if the trainer is alive.",
        mitigation="a finished run: remove its target (or let the job's pod go); a crash: restart "
                   "from the last checkpoint; a live trainer: fix the scrape path.",
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
        ],
        cadence=from_entry("crash", {"30s": 15, "2m": 6, "10m": 4},
                           note="step-times after the target went down"),
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
                "(`rl_exporter_frames_received_total`: a new process). Held {for}. One restart that "
                "resumes and moves on never fires. A restart that comes back as a new scrape target "
                "(a new pod with a new `instance`) starts new series, and is not counted.",
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
