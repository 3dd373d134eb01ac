"""The trainer configuration printed at start-up, read from real runs (tests/data/real): the
settings the alert rules need, as config/<parameter> keys of one frame without a step."""
from pathlib import Path

from exporter.logs import Reader, clean, detect_format, detect_line, make_parser

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
VERL = "verl/play_verl_ppo_config_dump_to_step1.log"
MILES = "miles/cp2_ep4_startup_arguments_table.log"


def lines(rel):
    return (REAL / rel).read_text(encoding="utf-8").split("\n")


def frames(rel, fmt="auto"):
    return [r.frame for r in Reader(fmt).read(lines(rel))]


def test_verl_hydra_config_pprint():
    got = [f for f in frames(VERL) if any(k.startswith("config/") for k in f.data)]
    assert len(got) == 1 and got[0].step is None
    # data.train_batch_size 2048 / actor.ppo_mini_batch_size 512 * ppo_epochs 1
    assert got[0].data == {"config/n_mini": 4.0, "config/max_grad_norm": 1.0,
                           "config/max_response_length": 256,
                           "config/rollout_gpu_memory_utilization": 0.6}
    # the step records after the dump are still read
    assert [f.step for f in frames(VERL) if f.step is not None] == [1]


def test_verl_config_lines_of_other_actors_pass_by():
    text = lines(VERL)
    worker = next(x for x in text if "(WorkerDict pid=" in x)
    spliced = text[:50] + [worker] + text[50:]
    got = [r.frame for r in Reader("auto").read(spliced) if "config/n_mini" in r.frame.data]
    assert got[0].data["config/n_mini"] == 4.0


def test_verl_config_never_closed_is_counted():
    p = make_parser("verl_config")
    for x in lines(VERL)[1:60]:
        assert p.feed(clean(x)) == []
    assert p.pending
    assert p.flush() == [] and p.rejected["unclosed_config"] == 1


def test_miles_argument_table():
    got = frames(MILES)
    assert len(got) == 1 and got[0].step is None
    # num_steps_per_rollout None: rollout_batch_size 8 * n_samples_per_prompt 8 / global_batch_size 32
    assert got[0].data == {"config/n_mini": 2.0, "config/max_grad_norm": 1.0,
                           "config/max_response_length": 8192.0,
                           "config/rollout_gpu_memory_utilization": 0.7}


def test_config_prints_are_auxiliary():
    start = next(x for x in lines(MILES) if "arguments ---" in x)
    assert detect_format(start) == "megatron_args" and detect_line(start) is None
    dump = lines(VERL)[1]
    assert detect_format(dump) == "verl_config" and detect_line(dump) is None


def test_verl_v01_config_pprint_before_250_noise_lines():
    # veRL v0.1 (2024-12), another run and another print width
    got = [f for f in frames("verl/verldata_qwen05b_ppo_250_noise_lines_first.log")
           if "config/n_mini" in f.data]
    assert got[0].data == {"config/n_mini": 4.0, "config/max_grad_norm": 1.0,
                           "config/max_response_length": 512,
                           "config/rollout_gpu_memory_utilization": 0.4}


def test_verl_total_training_steps_when_set():
    # the real dump has trainer.total_training_steps None (derived from the epochs): no total;
    # a set value is read
    text = [x.replace("'total_training_steps': None", "'total_training_steps': 400") for x in lines(VERL)]
    got = [r.frame for r in Reader("auto").read(text) if "config/n_mini" in r.frame.data]
    assert got[0].data["config/total_training_steps"] == 400
    assert "config/total_training_steps" not in frames(VERL)[0].data
