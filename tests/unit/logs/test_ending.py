"""How a log ends (exporter/logs/ending.py), on real output: every corpus run, the real samples,
crash lines quoted from public issue threads, and the released packages' own prints (TRL and
AReaL in tests/integration/test_real_endings.py)."""
import json
import os

import pytest

from exporter.logs.detect import open_format
from exporter.logs.ending import Endings, ending, tail, trainer_state
from exporter.logs.read import Reader

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "data")


def read_whole(rel):
    path = os.path.join(DATA, rel)
    text = open(path, encoding="utf-8", errors="replace", newline="").read()  # \r: redraws
    e, reader = Endings(), Reader(open_format("auto", path, text[:4096]), where=False)
    for line in text.split("\n"):
        e.line(line)
        for r in reader.feed(line):
            e.record(r.frame.step, r.frame.data)
    for r in reader.flush():
        e.record(r.frame.step, r.frame.data)
    return e


# (corpus file, state or None, framework of the marker, step, total the log printed, exception)
RUNS = [
    ("verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-v5-700step.log", "finished",
     "verl", 700, 700, None),
    ("verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-700step-ckpt-crash.log", "crashed",
     None, 699, 700, "RuntimeError"),
    ("verl/bihan_dstack-configs_verl_demo_resume.log", "finished", "ray", 435, 435, None),
    ("verl/eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-resp256.log", "finished", "verl", 434,
     None, None),
    ("verl/eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-resp512.log", "finished", "verl", 434,
     None, None),
    ("verl/eric-haibin-lin_verl-data_gemma2-2b-ppo-gsm8k.log", None, None, None, None, None),
    ("verl/jianghoucheng_agent_on_policy_distillation_do7bl4gg.log", None, None, None, None, None),
    ("trl/Ning-Guo_hotpotqa-agent_grpo-kl-coef0.01.log", "finished", "trl", None, None, None),
    ("trl/Rusheel86_Chaos-Economy_wandb_7yj6c945_grpo.log", "finished", "trl", 250, 250, None),
    ("trl/Rusheel86_Chaos-Economy_vsr_new_kaggle_grpo.log", "finished", "trl", 500, 500, None),
    ("trl/Radar-Lei_SCU_TSC_sft_then_grpo_extend_decision.log", None, None, None, 1404, None),
    ("trl/JuncyLu_trl_DAPO_run_terminal_20251022_120531.md", None, None, None, None, None),
    ("ms_swift/lgc-FINANCE_DeepClima-R1_qwen3_8b_lora_sft_logging.jsonl", "finished", "trl", 438,
     438, None),
    ("ms_swift/TangBinghao_swift_internvl2_sft_logging.jsonl", "finished", "trl", 14776, None,
     None),
    ("slime/radixark_miles_cp2_ep8_qwen35_gdn.log", "finished", "slime", 19, 20, None),
    ("slime/radixark_miles_cp2_ep4_qwen35_gdn.log", "crashed", None, 9, 20,
     "torch.OutOfMemoryError"),
    ("areal/nexthybrid_AReaL_cloud_gsm8k_h200_grpo.log", None, None, None, 4675, None),
    ("llamafactory/syGOAT_Mistral-v0.2-Translator_lora_sft_trainer_log.jsonl", "finished",
     "llamafactory", 8660, 8660, None),
    ("llamafactory/suzushi-tw_luojiu-7b-base_lora_sft_trainer_log.jsonl", "finished",
     "llamafactory", 8712, 8712, None),
    ("llamafactory/hsc748NLP_NSLLM_continued_pretrain_qwen3_8b.jsonl", "finished", "llamafactory",
     2178, 2178, None),
    ("llamafactory/rameyjm7_SFT-Training-LLM_qwen25_3b_full_sft_trainer_log.jsonl", "finished",
     "llamafactory", 6565, 6566, None),
    ("llamafactory/hykun1989_360-LLaMA-Factory-grpo_dpo_grpo_loss_r1_32b.jsonl", None, None, None,
     5100, None),
]


@pytest.mark.parametrize("rel,state,fw,step,total,exc", RUNS, ids=[r[0][:48] for r in RUNS])
def test_every_corpus_run_ends_as_the_markers_research_says(rel, state, fw, step, total, exc):
    e = read_whole("runs/" + rel)
    got = e.ending
    assert e.total == total
    if state is None:
        assert got is None, got
        return
    assert (got.state, got.framework, got.step, got.exception) == (state, fw, step, exc), got
    assert got.marker and got.line > 0
    if state == "crashed":
        assert got.message


@pytest.mark.parametrize("rel,fw", [
    ("runs/verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-v5-700step.log", "verl"),
    ("runs/verl/bihan_dstack-configs_verl_demo_resume.log", "ray"),
    ("runs/trl/Ning-Guo_hotpotqa-agent_grpo-kl-coef0.01.log", "trl"),
    ("runs/ms_swift/lgc-FINANCE_DeepClima-R1_qwen3_8b_lora_sft_logging.jsonl", "trl"),
    ("runs/llamafactory/syGOAT_Mistral-v0.2-Translator_lora_sft_trainer_log.jsonl", "llamafactory"),
    ("real/openrlhf/mm_eureka_last_episode_bars_job_end.log", "ray"),
    ("real/ms_swift/docs_metax_sft_console_end.log", "swift"),
    ("real/verl/play_verl_qwen2_7b_min_last_steps.log", "verl"),
    ("real/verl/verldata_qwen05b_ppo_tail_final_validation.log", "verl"),
])
def test_the_last_200_lines_are_enough_for_a_marker(rel, fw):
    got = ending(tail(os.path.join(DATA, rel)))
    assert got is not None and got.state == "finished" and got.framework == fw, got


def test_the_last_200_lines_are_enough_for_a_crash():
    got = ending(tail(os.path.join(DATA, "runs/slime/radixark_miles_cp2_ep4_qwen35_gdn.log")))
    assert (got.state, got.exception) == ("crashed", "torch.OutOfMemoryError")
    assert got.message.startswith("CUDA out of memory. Tried to allocate 3.46 GiB")
    assert not got.sure  # a traceback alone: serve waits for the log to go quiet
    got = ending(tail(os.path.join(
        DATA, "runs/verl/uqcxu9_qwen2.5_300step_NEW_CONSIS_RESULT_econ-grpo-700step-ckpt-crash.log")))
    # Hydra's job error and hint: the driver is gone; the chained exception is the last one
    assert got.state == "crashed" and got.sure
    assert got.message.startswith("[enforce fail at inline_container.cc:626] . unexpected pos")


def test_openrlhf_last_episode_bar_and_the_ray_job():
    lines = open(os.path.join(DATA, "real/openrlhf/mm_eureka_last_episode_bars_job_end.log"),
                 encoding="utf-8").read().split("\n")
    bars = [l for l in lines if "Job '" not in l]  # the bar alone: OpenRLHF's own end
    got = ending(bars)
    assert got.state == "finished" and got.framework == "openrlhf"
    assert "429/429" in got.marker
    e = Endings()
    e.line(next(l for l in lines if "428/429" in l))  # not the end yet
    assert e.ending is None and e.total == 429


def test_a_marker_followed_by_training_records_was_a_phase_not_the_run():
    """One process, two train() calls (SFT then GRPO): the SFT summary mid-file is forgotten
    once the GRPO records begin (the sample is lines 220-232; the whole file in RUNS)."""
    lines = open(os.path.join(DATA, "runs/trl/Radar-Lei_SCU_TSC_sft_then_grpo_extend_decision.log"), newline="",
                 encoding="utf-8", errors="replace").read().split("\n")
    got = ending(lines[:232])
    assert got.state == "finished" and "'train_runtime': 28.7812" in got.marker
    assert ending(lines) is None


def test_eval_records_after_the_summary_keep_it():
    """A script that calls evaluate() after train(): eval dicts are no training records."""
    got = ending(["{'loss': 0.5, 'epoch': 1.0}",
                  "{'train_runtime': 12.5, 'train_samples_per_second': 3.1, 'epoch': 1.0}",
                  "{'eval_loss': 0.4, 'eval_runtime': 1.2, 'epoch': 1.0}"])
    assert got is not None and got.state == "finished"


# crash lines quoted from public issue threads (the markers research, section 8)
ISSUES = [
    # hiyouga/LlamaFactory#7396: the NCCL watchdog
    (["{'loss': 0.5, 'epoch': 0.1}",
      "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, "
      "NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out."],
     "NCCLError", True),
    # vllm-project/vllm#6042: the watchdog under Ray
    (["{'loss': 0.5, 'epoch': 0.1}",
      "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 1 Rank 1] Process "
      "group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective "
      "operation timeout"], "NCCLError", True),
    # lzhxmu/CPPO#6: torchrun's child killed
    (["{'loss': 0.5, 'epoch': 0.1}", "torch.distributed.elastic.multiprocessing.errors."
      "ChildFailedError:", "src/open_r1/grpo_gsm.py FAILED", "  exitcode  : -9 (pid: 14750)",
      "  traceback : Signal 9 (SIGKILL) received by PID 14750"], "SIGKILL", True),
    # hiyouga/LlamaFactory#163
    (["{'loss': 0.5, 'epoch': 0.1}", "ERROR:torch.distributed.elastic.multiprocessing.api:failed "
      "(exitcode: -9) local_rank: 4 (pid: 2283) of binary: /usr/bin/python3"], "SIGKILL", True),
    # xk-huang/yet-another-vectornet#37: the kernel's OOM killer, as the shell reports it
    (["{'loss': 0.5, 'epoch': 0.1}",
      "100%|██████████| 205944/205944 [18:54<00:00, 181.58it/s]", "Killed"], "SIGKILL", True),
    (["{'loss': 0.5, 'epoch': 0.1}", "/bin/bash: line 27:   318 Killed                  sh start.sh"],
     "SIGKILL", True),
    # verl-project/verl#4921: the actor died (the host OOM killer), then Hydra's hint
    (["step:3 - actor/entropy:0.5", "Traceback (most recent call last):",
      "  File \"main_ppo.py\", line 1, in <module>",
      "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
      "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."],
     "ray.exceptions.ActorDiedError", True),
    # a failed Ray job (the markers research: a public log, found by exact-string search)
    (["step:3 - actor/entropy:0.5", "Job 'raysubmit_73nQ2jgcpZATWrNN' failed",
      "Status message: Job entrypoint command failed with exit code 1, last available logs "
      "(truncated to 20,000 chars):"], "RayJobFailed", True),
]


@pytest.mark.parametrize("lines,exc,sure", ISSUES, ids=[i[1] + str(n) for n, i in enumerate(ISSUES)])
def test_crash_signatures_from_public_issues(lines, exc, sure):
    got = ending(lines)
    assert got is not None and (got.state, got.exception, got.sure) == ("crashed", exc, sure), got
    assert got.message


def test_areal_completes_only_with_the_last_step_and_no_failure():
    step = "(AReaL) 20260822-09:03:26.123 StatsLogger INFO: Epoch 1/1 Step {n}/2 Train step {n}/2 done."
    done = "(AReaL) 20260822-09:05:00.000 StatsLogger INFO: Training completes! Total time elapsed 63.10."
    assert ending([step.format(n=1), step.format(n=2), done]).state == "finished"
    assert ending([step.format(n=1), done]) is None  # it stopped short of its total
    failed = ending([step.format(n=1), step.format(n=2),
                     "(AReaL) 20260822-09:04:00.000 RLTrainer ERROR: Training failed with "
                     "exception: CUDA error: an illegal memory access was encountered", done])
    assert failed.state == "crashed" and failed.sure
    assert failed.message == "CUDA error: an illegal memory access was encountered"


def test_a_marker_after_a_crash_wins_and_a_crash_after_a_marker_wins():
    tb = ["Traceback (most recent call last):", "  File \"x.py\", line 1, in <module>",
          "ValueError: caught and logged"]
    assert ending(["step:3 - a/b:1"] + tb + ["Job 'raysubmit_x' succeeded"]).state == "finished"
    after = ending(["step:3 - a/b:1", "(TaskRunner pid=1) \"Final validation metrics: {'v': 1}\""]
                   + tb)
    assert after.state == "crashed" and after.exception == "ValueError"


def test_a_keyboard_interrupt_at_the_end_is_a_crash_by_it():
    got = ending(["{'loss': 0.5, 'epoch': 0.1}", "Traceback (most recent call last):",
                  "  File \"train.py\", line 3, in <module>", "KeyboardInterrupt"])
    assert got.state == "crashed" and got.exception == "KeyboardInterrupt"


@pytest.mark.parametrize("rel,state,total", [
    ("IMJONEZZ_UnslothGRPO_llama31_8b_gsm8k_checkpoint-250", "finished", 250),
    ("srinath-manda_IITD_Feb26_AAIPL_grpo_checkpoint-500", "finished", 500),
    ("hsc748NLP_NSLLM_llamafactory_pt_state", "finished", 2178),
    ("aaravarora01_agent-memory-redteam_finance_grpo_sparse", None, 200),
    ("ijinyu1113_Learned-Remasking-Policy-for-dLLM_2way_checkpoint-2000", None, 14973),
    ("SeanGormann_llm_recovery_dpo_gemma2b_checkpoint-200", None, 333),
])
def test_trainer_state_documents(rel, state, total):
    doc = json.load(open(os.path.join(DATA, "runs/trl", rel, "trainer_state.json")))
    got, n = trainer_state(doc)
    assert n == total and (got.state if got else None) == state


# one line each alternative of the trigger regex matches (a new alternative needs its own)
TRIGGER_SAMPLES = [
    "validation metrics", "train_runtime", "Training complete", "train metrics",
    "End time of running", "Job 'x' failed", "Training failed", "Train step 3/9 done.",
    "Episode [1/3]", "perf 3", "rollout 2", "step 4 ..... done", "current_steps",
    "Total training steps: 9", "Total steps = 9", "Total optimization steps = 9", "max_steps",
    "iteration 4", "Error executing job", "HYDRA_FULL_ERROR", "Watchdog caught", "watchdog",
    "entire process down", "NCCL error", "ncclSystemError", "CUDA out of memory", "Killed",
    "已杀死", "exitcode  : -9", "SIGKILL", "Status message: x"]


def test_the_trigger_words_hold_every_match_of_the_trigger():
    """Endings.line() skips the regex on a line with none of _TRIGGER_WORDS: every line the
    regex matches must hold one, or a closing line would be missed."""
    import re

    from exporter.logs import ending as mod
    alternatives = mod._TRIGGER.pattern.split("|")
    for alt in alternatives:
        hits = [s for s in TRIGGER_SAMPLES if re.search(alt, s)]
        assert hits, f"no sample line for the trigger alternative {alt!r}"
        for s in hits:
            assert any(w in s for w in mod._TRIGGER_WORDS), (alt, s)
    # and a line with none of the words is one the regex does not match
    assert mod._TRIGGER.search("step:5 - actor/pg_loss:0.1 - critic/score/mean:0.5") is None
