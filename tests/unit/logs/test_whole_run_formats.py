"""Formats and value shapes found in whole public runs (tests/data/runs): numbers printed as
strings, trainer_state.json under another name, LLaMA-Factory's trainer_log.jsonl, veRL's
one-metric-per-line records, HF bars on their own line."""
from __future__ import annotations

import json
import math
from pathlib import Path

from exporter.catalog import CATALOG
from exporter.logs import Reader, detect, read_text
from exporter.logs.base import numeric, parse_pydict

RUNS = Path(__file__).resolve().parents[2] / "data" / "runs"


def frames(text: str, fmt: str = "auto"):
    return [r.frame for r in Reader(fmt).read(text.split("\n"))]


def test_quoted_numbers_are_numbers():
    # TRL on transformers 5.x: every logged value quoted
    data, bad = parse_pydict("{'loss': '0.001621', 'reward_std': '0', 'grad_norm': 'nan', "
                             "'elapsed': '0:01:03', 'lr': '1e-05', 'name': 'grpo'}")
    assert bad == 0
    assert data["loss"] == 0.001621 and data["reward_std"] == 0.0 and data["lr"] == 1e-05
    assert math.isnan(data["grad_norm"])
    assert data["elapsed"] == "0:01:03" and data["name"] == "grpo"  # text stays text
    for text in ("1_000", " 1", "0x1f", "1/94", ""):
        assert numeric(text) == text


def test_trl5_console_dict_reaches_its_metrics():
    got = frames("{'loss': '0.001621', 'reward_std': '0', 'reward': '0', 'epoch': '0.01'}")
    assert got and got[0].data["reward_std"] == 0.0
    r = CATALOG.resolve("reward_std", "trl")
    assert not r.fallback


STATE = {"best_metric": None, "epoch": 0.5, "global_step": 2, "is_world_process_zero": True,
         "log_history": [{"loss": 0.5, "grad_norm": 1.0, "step": 1},
                         {"loss": "0.25", "grad_norm": 0.0, "step": 2}]}


def test_trainer_state_detected_by_content_under_any_name():
    text = json.dumps(STATE, indent=2)
    assert detect(text.splitlines(keepends=True), path="/x/run7_state.json") == "hf_state"
    reader, reads = read_text(text, "auto", path="/x/run7_state.json")
    assert reader.format == "hf_state"
    assert [(r.frame.step, r.frame.data["loss"]) for r in reads] == [(1, 0.5), (2, 0.25)]


LF = ('{"current_steps": 1, "total_steps": 5100, "loss": 0.6491, "accuracy": 1.0, '
      '"lr": 9.8e-10, "epoch": 0.0019, "percentage": 0.02, "elapsed_time": "0:01:03", '
      '"remaining_time": "3 days, 17:51:32"}\n'
      '{"current_steps": 2, "total_steps": 5100, "loss": 0.6466, "accuracy": 1.0, '
      '"lr": 1.9e-09, "epoch": 0.0039, "percentage": 0.04, "elapsed_time": "0:01:48", '
      '"remaining_time": "3 days, 4:29:51"}')


def test_llamafactory_trainer_log():
    reader, reads = read_text(LF, "auto")
    assert [r.format for r in reads] == ["llamafactory"] * 2
    assert [r.frame.step for r in reads] == [1, 2]
    d = reads[0].frame.data
    assert d["loss"] == 0.6491 and "elapsed_time" not in d
    assert CATALOG.resolve("lr", "llamafactory").metric.name == "rl_learning_rate"
    assert CATALOG.resolve("accuracy", "llamafactory").metric.name == "rl_preference_accuracy_ratio"
    assert CATALOG.resolve("current_steps", "llamafactory").step


def test_verl_one_metric_per_line():
    text = ("(TaskRunner pid=1) step:1\n(TaskRunner pid=1)  - actor/entropy:0.5\n"
            "(TaskRunner pid=1)  - critic/score/mean:np.float64(0.25)\n"
            "(TaskRunner pid=1) step:2\n(TaskRunner pid=1)  - actor/entropy:0.4\n")
    got = frames(text)
    assert [(f.step, f.data) for f in got] == [
        (1, {"actor/entropy": 0.5, "critic/score/mean": 0.25}), (2, {"actor/entropy": 0.4})]


def test_hf_bar_on_its_own_line_gives_the_step():
    text = ("  5%|▌         | 5/100 [00:10<03:10,  2.0s/it]\n"
            "{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.05}\n"
            " 10%|█         | 10/100 [00:20<03:00,  2.0s/it]\n"
            "{'loss': 0.4, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
            "{'loss': 0.3, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.15}\n")
    # the third dict has no bar of its own: its step is unknown, not invented
    assert [f.step for f in frames(text, "hf")] == [5, 10, None]


def test_hf_bar_history_on_one_line_dates_the_dicts_after_it():
    # stderr's whole bar history (redraws run together) ahead of stdout's dicts: a redraw
    # repeated right after itself is where tqdm.write printed a dict
    def redraw(n):
        return f" {5 * n}%|▌  | {n}/20 [00:0{n % 10}<00:10,  1.0it/s]"
    bar = "".join(redraw(n) + ("      " + redraw(n) if n % 5 == 0 else "") for n in range(1, 21))
    text = bar + "\n" + "\n".join(
        "{'loss': 0.%d, 'learning_rate': 1e-05, 'epoch': 0.%d}" % (i, i) for i in range(1, 5))
    assert [f.step for f in frames(text, "hf")] == [5, 10, 15, 20]


def test_hf_one_item_bar_fused_to_a_dict_is_not_the_step():
    text = ("Unsloth: Preparing safetensor model files:   0%|          | 0/1 [00:00<?, ?it/s]"
            "{'loss': 2.0337, 'grad_norm': 2.19, 'learning_rate': 0.00016, 'epoch': 0.05}\n")
    assert [f.step for f in frames(text, "hf")] == [None]


def test_hf_bar_history_redrawn_with_carriage_returns_then_a_second_train_call():
    # stderr's bar (CR redraws, a blank where tqdm.write printed each dict) ahead of stdout's
    # dicts, then a second train() whose bar has another total
    def redraw(n, total):
        return f" {n}%|▌  | {n}/{total} [00:0{n % 10}<00:10,  1.0it/s]"
    hist = "".join("\r" + redraw(n, 10) + ("\r" + " " * 40 + "\r" + redraw(n, 10) if n % 5 == 0 else "")
                   for n in range(1, 11))
    dicts = "\n".join("{'loss': 0.%d, 'learning_rate': 1e-05, 'epoch': 0.%d}" % (i, i) for i in (1, 2))
    second = ("\r" + redraw(1, 40) + "\n{'loss': 0.3, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
              + "\r" + redraw(2, 40) + "\n{'loss': 0.2, 'learning_rate': 1e-05, 'epoch': 0.2}")
    text = "Tokenizing: " + redraw(60, 100) + "\n" + hist + "\n" + dicts + "\n" + second
    assert [f.step for f in frames(text)] == [5, 10, 1, 2]


def test_ms_swift_2x_logging_jsonl_with_integer_global_step():
    text = ('{"loss": 5.04565144, "acc": 0.125, "grad_norm": 484.0, "learning_rate": 1.1e-07, '
            '"train_speed(iter/s)": 0.118134, "epoch": 0.0, "global_step": 1}\n'
            '{"loss": 4.96214485, "acc": 0.1484375, "grad_norm": 476.0, "learning_rate": 5.6e-07, '
            '"train_speed(iter/s)": 0.307932, "epoch": 0.0, "global_step": 5}\n')
    reader, reads = read_text(text)
    assert [(r.format, r.frame.step) for r in reads] == [("ms_swift", 1), ("ms_swift", 5)]


def test_a_file_of_only_an_auxiliary_print_is_that_format():
    # a W&B end-of-run summary pasted alone: doctor and backfill read it as wandb
    lines = ["wandb: Run summary:\n", "wandb:   actor/entropy 0.41\n", "wandb:   critic/score/mean 0.6\n"]
    assert detect(lines) == "wandb"
    # beside training records it stays auxiliary: the records decide
    assert detect(lines + ["step:1 - actor/entropy:0.5 - critic/score/mean:0.1\n"]) == "verl_console"


def test_reader_counts_start_up_banners():
    from exporter.logs import Reader
    r = Reader("auto")
    text = ("***** Running training *****\n{'loss': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
            "***** Running training *****\n{'loss': 0.4, 'learning_rate': 1e-05, 'epoch': 0.1}\n")
    seen = []
    for line in text.splitlines():
        for got in r.feed(line):
            seen.append((got.line, r.starts))
    assert seen == [(2, 1), (4, 2)]


def test_ms_swift_logging_jsonl_ending_in_its_summary_is_not_a_trainer_state():
    # ms-swift 4.0 (a 438-step LoRA SFT, logged every 10, 51 lines): its last line is a summary
    # record that carries the whole `log_history`; in a short file that line is in the sniffed
    # head, which read as a trainer_state.json document (no frames at all)
    path = RUNS / "ms_swift" / "lgc-FINANCE_DeepClima-R1_qwen3_8b_lora_sft_logging.jsonl"
    text = path.read_text(encoding="utf-8")
    assert '"log_history":' in text.splitlines()[-1]
    assert detect(text.splitlines(keepends=True), path=str(path)) == "ms_swift"
    reader, reads = read_text(text, "auto", path=str(path))
    assert reader.format != "hf_state"
    steps = [r.frame.step for r in reads if r.format == "ms_swift"]
    assert steps[:3] == [1, 10, 20] and steps[-1] == 438
    # a trainer_state.json written on one line is still a document
    assert detect([json.dumps(STATE)], path="/x/state.json") == "hf_state"


def test_kaggle_notebook_log_record_keeps_the_whole_dict():
    # a Kaggle notebook's output log is a JSON array of stream records; TRL's dict sits inside
    # the JSON-escaped "data" string, followed by the record's own closing characters
    path = RUNS / "trl" / "Rusheel86_Chaos-Economy_vsr_new_kaggle_grpo.log"
    line = next(l for l in path.read_text(encoding="utf-8").splitlines() if "{'loss'" in l)
    assert line.endswith('\\r\\n"}')
    reader, reads = read_text(line + "\n")
    assert [(r.format, r.frame.step) for r in reads] == [("hf", 5)]
    data = reads[0].frame.data
    assert data["epoch"] == 0.01 and data["reward_std"] == 2.751
    assert not reader.rejected


def test_long_startup_before_the_first_record_is_read_per_line():
    # a real Miles run log (tests/data/runs/slime): its first 2,000 lines are the Megatron
    # argument table and SGLang's start-up, the first step record is at line 2,779; the sniff
    # of the head alone read the whole file as the argument table (1 frame, steps 0..0)
    from exporter.postmortem import logs as pm_logs
    path = str(Path(__file__).resolve().parents[2] / "data" / "runs" / "slime"
               / "radixark_miles_cp2_ep8_qwen35_gdn.log")
    fmt = pm_logs.sniff(path)
    assert fmt == "auto"
    stats = pm_logs.LogStats(path)
    got = [(fr, fw) for fr, _, fw in pm_logs.frames(path, fmt, stats)]
    steps = {fr.step for fr, _ in got if "train/loss" in fr.data}
    assert steps == set(range(20))
    assert any("perf/step_time" in fr.data for fr, _ in got)
    assert {fw for _, fw in got} == {"slime"}


def test_startup_print_alone_stays_its_own_format(tmp_path):
    # a head that is only an argument table and nothing after it: still that format
    table = (Path(__file__).resolve().parents[2] / "data" / "real" / "miles"
             / "cp2_ep4_startup_arguments_table.log").read_text(encoding="utf-8")
    p = tmp_path / "args.log"
    p.write_text(table + "noise line\n" * 2000, encoding="utf-8")
    from exporter.postmortem import logs as pm_logs
    assert pm_logs.sniff(str(p)) == "megatron_args"


def test_ray_worker_line_carries_its_logging_timestamp():
    # real lines of the Miles run log: Ray's actor prefix in ANSI colour, then the logger's own
    # `[YYYY-MM-DD hh:mm:ss]`; doctor read no time from them and fell back to step durations
    import datetime as dt
    from exporter.postmortem.logs import line_time
    line = ("\x1b[36m(MegatronTrainRayActor pid=272604)\x1b[0m [2026-04-04 07:42:32] "
            "log_utils.py:443 - step 0: {'train/loss': -0.011048519052565098}")
    want = dt.datetime(2026, 4, 4, 7, 42, 32, tzinfo=dt.timezone.utc).timestamp()
    assert line_time(line, "slime") == want
    assert line_time("(LLMRayActor pid=1270, ip=10.252.173.41) [2026-04-04 07:42:32] x",
                     "slime") == want
    # a prefixed line without a logging timestamp stays without one
    assert line_time("\x1b[36m(pid=58504)\x1b[0m Reward function type: mix", "slime") is None
