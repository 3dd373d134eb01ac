"""serve reads how a run ended from its log (exporter/logs/ending.py) and keeps serving it:
rl_run_state, rl_run_crash_info and the total steps the log printed, on real log endings (the
corpus and the real samples), live as a file grows, across a restart of serve, and into the
spool, from which a replay (backfill's pipeline) comes to the same state."""
import json
import os
import shutil
import time

import pytest

from exporter.core.lifecycle import event_of
from exporter.logs import make_parser
from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "data")


def serve_file(tmp_path, rel, fmt="auto", **kw):
    """Follow a copy of a corpus/real file to its end (serve --exit-when-idle)."""
    src = os.path.join(DATA, rel)
    dst = tmp_path / os.path.basename(rel)
    shutil.copyfile(src, dst)
    sc = Sidecar([SourceSpec(f"{fmt}:{dst}", "r")], run="r", port=None, gpu=False, **kw)
    sc.run_until_idle()
    for served in sc.runs.values():
        served.flush()
    return sc


def the_run(sc):
    [served] = sc.runs.values()
    return served


def crash_info(served):
    return {tuple(sorted(l.items())): v for _, name, l, v in served.pipeline.self_metrics()
            if name == "rl_run_crash_info"}


def total(served):
    return served.store.get("rl_config_value", {"parameter": "total_training_steps"})


CASES = [  # (file, state, total steps the log printed, exception)
    ("runs/verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-v5-700step.log", "finished",
     700, None),
    ("runs/verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-700step-ckpt-crash.log",
     "crashed", 700, "RuntimeError"),
    ("runs/verl/bihan_dstack-configs_verl_demo_resume.log", "finished", 435, None),
    ("runs/verl/eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-resp256.log", "finished", None, None),
    ("runs/verl/eric-haibin-lin_verl-data_gemma2-2b-ppo-gsm8k.log", "running", None, None),
    ("runs/trl/Ning-Guo_hotpotqa-agent_grpo-kl-coef0.01.log", "finished", None, None),
    # Unsloth's banner: `Total steps = 250`
    ("runs/trl/Rusheel86_Chaos-Economy_wandb_7yj6c945_grpo.log", "finished", 250, None),
    ("runs/trl/Rusheel86_Chaos-Economy_vsr_new_kaggle_grpo.log", "finished", 500, None),
    # SFT's train_runtime mid-file, then a GRPO run cut short: not finished
    ("runs/trl/Radar-Lei_SCU_TSC_sft_then_grpo_extend_decision.log", "running", 1404, None),
    ("runs/ms_swift/lgc-FINANCE_DeepClima-R1_qwen3_8b_lora_sft_logging.jsonl", "finished", 438,
     None),
    ("runs/ms_swift/TangBinghao_swift_internvl2_sft_logging.jsonl", "finished", None, None),
    ("real/ms_swift/docs_metax_sft_console_end.log", "finished", 94, None),
    ("runs/slime/radixark_miles_cp2_ep8_qwen35_gdn.log", "finished", 20, None),
    ("runs/slime/radixark_miles_cp2_ep4_qwen35_gdn.log", "crashed", 20, "torch.OutOfMemoryError"),
    ("real/openrlhf/mm_eureka_last_episode_bars_job_end.log", "finished", 429, None),
    ("runs/areal/nexthybrid_AReaL_cloud_gsm8k_h200_grpo.log", "running", 4675, None),
    ("runs/llamafactory/syGOAT_Mistral-v0.2-Translator_lora_sft_trainer_log.jsonl", "finished",
     8660, None),
    ("runs/llamafactory/rameyjm7_SFT-Training-LLM_qwen25_3b_full_sft_trainer_log.jsonl",
     "finished", 6566, None),
    ("runs/llamafactory/hykun1989_360-LLaMA-Factory-grpo_dpo_grpo_loss_r1_32b.jsonl", "running",
     5100, None),
]


@pytest.mark.parametrize("rel,state,steps,exception", CASES, ids=[c[0].split("/")[-1][:40]
                                                                 for c in CASES])
def test_serve_reads_the_end_of_real_logs(tmp_path, rel, state, steps, exception):
    sc = serve_file(tmp_path, rel)
    try:
        served = the_run(sc)
        assert served.lifecycle.state == state, served.lifecycle.snapshot()
        assert total(served) == steps
        info = crash_info(served)
        if exception is None:
            assert info == {}
        else:
            [labels] = info
            assert dict(labels)["exception"] == exception and dict(labels)["message"]
    finally:
        sc.close()


def test_trainer_state_documents_say_whether_the_loop_stopped(tmp_path):
    done = serve_file(tmp_path, "runs/trl/IMJONEZZ_UnslothGRPO_llama31_8b_gsm8k_checkpoint-250/"
                                "trainer_state.json", fmt="hf_state")
    try:
        assert the_run(done).lifecycle.state == "finished" and total(the_run(done)) == 250
    finally:
        done.close()
    part = tmp_path / "part"
    part.mkdir()
    mid = serve_file(part, "runs/trl/aaravarora01_agent-memory-redteam_finance_grpo_sparse/"
                           "trainer_state.json", fmt="hf_state")
    try:
        assert the_run(mid).lifecycle.state == "running" and total(the_run(mid)) == 200
    finally:
        mid.close()


def test_live_a_bare_traceback_waits_for_quiet_and_new_steps_reopen(tmp_path):
    """A log that ends in a traceback: crashed once the file was quiet for crash_quiet, not
    before; the trainer's next record makes it running again. Every end reaches the spool."""
    log = tmp_path / "train.log"
    out = tmp_path / "spool.jsonl"
    rec = "(TaskRunner pid=1) step:{} - actor/entropy:0.5 - critic/score/mean:0.1\n"
    log.write_text("".join(rec.format(i) for i in range(1, 4)))
    sc = Sidecar([SourceSpec(f"verl_console:{log}", "r")], run="r", port=None, gpu=False,
                 idle_flush=0.05, crash_quiet=0.6, spool_out=str(out))
    try:
        def settle(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sc.poll_once()
                time.sleep(0.02)
            for served in sc.runs.values():
                served.flush()
        settle(0.3)
        lc = the_run(sc).lifecycle
        assert lc.state == "running"
        with log.open("a") as f:
            f.write("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
                    "    step()\nValueError: reward model returned NaN\n")
        settle(0.2)
        assert lc.state == "running"  # not yet: a trainer may log one and go on
        settle(1.0)
        assert lc.state == "crashed"
        assert lc.snapshot()["crash"] == {"exception": "ValueError",
                                          "message": "reward model returned NaN"}
        with log.open("a") as f:
            f.write(rec.format(4))
        settle(0.3)
        assert lc.state == "running" and lc.snapshot()["crash"] is None
        with log.open("a") as f:  # a job error: the process is gone, no quiet needed
            f.write("Error executing job with overrides: []\nTraceback (most recent call last):\n"
                    "  File \"x.py\", line 1, in <module>\ntorch.OutOfMemoryError: CUDA out of "
                    "memory. Tried to allocate 2.00 GiB\n")
        settle(0.15)
        assert lc.state == "crashed"
    finally:
        sc.close()
    events = [json.loads(l) for l in out.read_text().splitlines() if '"event"' in l]
    assert [(e["event"], e.get("exception")) for e in events] == [
        ("crashed", "ValueError"), ("crashed", "torch.OutOfMemoryError")]
    # the spool read back (backfill, doctor): its frames and events give the same end
    parser = make_parser("spool")
    frames = [fr for line in out.read_text().splitlines() for fr in parser.feed(line)]
    assert [event_of(fr.data)[0] for fr in frames if event_of(fr.data)] == ["crashed", "crashed"]
    from exporter.postmortem.replay import Replay
    replay = Replay("r", "verl")
    for i, fr in enumerate(frames):
        replay.apply(fr.data, fr.step, 1000.0 + i)
    assert replay.pipeline.lifecycle.state == "crashed"
    assert replay.pipeline.lifecycle.snapshot()["crash"]["exception"] == "torch.OutOfMemoryError"
    replay.close()


def test_the_end_survives_a_restart_of_serve(tmp_path):
    src = os.path.join(DATA, "runs/verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-v5-"
                             "700step.log")
    log = tmp_path / "train.log"
    shutil.copyfile(src, log)
    state = str(tmp_path / "state.json")
    spec = [SourceSpec(f"auto:{log}", "r")]
    sc = Sidecar(spec, run="r", port=None, gpu=False, state_path=state)
    sc.run_until_idle()
    sc.close()
    again = Sidecar(spec, run="r", port=None, gpu=False, state_path=state)
    try:
        served = the_run(again)  # made at once by the restore: before any line is read
        served.flush()
        assert served.lifecycle.state == "finished" and total(served) == 700
    finally:
        again.close()
