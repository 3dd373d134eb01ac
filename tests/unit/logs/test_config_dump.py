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
    # actor.use_kl_loss False (kl_loss_coef 0.001 unused), algorithm.use_kl_in_reward False,
    # hybrid_engine True and no v1 trainer: the synchronous colocated trainer
    assert got[0].data == {"config/n_mini": 4.0, "config/max_grad_norm": 1.0,
                           "config/max_response_length": 256,
                           "config/rollout_gpu_memory_fraction": 0.6,
                           "config/kl_loss_coef": 0.0, "config/kl_reward_coef": 0.0,
                           "config/async_training": 0.0, "config/colocated": 1.0}
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
    # --colocate (train_async.py refuses it: synchronous), --use-kl-loss with --kl-loss-coef 0.00
    assert got[0].data == {"config/n_mini": 2.0, "config/max_grad_norm": 1.0,
                           "config/max_response_length": 8192.0,
                           "config/rollout_gpu_memory_fraction": 0.7,
                           "config/pi_old_from_rollout": 0.0, "config/kl_loss_coef": 0.0,
                           "config/kl_reward_coef": 0.0, "config/colocated": 1.0,
                           "config/async_training": 0.0, "config/update_weights_interval": 1.0}


def test_argument_rows_whose_name_leaves_no_room_for_dots():
    p = make_parser("megatron_args")
    rows = ["------------------------ arguments ------------------------",
            "  sglang_disaggregation_decode_enable_offload_kvcache  False",
            "  use_rollout_logprobs ............................ True",
            "-------------------- end of arguments ---------------------"]
    out = [f for x in rows for f in p.feed(x)]
    assert out[0].data["config/pi_old_from_rollout"] == 1.0


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
                           "config/rollout_gpu_memory_fraction": 0.4,
                           "config/async_training": 0.0, "config/colocated": 1.0}


RUNS = Path(__file__).resolve().parents[2] / "data" / "runs" / "verl"


def run_frames(name):
    text = (RUNS / name).read_text(encoding="utf-8", errors="replace").split("\n")
    p = make_parser("verl_config")
    out = [f for x in text for f in p.feed(clean(x))] + p.flush()
    return out, dict(p.rejected)


def test_a_line_another_process_spliced_into_the_dump_is_cut():
    # resp256: `'experiment_name': 'gemma2b_function_rm',(pid=934604) ` (another writer's
    # line glued on): the dump closes 55 lines later and is read whole
    got, rejected = run_frames("eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-resp256.log")
    assert rejected == {} and len(got) == 1
    assert got[0].data["config/max_response_length"] == 256 and got[0].data["config/n_mini"] == 4.0


def test_a_line_lost_from_the_dump_is_found_by_its_indentation():
    # gemma2: `'param_offload': False},` of reward_model.model.fsdp_config is replaced by
    # `commit:` in the log, and a worker's line is spliced into trainer.experiment_name
    got, rejected = run_frames("eric-haibin-lin_verl-data_gemma2-2b-ppo-gsm8k.log")
    assert rejected == {"config_line_lost": 1} and len(got) == 1
    assert got[0].data["config/max_response_length"] == 512      # data.max_response_length
    assert got[0].data["config/n_mini"] == 4.0                   # 512 / 128
    assert got[0].data["config/rollout_gpu_memory_fraction"] == 0.4


def test_verl_clip_is_read_from_optim_clip_grad_first():
    # 0.9.1 clips with actor.optim.clip_grad (fsdp/transformer_impl.py:806); actor.grad_clip
    # is the deprecated field (workers/config/optimizer.py:54-61)
    from exporter.logs.config_dump import verl_settings
    cfg = {"actor_rollout_ref": {"actor": {"grad_clip": 1.0, "optim": {"clip_grad": 0.5}}}}
    assert verl_settings(cfg)["config/max_grad_norm"] == 0.5


def test_verl_total_training_steps_when_set():
    # the real dump has trainer.total_training_steps None (derived from the epochs): no total;
    # a set value is read
    text = [x.replace("'total_training_steps': None", "'total_training_steps': 400") for x in lines(VERL)]
    got = [r.frame for r in Reader("auto").read(text) if "config/n_mini" in r.frame.data]
    assert got[0].data["config/total_training_steps"] == 400
    assert "config/total_training_steps" not in frames(VERL)[0].data
