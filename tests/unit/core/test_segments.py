"""Segments live: the hook's and `serve`'s pipeline notes where a restart or a second run in the
same log begins (doctor's segmenter, exporter/core/segments.py) and exports the time as
rl_run_segment_start_timestamp_seconds, which the step-window rules gate on."""
import pytest

from exporter import Exporter
from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec
from exporter.testing import scrape

START = "rl_run_segment_start_timestamp_seconds"
T0 = 1.7e9


@pytest.fixture
def ex():
    e = Exporter(run="t", framework="verl", serve=False)
    yield e
    e.close()


def seg_start(ex):
    return scrape(ex).get((START, ()))


def test_a_step_going_back_begins_a_segment_at_that_frame(ex):
    for s in range(1, 61):
        ex.process_now({"critic/score/mean": 0.2 + 0.01 * s}, s, T0 + 60 * s)
    assert seg_start(ex) is None  # the first segment has nothing before it to gate on
    ex.process_now({"critic/score/mean": 0.2}, 1, T0 + 4000)
    assert seg_start(ex) == T0 + 4000
    for s in range(2, 30):
        ex.process_now({"critic/score/mean": 0.2}, s, T0 + 4000 + 60 * s)
    assert seg_start(ex) == T0 + 4000  # steps go on: the same segment
    ex.process_now({"critic/score/mean": 0.2}, 10, T0 + 9000)  # resumed from a checkpoint
    assert seg_start(ex) == T0 + 9000
    assert ex.pipeline.worker.segmenter.segments[-1].why.startswith("the step counter went back")
    assert len(ex.pipeline.worker.segmenter.segments) == 1  # live: only the current one is kept


def test_steps_are_compared_within_a_record_kind_and_counted_steps_never_go_back(ex):
    # slime/Miles count `rollout N` and `step N` records apart: rollout 4 holds train steps 1-8
    for r in range(1, 5):
        ex.process_now({"rollout/raw_reward": 0.5}, r, T0 + r)
        for k in range(1, 9):
            ex.process_now({"train/loss": 0.1}, 8 * (r - 1) + k, T0 + r + k / 10)
    # frames without a step count on from the last one
    ex.process_now({"actor/entropy": 0.5}, None, T0 + 100)
    ex.process_now({"actor/entropy": 0.5}, None, T0 + 101)
    assert seg_start(ex) is None


def test_a_bad_step_or_an_odd_key_costs_nothing_else(ex):
    ex.process_now({"actor/entropy": 0.5}, 5, T0)
    ex.process_now({7: 1.0, "actor/entropy": 0.5}, "not a step", T0 + 1)
    ex.process_now({"actor/entropy": 0.5}, 6, T0 + 2)
    assert scrape(ex)[("rl_training_step", ())] == 6
    assert seg_start(ex) is None


def test_the_queue_path_of_log_notes_it_too(ex):
    for s in (1, 2, 3, 1):
        ex.log({"actor/entropy": 0.5}, step=s)
    ex.flush()
    assert seg_start(ex) is not None


def hf_line(step, loss):  # the HF Trainer's console prints no step: frames are counted
    return f"{{'loss': {loss}, 'learning_rate': 1e-05, 'epoch': {step / 100}}}\n"


def serve_once(tmp_path, text):
    log = tmp_path / "train.log"
    log.write_text(text)
    sc = Sidecar([SourceSpec(f"hf:{log}", "r")], run="r", port=None, gpu=False)
    try:
        sc.poll_once()
        (p,) = sc.runs.values()
        assert p.flush()
        return p.store.get(START), p.store.get("rl_training_step")
    finally:
        sc.close()


def test_serve_a_second_start_up_banner_after_training_begins_a_segment(tmp_path):
    banner = "***** Running training *****\n"
    # a second train() call in the same process and log: the counter does not go back
    text = banner + "".join(hf_line(s, 0.5) for s in range(1, 6)) + banner
    text += "".join(hf_line(s, 0.4) for s in range(6, 9))
    start, step = serve_once(tmp_path, text)
    assert start is not None and step == 7
    # one banner at the start of the log is no seam
    start, step = serve_once(tmp_path, banner + "".join(hf_line(s, 0.5) for s in range(1, 9)))
    assert start is None and step == 7


def test_the_banner_count_travels_on_the_frame_read_after_it():
    from exporter.logs.read import read_text
    banner = "***** Running training *****\n"
    text = banner + hf_line(1, 0.5) + hf_line(2, 0.5) + banner + banner + hf_line(3, 0.4)
    reader, reads = read_text(text, "hf")
    assert [r.starts for r in reads] == [1, 0, 2] and reader.starts == 3
