"""Per-line format detection, the auto parser on mixed files, the near-miss hint, and the
formats added for older and other releases (ms-swift, W&B summaries, veRL validation
dicts, old AReaL tables, wrapped slime dicts, OpenRLHF tqdm postfixes)."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.logs import Reader, detect_format, detect_line, make_parser, near_miss

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text(encoding="utf-8"))


def frames(fmt, text):
    return [(f.step, f.data) for f in (r.frame for r in Reader(fmt).read(text.split("\n")))]


def auto(lines):
    p = make_parser("auto")
    out = []
    for line in lines:
        got = p.feed(line)
        out += zip(p.formats, got)
    got = p.flush()
    out += zip(p.formats, got)
    return out


def real_lines(rel):
    return (REAL / rel).read_text(encoding="utf-8").split("\n")


# ------------------------------------------------------------------ detection on real files
@pytest.mark.parametrize("rel", sorted(MANIFEST))
def test_auto_detects_the_manifest_format(rel):
    from exporter.logs import clean
    got = {fmt for fmt, _ in auto(clean(line) for line in real_lines(rel))}
    assert MANIFEST[rel]["format"] in got, (rel, got)


def test_metrics_after_hundreds_of_noise_lines():
    rel = "verl/verldata_qwen05b_ppo_250_noise_lines_first.log"
    lines = real_lines(rel)
    # the start-up config dump is read too (auxiliary, like the validation dict)
    config = next(i for i, line in enumerate(lines, 1) if detect_format(line))
    assert detect_format(lines[config - 1]) == "verl_config"
    first = next(i for i, line in enumerate(lines, 1)
                 if detect_format(line) not in (None, "verl_config"))
    assert first > 200
    assert detect_line(lines[first - 1]) is None  # the initial validation dict
    assert detect_line(lines[first]) == "verl_console"
    assert len([f for fmt, f in auto(lines) if fmt == "verl_console"]) == 3


def test_interleaved_formats_yield_frames_of_each():
    a = real_lines("verl/issue2060_val_then_train.log")
    b = real_lines("slime/issue1837_perf_with_ray_prefix.log")
    c = real_lines("trl/openr1_255_grpo_printed.log")
    d = real_lines("areal/issue110_masterworker_ansi_residue.log")
    mixed = []
    for i in range(max(map(len, (a, b, c, d)))):
        for src in (a, b, c, d):
            if i < len(src):
                mixed.append(src[i])
    alone = sum(len(auto(src)) for src in (a, b, c, d))
    got = auto(mixed)
    assert {fmt for fmt, _ in got} == {"verl_console", "slime", "hf", "areal"}
    assert len(got) == alone
    # each frame's data is the same as when its file is read alone
    ver = [f for fmt, f in got if fmt == "verl_console"]
    assert ver[1].data["actor/pg_loss"] == 0.001 and ver[1].step == 1


DETECT = [
    ("{'loss': 1.4, 'epoch': 0.01, 'global_step/max_steps': '1/94', 'memory(GiB)': 4.8}", "ms_swift"),
    ('{"loss": 0.0, "reward": 0.0, "global_step/max_steps": "1/10000"}', "ms_swift"),
    ("{'loss': 1.8, 'acc': 0.6, 'epoch': 0.01, 'global_step': 1}", "ms_swift"),
    ("(TaskRunner pid=1) wandb:   actor/entropy 0.06955", "wandb"),
    ("wandb:   actor/entropy ▁▂▃█", None),
    ("wandb: Tracking run with wandb version 0.18.7", None),
    ("(main_task pid=5) \"Initial validation metrics: {'test_score/openai/gsm8k': 0.0007}\"", "verl_validation"),
    ("(RolloutManager pid=1) [2026-04-15 07:57:53] rollout.py:1193 - perf 0: {'perf/rollout_time': 3.2}", "slime"),
    ("INFO:lumen.models.dsv4.megatron.finetune_loop:step 0: {'train/loss': 0.1}", "slime"),
    ("[2026-08-21 18:09:36.123 actor_cell0_rank0] log_utils.py:542 - step 7: {'train/loss': 0.1}", "miles"),
    ("(MasterWorker pid=1) │ ppo_actor/new_logp/min │ -1.8766e+01 │", "areal"),
    ("(MasterWorker pid=1) ╘══════╧══════╛", "areal"),
    ("Train epoch [1/1]: 100%|██████████| 4/4 [00:10<00:00,  2.50s/it, pg=-0.156, rm=0.25]", "openrlhf"),
    ("Processed prompts: 100%|██████████| 16/16 [00:12<00:00,  1.25it/s]", None),
    ("| actor/lr | 0.0 | Learning rate decayed |", "areal"),
    ("│ What is 2+2? Answer: │ yes │ 1.0 │", None),  # a rich table of TRL completions
    ("┃ Step ┃ Prompt ┃ Completion ┃ accuracy_reward ┃", None),
]


@pytest.mark.parametrize("line,fmt", DETECT)
def test_detect_format(line, fmt):
    assert detect_format(line) == fmt
    # what a follower locks onto: never an auxiliary print that precedes the real records
    assert detect_line(line) == (None if fmt in ("wandb", "verl_validation") else fmt)


# ------------------------------------------------------------------ near misses
def test_near_miss_names_the_closest_format_and_line():
    lines = ["INFO starting", "epoch 1 step 3 actor/pg_loss=0.1 critic/score/mean=0.5", "done"]
    assert all(detect_format(line) is None for line in lines)
    fmt, n, line = near_miss(lines)
    assert (fmt, n) == ("verl_console", 2) and "actor/pg_loss" in line
    assert near_miss(["hello", "world 1"]) is None


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "exporter.cli", "parse", *args],
                          capture_output=True, text=True, timeout=60)


def test_parse_cli_says_what_nearly_matched(tmp_path):
    f = tmp_path / "train.log"
    f.write_text("loading\nepoch 1 step 3 actor/pg_loss=0.1 critic/score/mean=0.5\n")
    r = _cli(str(f))
    assert r.returncode == 1
    assert "no known metrics format found; closest: verl_console, line 2" in r.stderr


def test_parse_cli_json_shape_on_a_mixed_file(tmp_path):
    f = tmp_path / "mixed.log"
    f.write_text("\n".join(real_lines("verl/issue2060_val_then_train.log")
                           + real_lines("slime/issue1837_perf_with_ray_prefix.log")))
    r = _cli(str(f), "--json")
    assert r.returncode == 0, r.stderr
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["format"], x["line"], x["step"]) for x in recs] == [
        ("verl_console", 1, 0), ("verl_console", 3, 1), ("slime", 6, 0)]
    assert {"file", "line", "format", "framework", "step", "data", "series"} <= set(recs[0])
    assert recs[1]["series"]["actor/pg_loss"]["metric"].startswith("rl_")


# ------------------------------------------------------------------ the formats
def test_ms_swift_values_steps_and_shapes():
    text = "\n".join([
        "{'loss': '1.461', 'grad_norm': '1.705', 'epoch': '0.016', 'global_step/max_steps': '1/189', "
        "'elapsed_time': '2m 41s', 'memory(GiB)': '67.95'}",
        '{"loss": -0.0, "reward": 0.7, "rewards/Acc/mean": 0.5, "global_step/max_steps": "9/547", '
        '"percentage": "1.65%", "train_speed(iter/s)": 0.003308}',
        "'loss': -0.0, 'kl': 0.0, 'global_step/max_steps': '5/3766', 'remaining_time': '18h'}",
        "{'loss': 1.82, 'acc': 0.62, 'epoch': 0.01, 'global_step': 1}",
    ])
    assert frames("ms_swift", text) == [
        (1, {"loss": 1.461, "grad_norm": 1.705, "epoch": 0.016, "memory(GiB)": 67.95}),
        (9, {"loss": -0.0, "reward": 0.7, "rewards/Acc/mean": 0.5, "train_speed(iter/s)": 0.003308}),
        (5, {"loss": -0.0, "kl": 0.0}),
        (1, {"loss": 1.82, "acc": 0.62, "epoch": 0.01, "global_step": 1}),
    ]


def test_wandb_summary_block():
    text = "\n".join([
        "(TaskRunner pid=1) wandb: Run history:",
        "(TaskRunner pid=1) wandb:       actor/entropy █▆▆▄▄▃▂▂",
        "(TaskRunner pid=1) wandb: ",
        "(TaskRunner pid=1) wandb: Run summary:",
        "(TaskRunner pid=1) wandb:       actor/entropy 0.06955",
        "(TaskRunner pid=1) wandb:        actor/ppo_kl 7e-05",
        "(TaskRunner pid=1) wandb: training/global_step 105",
        "(TaskRunner pid=1) wandb: ",
        "wandb: 🚀 View run x at: https://wandb.ai/x",
    ])
    assert frames("wandb", text) == [
        (105, {"actor/entropy": 0.06955, "actor/ppo_kl": 7e-05, "training/global_step": 105})]


def test_verl_validation_dicts_take_steps():
    lines = ["(main_task pid=1) \"Initial validation metrics: {'test_score/openai/gsm8k': 0.25}\"",
             "(main_task pid=1) step:0 - a:1",
             "(main_task pid=1) step:7 - a:2",
             "(main_task pid=1) \"Final validation metrics: {'test_score/openai/gsm8k': 0.5}\""]
    got = [(fmt, f.step, f.data) for fmt, f in auto(lines)]
    assert got[0] == ("verl_validation", 0, {"test_score/openai/gsm8k": 0.25})
    assert got[-1] == ("verl_validation", 7, {"test_score/openai/gsm8k": 0.5})


def test_areal_table_with_interleaved_actor_lines_and_shifted_cells():
    text = "\n".join([
        "(MasterWorker pid=1) ╒══════╤══════╕",
        "(MasterWorker pid=1) │ a/x │ 1.0e+00 │ a/y │ nan │",
        "(OtherWorker pid=2) something unrelated 12",
        "... 1.5e+00 │ a/z │ -2.0e+00 │",
        "(MasterWorker pid=1) ╘══════╧══════╛",
    ])
    (step, data), = frames("areal", text)
    assert data["a/x"] == 1.0 and math.isnan(data["a/y"]) and data["a/z"] == -2.0
    assert set(data) == {"a/x", "a/y", "a/z"}


def test_slime_dict_wrapped_inside_a_number_is_rejoined():
    text = "perf 3: {'perf/a': 1.25, 'perf/b': 245.81\n42, 'perf/c': 3}\nstep 3: {'train/loss': 0.5}"
    assert frames("slime", text) == [(3, {"perf/a": 1.25, "perf/b": 245.8142, "perf/c": 3}),
                                     (3, {"train/loss": 0.5})]


def test_slime_unclosed_dict_is_counted_not_attributed():
    p = make_parser("slime")
    assert p.feed("perf 3: {'perf/a': 1.25, 'perf/b'") == [] and p.pending
    assert p.feed("step 4: {'train/loss': 0.5}") == [(4, {"train/loss": 0.5})]
    assert p.rejected["unclosed_dict"] == 1


def test_openrlhf_old_tqdm_postfix():
    line = ("(ActorModelRayActor pid=1) Train epoch [1/1]: 100%|██████████| 4/4 [00:10<00:00,  "
            "2.50s/it, pg=-0.156, rm=0.25, ret=0.25, glen=770, tlen=862, kl=0, act_lr=2.03e-8]")
    got = auto([line])
    assert [fmt for fmt, _ in got] == ["openrlhf"]
    assert got[0][1].data == {"pg": -0.156, "rm": 0.25, "ret": 0.25, "glen": 770, "tlen": 862,
                              "kl": 0, "act_lr": 2.03e-8}


def test_openrlhf_bar_quoted_without_description_unwraps_torch_values():
    # tests/data/real/openrlhf/shisa_v2_sft_bar_tensor_lr.log (train_sft, 2025)
    line = ("# 14/2826 [17:16<36:13:38, 46.38s/it, gpt_loss=1.06, lr=tensor(5.3821e-07), "
            "aux_loss=8.45]")
    got = auto([line])
    assert [fmt for fmt, _ in got] == ["openrlhf"]
    assert got[0][1] == (None, {"gpt_loss": 1.06, "lr": 5.3821e-07, "aux_loss": 8.45})


def test_openrlhf_early_status_dict():
    # tests/data/real/openrlhf/issue91_train_epoch_bar_and_status_dict.log (2023-08)
    bar, status = real_lines("openrlhf/issue91_train_epoch_bar_and_status_dict.log")[:2]
    assert detect_format(status) == "openrlhf"
    got = auto([bar, status])
    # the bar was cut off by the reporter mid-postfix ("vals=0" may be "vals=0.28..."):
    # it yields nothing rather than a wrong value
    assert [fmt for fmt, _ in got] == ["openrlhf"]
    step, data = got[0][1]
    assert step is None
    assert data["glen"] == 942.7006952991225 and data["k_coef"] == 0.01
    assert set(data) == {"pg", "cri", "vals", "kl", "rm", "ret", "glen", "tlen", "k_coef"}
    # an HF dict that shares a key is not taken for it
    assert detect_format("{'loss': 0.5, 'kl': 0.01, 'epoch': 1.0}") == "hf"


def test_verl_validation_pprint_wrapped_over_lines_is_rejoined():
    # tests/data/real/verl/play_verl_qwen2_7b_min_last_steps.log: the final validation string
    # pprinted as four concatenated pieces behind the TaskRunner prefix, after step 140
    got = [(fmt, f) for fmt, f in auto(clean_lines("verl/play_verl_qwen2_7b_min_last_steps.log"))
           if fmt == "verl_validation"]
    assert len(got) == 1
    step, data = got[0][1]
    assert step == 140
    assert data == {"val-core/openai/gsm8k/reward/mean@1": 0.821076573161486,
                    "val-aux/openai/gsm8k/reward/std@1": 0.0,
                    "val-core/openai/gsm8k/reward/best@1/mean": 0.821076573161486,
                    "val-aux/openai/gsm8k/reward/worst@1/mean": 0.821076573161486}


def clean_lines(rel):
    from exporter.logs import clean
    return [clean(x) for x in real_lines(rel)]
