"""How doctor says a run ended (exporter/postmortem/ending.py), on real logs of the corpus and on
spools the exporter's own writer wrote: finished at step N of M, crashed with the exception, cut
short, or not known; never "healthy" for a log it cannot call finished."""
import os

import pytest

from exporter.postmortem import logs
from exporter.postmortem.ending import (CRASHED, CUT_SHORT, FINISHED, STOPPED, UNKNOWN, RunEnd,
                                        from_spool,
                                        of_log)
from exporter.spool import encode, encode_event

RUNS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "data", "runs")


def end_of(rel: str) -> RunEnd:
    """of_log as doctor calls it: the whole parse's last step and traceback."""
    path = os.path.join(RUNS, rel)
    fmt = logs.sniff(path)
    stats = logs.LogStats(path)
    last = None
    for frame, _, _ in logs.frames(path, fmt, stats):
        if frame.step is not None:
            last = frame.step
    return of_log(path, fmt, last, None, stats.crash)


# (corpus file, state, step, total, what the sentence says)
CORPUS = [
    # LLaMA-Factory's trainer log stops at step 202 of the 5,100 its records say
    ("llamafactory/hykun1989_360-LLaMA-Factory-grpo_dpo_grpo_loss_r1_32b.jsonl", CUT_SHORT, 202,
     5100, "cut short: the log ends at step 202 of 5,100"),
    # AReaL: `Train step 88/4675 done.` and nothing after it
    ("areal/nexthybrid_AReaL_cloud_gsm8k_h200_grpo.log", CUT_SHORT, 88, 4675,
     "cut short: the log ends at step 88 of 4,675"),
    # veRL dies saving its last checkpoint: the traceback after the last record
    ("verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-700step-ckpt-crash.log", CRASHED, 699,
     700, "crashed at step 699 of 700: RuntimeError: [enforce fail at inline_container.cc:626]"),
    ("verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-v5-700step.log", FINISHED, 700, 700,
     "finished at step 700 of 700 (verl's closing line: "),
    # Miles: the total from the argument table at the top (10 rollouts of 2 train steps), the
    # last rollout's `perf 9:` record 288 lines before the end (Ray's shutdown after it); the
    # steps are train steps (0-19), a rollout's records stamped with the last one
    ("slime/radixark_miles_cp2_ep8_qwen35_gdn.log", FINISHED, 19, 20,
     "finished at step 19 of 20 (slime's closing line: "),
    ("slime/radixark_miles_cp2_ep4_qwen35_gdn.log", CRASHED, 9, 20,
     "crashed at step 9 of 20: torch.OutOfMemoryError: CUDA out of memory."),
    # a checkpoint's trainer_state.json: the loop had not stopped
    ("trl/SeanGormann_llm_recovery_dpo_gemma2b_checkpoint-200/trainer_state.json", CUT_SHORT, 200,
     333, "cut short: the log ends at step 200 of 333"),
    # no closing line, no crash, no total: doctor cannot tell, and says so
    ("verl/eric-haibin-lin_verl-data_gemma2-2b-ppo-gsm8k.log", UNKNOWN, 105, None,
     "not known: the log ends at step 105"),
]


@pytest.mark.parametrize("rel,state,step,total,text", CORPUS, ids=[c[0][:40] for c in CORPUS])
def test_corpus_logs_end_as_they_do(rel, state, step, total, text):
    end = end_of(rel)
    assert (end.state, end.step, end.total) == (state, step, total)
    assert end.text().startswith(text), end.text()


def test_only_a_run_that_ended_is_called_healthy():
    assert RunEnd(FINISHED, 700, 700).verdict() == "healthy"
    cut = RunEnd(CUT_SHORT, 202, 5100)
    assert cut.verdict() == "healthy as far as the log goes (it is cut short)"
    assert "healthy as far as the log goes" in RunEnd(UNKNOWN, 105).verdict()
    assert cut.as_json() == {"state": "cut short", "step": 202, "total": 5100, "source": "",
                             "text": cut.text()}


def test_the_spools_own_events_say_how_it_ended():
    rec = [encode(s, {"loss": 0.5}, run="r", ts=1.0 + s) for s in range(1, 4)]
    crashed = encode_event({"event": "crashed", "step": 3, "exception": "torch.OutOfMemoryError",
                            "message": "CUDA out of memory"}, run="r", ts=5.0)
    end = from_spool(rec + [crashed], "r")
    assert (end.state, end.step, end.exception) == (CRASHED, 3, "torch.OutOfMemoryError")
    assert end.text() == ("crashed at step 3: torch.OutOfMemoryError: CUDA out of memory "
                          "(the exporter's crashed event)")
    finished = encode_event({"event": "finished", "step": 3}, run="r", ts=5.0)
    assert from_spool(rec + [finished], "r").state == FINISHED
    # the run went on after the event (a resumed run appending to the same spool): no end
    later = encode(4, {"loss": 0.4}, run="r", ts=6.0)
    assert from_spool(rec + [finished, later], "r") is None
    # another run's event in the same spool is not this one's
    other = encode_event({"event": "crashed", "step": 9, "exception": "X"}, run="q", ts=7.0)
    assert from_spool(rec + [finished, other], "r").state == FINISHED


def test_a_stop_from_outside_is_no_crash():
    """SIGTERM (scancel, a preemption, a person), Ctrl-C: the live rule does not page for them,
    and doctor says the run was stopped, not that it crashed or finished."""
    rec = [encode(s, {"loss": 0.5}, run="r", ts=1.0 + s) for s in range(1, 4)]
    term = encode_event({"event": "crashed", "step": 3, "exception": "SIGTERM",
                         "message": "terminated by SIGTERM (15)"}, run="r", ts=5.0)
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        fh.write("\n".join(rec + [term]) + "\n")
    try:
        end = of_log(fh.name, "spool", 3)
    finally:
        os.unlink(fh.name)
    assert end.state == STOPPED and end.exception == "SIGTERM"
    assert end.text() == ("stopped from outside at step 3: SIGTERM: terminated by SIGTERM (15) "
                          "(the exporter's crashed event)")
    assert end.verdict() == "healthy as far as the log goes (the run was stopped before its end)"
