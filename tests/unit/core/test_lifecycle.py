"""The run's lifecycle (exporter/core/lifecycle.py) through the real pipeline: rl_run_state,
its timestamp and rl_run_crash_info on /metrics, the transitions the steps, pauses, segments
and ends make, the spool's event records, and the paused goodput bucket."""
import json

import pytest

from exporter.core import lifecycle as lc
from exporter.core.goodput import PAUSED, bucket_of
from exporter.core.pipeline import Pipeline
from exporter.core.run import ServedRun
from exporter.core.thresholds import PAUSE_PHASES, is_pause
from exporter.spool import SpoolWriter, decode_event
from exporter.testing import scrape


def state(run) -> str:
    s = scrape(run) if hasattr(run, "registry") else _scrape_pipeline(run)
    on = [k[1][0][1] for k, v in s.items() if k[0] == "rl_run_state" and v == 1.0]
    assert len(on) == 1, on  # exactly one state is 1
    return on[0]


def _scrape_pipeline(run):
    from prometheus_client import CollectorRegistry
    from exporter.core.collector import StoreCollector
    reg = CollectorRegistry(auto_describe=False)
    reg.register(StoreCollector(run.store, extra=run.pipeline.self_metrics))
    out = {}
    for fam in reg.collect():
        for smp in fam.samples:
            labels = tuple(sorted((k, v) for k, v in smp.labels.items() if k != "run"))
            out[(smp.name, labels)] = smp.value
    return out


def served(**kw) -> ServedRun:
    return ServedRun(Pipeline("lc", framework="verl", **kw))


def crash_info(run):
    return {k[1]: v for k, v in _scrape_pipeline(run).items() if k[0] == "rl_run_crash_info"}


def test_pause_phases_are_the_alert_rules():
    from exporter.alerts.rules import CONFIG
    assert PAUSE_PHASES == CONFIG["pause_phases"]
    assert is_pause("heat_guard") and is_pause("pause") and not is_pause("pause_gen")
    assert bucket_of("heat_guard") == PAUSED and bucket_of("thermal_pause") == PAUSED
    assert bucket_of("save_checkpoint") == "checkpoint"  # the other rows as they were


def test_every_state_series_exists_from_the_start_and_one_is_set():
    run = served()
    s = _scrape_pipeline(run)
    states = {k[1][0][1]: v for k, v in s.items() if k[0] == "rl_run_state"}
    assert set(states) == set(lc.STATES) and states["starting"] == 1.0
    assert sum(states.values()) == 1.0
    assert s[("rl_run_state_change_timestamp_seconds", ())] == run.lifecycle.since


def test_steps_run_then_the_total_finishes_and_a_restart_reopens():
    run = served()
    run.store.set("rl_config_value", 3.0, {"parameter": "total_training_steps"})
    run.pipeline.process_now({"actor/entropy": 0.5}, 1, 100.0)
    assert state(run) == "running"
    assert _scrape_pipeline(run)[("rl_run_state_change_timestamp_seconds", ())] == 100.0
    run.pipeline.process_now({"actor/entropy": 0.5}, 2, 110.0)
    run.pipeline.process_now({"actor/entropy": 0.5}, 3, 120.0)
    assert state(run) == "finished" and run.lifecycle.end_step == 3
    run.pipeline.process_now({"actor/entropy": 0.5}, 4, 130.0)  # past the total: still done
    assert state(run) == "finished"
    # the log went on with a new run from step 1 (the counter went back): alive again
    run.pipeline.process_now({"actor/entropy": 0.5}, 1, 140.0)
    assert state(run) == "restarting"


def test_a_counted_step_never_reaches_the_total():
    """A format without steps: the worker counts frames; a count is not the trainer's step."""
    run = served()
    run.store.set("rl_config_value", 2.0, {"parameter": "total_training_steps"})
    for i in range(5):
        run.pipeline.process_now({"actor/entropy": 0.5}, None, 100.0 + i)
    assert state(run) == "running"


def test_a_restart_redoes_steps_until_it_passes_the_highest():
    run = served()
    for i in range(1, 11):
        run.pipeline.process_now({"actor/entropy": 0.5}, i, 100.0 + i)
    run.pipeline.process_now({"actor/entropy": 0.5}, 6, 200.0)  # resumed from step 5's checkpoint
    assert state(run) == "restarting"
    for i in range(7, 11):
        run.pipeline.process_now({"actor/entropy": 0.5}, i, 200.0 + i)
    assert state(run) == "restarting"  # step 10 is redone, not new
    run.pipeline.process_now({"actor/entropy": 0.5}, 11, 220.0)
    assert state(run) == "running"


def test_a_pause_phase_pauses_and_resumes_through_the_live_phases():
    run = served()
    run.pipeline.process_now({"actor/entropy": 0.5}, 1, 100.0)
    run.live_phases.open("gen")
    run.live_phases.open("heat_guard")
    assert state(run) == "paused"
    run.live_phases.close("heat_guard")
    assert state(run) == "running"
    run.live_phases.close("gen")


def test_crash_info_is_one_series_replaced_by_a_later_crash_and_gone_when_running_again():
    run = served()
    l = run.lifecycle
    run.pipeline.process_now({"actor/entropy": 0.5}, 1, 100.0)
    l.crashed("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 3.46 GiB\nmore",
              ts=101.0)
    assert state(run) == "crashed"
    assert crash_info(run) == {(("exception", "torch.OutOfMemoryError"),
                                ("message", "CUDA out of memory. Tried to allocate 3.46 GiB")): 1.0}
    l.crashed("NCCLError", "Watchdog caught collective operation timeout", ts=102.0)
    assert list(crash_info(run)) == [(("exception", "NCCLError"),
                                      ("message", "Watchdog caught collective operation timeout"))]
    run.pipeline.process_now({"actor/entropy": 0.5}, 2, 103.0)  # the log went on
    assert state(run) == "running" and crash_info(run) == {}


def test_a_label_too_long_is_cut_with_a_hash():
    run = served()
    run.lifecycle.crashed("RuntimeError", "x" * 500, ts=1.0)
    [labels] = crash_info(run)
    msg = dict(labels)["message"]
    assert len(msg) <= 128 and "~" in msg


def test_the_process_end_is_final_and_written_after_the_frames(tmp_path):
    from exporter.core.self_metrics import Counts
    path = tmp_path / "s.jsonl"
    counts = Counts()
    run = ServedRun(Pipeline("lc", framework="verl", counts=counts,
                             spool=SpoolWriter(str(path), "lc", "verl", counts)))
    run.pipeline.start()
    run.lifecycle.crashed("ValueError", "bad batch", final=True)  # the excepthook, frames queued
    for i in range(1, 4):
        run.pipeline.log({"actor/entropy": 0.5}, step=i)
    run.lifecycle.finish(final=True)  # close() after the crash: the crash stays
    run.close()
    assert run.lifecycle.state == "crashed"
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and '"data"' in lines[2]
    ev = decode_event(lines[3])
    assert ev["event"] == "crashed" and ev["step"] == 3 and ev["exception"] == "ValueError"
    assert ev["message"] == "bad batch" and ev["run"] == "lc"


def test_a_spool_event_replays_to_the_same_state(tmp_path):
    """backfill and doctor: the spool's event record, read back by the spool parser, moves a
    replay's pipeline as the live path moved the original."""
    from exporter.logs import make_parser
    lines = [json.dumps({"spool": 1, "ts": 10.0, "run": "lc", "step": 5,
                         "data": {"actor/entropy": 0.5}}),
             json.dumps({"spool": 1, "ts": 11.0, "run": "lc", "event": "crashed", "step": 5,
                         "exception": "torch.OutOfMemoryError", "message": "CUDA out of memory."})]
    parser = make_parser("spool")
    frames = [fr for line in lines for fr in parser.feed(line)]
    assert [fr.step for fr in frames] == [5, 5]
    assert lc.event_of(frames[1].data) == ("crashed", "torch.OutOfMemoryError",
                                           "CUDA out of memory.")
    replay = served(segments=False)
    for fr, ts in zip(frames, (10.0, 11.0)):
        replay.pipeline.process_now(fr.data, fr.step, ts)
    assert state(replay) == "crashed"
    assert replay.store.get("rl_training_step") == 5  # the event moved no step
    assert crash_info(replay) == {(("exception", "torch.OutOfMemoryError"),
                                   ("message", "CUDA out of memory.")): 1.0}


def test_an_unknown_event_is_counted_not_applied():
    run = served()
    run.pipeline.process_now({lc.EVENT: "exploded"}, None, 1.0)
    assert run.counts.rejected["unknown_event"] == 1 and state(run) == "starting"


def test_the_paused_bucket_takes_the_live_pause_whenever_its_window_is_published():
    """A 40-minute heat-guard pause between steps 3 and 4 of 10 s steps: paused, not stalled
    (the stall threshold is 30 minutes), however late its timer window arrives."""
    run = served()
    gp = run.goodput
    t = 1000.0
    for i in range(1, 4):
        run.pipeline.process_now({"actor/entropy": 0.5}, i, t + 10 * i)
    l = run.lifecycle
    l.pause_open("heat_guard", t + 32)
    l.pause_close("heat_guard", t + 32 + 2400)
    run.pipeline.process_now({"actor/entropy": 0.5}, 4, t + 40 + 2400)
    gp.add_phases({"heat_guard": 2400.0})  # the window, published after the step's frame
    run.pipeline.process_now({"actor/entropy": 0.5}, 5, t + 50 + 2400)
    totals = gp.totals
    assert totals[PAUSED] == pytest.approx(2400.0)
    assert totals["stalled"] == 0.0
    assert totals["step"] == pytest.approx(40.0 + min(10.0, totals["step"] - 40.0))
    assert totals["step"] - totals["startup"] * 0 >= 40.0 - 1e-6  # steps 1 -> 5 less the pause


def test_the_paused_bucket_from_a_logged_pause_duration():
    """serve: a log shows a pause only once it ended, as a phase duration in a frame."""
    run = ServedRun(Pipeline("lc", framework="generic"))
    for i in range(1, 4):
        run.pipeline.process_now({"loss": 0.5}, i, 1000.0 + 10 * i)
    run.store.set("rl_phase_duration_seconds", 2400.0, {"phase": "heat_guard"})
    sid = run.store._index[("rl_phase_duration_seconds", (("phase", "heat_guard"),))]
    run.goodput.on_frame({"timing/heat_guard": 2400.0}, {"timing/heat_guard": sid}, 4,
                         1040.0 + 2400)
    assert run.goodput.totals[PAUSED] == pytest.approx(2400.0)
    assert run.goodput.totals["stalled"] == 0.0
