"""Table-driven tests per log format, on realistic excerpts of what trainers print."""
import math

import pytest

from exporter.logs import Reader, detect, make_parser
from exporter.logs.base import clean, parse_pydict
from exporter.testing import export_frame

NAN = float("nan")


def frames(fmt, text):
    return [(f.step, f.data) for f in (r.frame for r in Reader(fmt).read(text.split("\n")))]


def same(a, b):
    """Frame lists equal, NaN == NaN."""
    assert len(a) == len(b), (a, b)
    for (sa, da), (sb, db) in zip(a, b):
        assert sa == sb, (sa, sb)
        assert set(da) == set(db), (sorted(da), sorted(db))
        for k in da:
            x, y = da[k], db[k]
            if isinstance(x, float) and math.isnan(x):
                assert isinstance(y, float) and math.isnan(y), k
            else:
                assert x == y, (k, x, y)


VERL_LINE = ("step:1 - global_seqlen/mean:14736.5 - actor/entropy:0.521308183670044 - "
             "actor/pg_loss:np.float64(-0.00461) - actor/grad_norm:np.float64(0.22915) - "
             "actor/lr:np.float64(1e-06) - training/global_step:1 - training/epoch:0 - "
             "critic/score/mean:0.4375 - response_length/mean:287.25 - num_turns/max:np.int64(3) - "
             "timing_s/gen:41.83 - perf/throughput:1523.4")
VERL_DATA = {"global_seqlen/mean": 14736.5, "actor/entropy": 0.521308183670044,
             "actor/pg_loss": -0.00461, "actor/grad_norm": 0.22915, "actor/lr": 1e-06,
             "training/global_step": 1, "training/epoch": 0, "critic/score/mean": 0.4375,
             "response_length/mean": 287.25, "num_turns/max": 3, "timing_s/gen": 41.83,
             "perf/throughput": 1523.4}

VERL_CASES = [
    ("plain", VERL_LINE, [(1, VERL_DATA)]),
    ("ray prefix", "(main_task pid=123) " + VERL_LINE, [(1, VERL_DATA)]),
    ("ray prefix with ip", "(TaskRunner pid=1, ip=10.0.0.1) " + VERL_LINE, [(1, VERL_DATA)]),
    ("ansi + CR", "\x1b[36m(TaskRunner pid=1)\x1b[0m " + VERL_LINE + "\r", [(1, VERL_DATA)]),
    ("sci, nan, inf, odd keys",
     "step:7 - actor/kl_loss:1.2e-05 - actor/pg_loss:nan - x:inf - y:-inf - "
     "val-core/openai/gsm8k/reward/mean@4:0.5 - critic/lr(1e-4):0.1 - a-b/c:-0.0",
     [(7, {"actor/kl_loss": 1.2e-05, "actor/pg_loss": NAN, "x": math.inf, "y": -math.inf,
           "val-core/openai/gsm8k/reward/mean@4": 0.5, "critic/lr(1e-4)": 0.1, "a-b/c": -0.0})]),
    ("legacy docs format", "step:0 - timing/gen:21.470 - critic/lr(1e-4):0.100",
     [(0, {"timing/gen": 21.47, "critic/lr(1e-4)": 0.1})]),
    ("duplicate key: last wins", "step:2 - a:1 - a:2", [(2, {"a": 2})]),
    ("cut before its value", "step:3 - a:1 - b:", [(3, {"a": 1})]),
    ("cut inside the key", "step:3 - a:1 - bb", [(3, {"a": 1})]),
    ("hard-wrapped mid value",
     "step:4 - actor/entropy:0.52\n13 - actor/pg_loss:np.float6\n4(-0.1) - z:1",
     [(4, {"actor/entropy": 0.5213, "actor/pg_loss": -0.1, "z": 1})]),
    ("wrapped inside the separator", "step:4 - a:0.5 -\n b:2", [(4, {"a": 0.5, "b": 2})]),
    ("wrapped after ray prefix added",
     "(main_task pid=1) step:5 - a:0.5 - b\n(main_task pid=1) :2 - c:3",
     [(5, {"a": 0.5, "b": 2, "c": 3})]),
    ("fragment after an unrelated line is skipped, not attributed",
     "step:6 - a:0.5 - b:1\nINFO something else happened\nc:3 - d:4\nstep:7 - a:0.6",
     [(6, {"a": 0.5, "b": 1}), (7, {"a": 0.6})]),
    ("prose is never a continuation", "step:8 - a:0.5\nTraining done.", [(8, {"a": 0.5})]),
    ("word fused to the value is not a continuation", "step:8 - a:0.5\ndone.", [(8, {"a": 0.5})]),
    ("non-metric lines", "Training Progress: 10%|█ | 1/10\nfoo: bar - baz", []),
    ("CRI partial lines rejoined",
     "2026-08-21T17:14:19.000000001Z stdout P step:9 - a:0.\n"
     "2026-08-21T17:14:19.000000002Z stdout F 25 - b:1",
     [(9, {"a": 0.25, "b": 1})]),
]


@pytest.mark.parametrize("name,text,want", VERL_CASES, ids=[c[0] for c in VERL_CASES])
def test_verl_console(name, text, want):
    same(frames("verl_console", text), want)


def test_verl_console_counts_rejections():
    p = make_parser("verl_console")
    for line in ["step:1 - a:1 - a:2 - b:", "step:2 - c:zz"]:
        p.feed(line)
    p.flush()
    assert p.rejected["duplicate_key"] == 1
    assert p.rejected["no_value"] == 1
    assert p.rejected["malformed"] == 1


def test_verl_console_exports_the_same_series_as_the_hook():
    (step, data), = frames("verl_console", VERL_LINE)

    def series(frame, step):
        return {k: v for k, v in export_frame(frame, "verl", step=step).items()
                if "timestamp" not in k[0] and not k[0].startswith("rl_exporter_frame_processing_seconds")
                and k[0] != "rl_goodput_seconds_total"}  # wall time: the start-up differs
    got = series(data, step)
    assert got == series(VERL_DATA, 1)
    assert got[("rl_entropy", ())] == 0.521308183670044 and got[("rl_training_step", ())] == 1


JSONL_CASES = [
    ("orjson line",
     '{"step":1,"data":{"actor/entropy":0.52,"actor/lr":1e-6,"actor/pg_loss":null,"num_turns/max":3}}',
     [(1, {"actor/entropy": 0.52, "actor/lr": 1e-6, "actor/pg_loss": None, "num_turns/max": 3})]),
    ("val before train", '{"step":0,"data":{"val-core/gsm8k/reward/mean@1":0.4}}',
     [(0, {"val-core/gsm8k/reward/mean@1": 0.4})]),
    ("garbage and torn lines", 'not json\n{"step":1,"data":{"a":1\n{"step":2}', []),
]


@pytest.mark.parametrize("name,text,want", JSONL_CASES, ids=[c[0] for c in JSONL_CASES])
def test_verl_jsonl(name, text, want):
    same(frames("verl_jsonl", text), want)


HF_DICT = ("{'loss': 0.0123, 'grad_norm': 0.2282, 'learning_rate': 2e-05, 'num_tokens': 400.0, "
           "'rewards/accuracy_reward/mean': 0.4375, 'reward': 0.4375, 'entropy': nan, "
           "'clip_ratio/low_mean': -0.0, 'epoch': 0.01}")
HF_DATA = {"loss": 0.0123, "grad_norm": 0.2282, "learning_rate": 2e-05, "num_tokens": 400.0,
           "rewards/accuracy_reward/mean": 0.4375, "reward": 0.4375, "entropy": NAN,
           "clip_ratio/low_mean": -0.0, "epoch": 0.01}
HF_CASES = [
    ("printed dict", HF_DICT, [(None, HF_DATA)]),
    ("tqdm bar fused", " 10%|█         | 5/50 [00:30<04:30,  6.00s/it]" + HF_DICT, [(5, HF_DATA)]),
    ("tqdm redraws with CR",
     "\r  8%|▊         | 4/50 [00:24<04:36]\r 10%|█         | 5/50 [00:30<04:30]" + HF_DICT,
     [(5, HF_DATA)]),
    ("eval dict takes the last step",
     " 10%|█ | 5/50 [00:30<04:30]" + HF_DICT + "\n{'eval_loss': 0.5, 'eval_reward': inf, "
     "'eval_runtime': 1.5, 'epoch': 0.01}",
     [(5, HF_DATA), (5, {"eval_loss": 0.5, "eval_reward": math.inf, "eval_runtime": 1.5,
                         "epoch": 0.01})]),
    ("string values kept",
     "{'train_runtime': 10.0, 'status': 'ok', 'epoch': 1.0}",
     [(None, {"train_runtime": 10.0, "status": "ok", "epoch": 1.0})]),
    ("a config dict is not metrics", "{'model_name': 'qwen', 'lr_scheduler': 'cosine'}", []),
]


@pytest.mark.parametrize("name,text,want", HF_CASES, ids=[c[0] for c in HF_CASES])
def test_hf_console(name, text, want):
    same(frames("hf", text), want)


def test_hf_trainer_state_high_water_mark():
    p = make_parser("hf_state")
    doc1 = ('{"global_step": 2, "log_history": [{"loss": 0.5, "step": 1}, {"loss": NaN, "step": 2},'
            ' {"eval_loss": 0.7, "step": 2}]}')
    doc2 = ('{"global_step": 3, "log_history": [{"loss": 0.5, "step": 1}, {"loss": NaN, "step": 2},'
            ' {"eval_loss": 0.7, "step": 2}, {"loss": Infinity, "step": 3}]}')
    got1 = [(f.step, f.data) for f in p.feed_document(doc1)]
    same(got1, [(1, {"loss": 0.5}), (2, {"loss": NAN}), (2, {"eval_loss": 0.7})])
    q = make_parser("hf_state")
    q.restore(p.checkpoint())  # what serve keeps in its state file
    same([(f.step, f.data) for f in q.feed_document(doc2)], [(3, {"loss": math.inf})])
    assert q.feed_document("{ torn") == [] and q.rejected["bad_json"] == 1


OPENRLHF_CASES = [
    ("sync trainer",
     "INFO 08-13 19:25:45 ppo_trainer.py:547] ✨ Global step 12: {'policy_loss': -0.0012, "
     "'actor_lr': 1e-06, 'reward': 0.5, 'timing/step_total': 119.0}",
     [(12, {"policy_loss": -0.0012, "actor_lr": 1e-06, "reward": 0.5, "timing/step_total": 119.0})]),
    ("async trainer, then tqdm postfix",
     "INFO 08-13 19:25:45 ppo_trainer_async.py:300] Global step 3: {'reward': 0.25}\n"
     "Episode [1/20]:  50%|█████     | 5/10 [01:00<01:00, 12.0s/it, act_loss=-0.0012, reward=0.5, "
     "gen_len=412, kl=0.0003, act_lr=1e-6]",
     [(3, {"reward": 0.25}),
      (3, {"act_loss": -0.0012, "reward": 0.5, "gen_len": 412, "kl": 0.0003, "act_lr": 1e-6})]),
    ("eval",
     "INFO 08-13 19:30:00 ppo_trainer.py:600] ✨ Evaluation completed in 3.10s, global_step 20, "
     "eval_metrics: {'eval_gsm8k_pass1': 0.61, 'eval_num_samples': 1319}",
     [(20, {"eval_gsm8k_pass1": 0.61, "eval_num_samples": 1319})]),
]


@pytest.mark.parametrize("name,text,want", OPENRLHF_CASES, ids=[c[0] for c in OPENRLHF_CASES])
def test_openrlhf(name, text, want):
    same(frames("openrlhf", text), want)


SLIME_CASES = [
    ("slime train step",
     "[2026-08-21 17:14:19] model.py:918 - step 7: {'train/loss': -0.0031, 'train/ppo_kl': 1.3e-05, "
     "'train/lr-pg_0': 1e-06, 'train/step': 7}",
     [(7, {"train/loss": -0.0031, "train/ppo_kl": 1.3e-05, "train/lr-pg_0": 1e-06, "train/step": 7})]),
    ("slime perf and rollout",
     "[2026-08-21 17:15:02] rollout.py:120 - perf 3: {'perf/rollout_time': 41.2}\n"
     "[2026-08-21 17:15:02] data.py:88 - rollout 3: {'rollout/rewards': nan}\n"
     "[2026-08-21 17:15:03] train.py:10 - starting step 4",
     [(3, {"perf/rollout_time": 41.2}), (3, {"rollout/rewards": NAN})]),
    # two train steps per rollout (rollout_batch_size 8 x n_samples 8 / global_batch_size 32, a
    # Miles run's shape): a rollout's records come between train steps and carry the last one,
    # so the step never goes back (rollout 2 after train step 3 read as a restart)
    ("slime rollouts between two train steps each",
     "(RolloutManager pid=1) [2026-04-04 06:30:27] rollout.py:1132 - perf 0: {'perf/rollout_time': 150.0}\n"
     "(MegatronTrainRayActor pid=2) [2026-04-04 06:33:06] log_utils.py:443 - step 0: {'train/loss': 0.1}\n"
     "(MegatronTrainRayActor pid=2) [2026-04-04 06:33:41] log_utils.py:443 - step 1: {'train/loss': 0.2}\n"
     "(MegatronTrainRayActor pid=2) [2026-04-04 06:33:42] train_metric_utils.py:44 - perf 0: {'perf/step_time': 195.0}\n"
     "(RolloutManager pid=1) [2026-04-04 06:35:28] rollout.py:1132 - perf 1: {'perf/rollout_time': 106.0}\n"
     "(MegatronTrainRayActor pid=2) [2026-04-04 06:37:31] log_utils.py:443 - step 2: {'train/loss': 0.3}",
     [(0, {"perf/rollout_time": 150.0}), (0, {"train/loss": 0.1}), (1, {"train/loss": 0.2}),
      (1, {"perf/step_time": 195.0}), (1, {"perf/rollout_time": 106.0}), (2, {"train/loss": 0.3})]),
]


@pytest.mark.parametrize("name,text,want", SLIME_CASES, ids=[c[0] for c in SLIME_CASES])
def test_slime(name, text, want):
    same(frames("slime", text), want)


def test_miles():
    text = ("[2026-08-21 18:09:36.123 actor_cell0_rank0] log_utils.py:542 - step 7: "
            "{'train/loss': -0.0031, 'train/step': 7}")
    same(frames("miles", text), [(7, {"train/loss": -0.0031, "train/step": 7})])
    assert detect([text]) == "miles"
    assert make_parser("miles").framework == "miles"


AREAL_TABLE = """\x1b[37m(AReaL) 20260822-09:03:26.123 StatsLogger INFO: Epoch 1/3 Step 5/100 Train step 5/300 done.\x1b[0m
(AReaL) 20260822-09:03:26.124 StatsLogger INFO: Stats (1/1):
(AReaL) 20260822-09:03:26.125 StatsLogger INFO: 
╒══════════════════════════╤═════════════╤═════════════════════════════════╤═════════════╕
│ ppo_actor/advantages/avg │ 1.2340e-03  │ ppo_actor/update/actor_loss/avg │ -4.6100e-03 │
├──────────────────────────┼─────────────┼─────────────────────────────────┼─────────────┤
│ ppo_actor/advantages/max │ 2.1000e+00  │ ppo_actor/update/clip_ratio/avg │ nan         │
├──────────────────────────┼─────────────┼─────────────────────────────────┼─────────────┤
│ timeperf/rollout         │ 4.1200e+01  │                                 │             │
╘══════════════════════════╧═════════════╧═════════════════════════════════╧═════════════╛"""
AREAL_DATA = {"ppo_actor/advantages/avg": 1.234e-03, "ppo_actor/update/actor_loss/avg": -4.61e-03,
              "ppo_actor/advantages/max": 2.1, "ppo_actor/update/clip_ratio/avg": NAN,
              "timeperf/rollout": 41.2}


def test_areal_table():
    same(frames("areal", AREAL_TABLE), [(4, AREAL_DATA)])


def test_areal_table_not_closed_is_flushed():
    text = "\n".join(AREAL_TABLE.split("\n")[:-1]) + "\nsomething else"
    same(frames("areal", text), [(4, AREAL_DATA)])


def test_areal_pending_while_table_open():
    p = make_parser("areal")
    lines = AREAL_TABLE.split("\n")
    for line in lines[:-1]:
        assert p.feed(clean(line)) == []
    assert p.pending
    assert len(p.feed(lines[-1])) == 1 and not p.pending


SPOOL_CASES = [
    ("strict non-finite encodings",
     '{"spool":1,"ts":1.0,"framework":"verl","step":3,"data":{"a":"NaN","b":"Infinity",'
     '"c":"-Infinity","d":null,"e":"warmup","f":2}}',
     [(3, {"a": NAN, "b": math.inf, "c": -math.inf, "d": None, "e": "warmup", "f": 2})]),
    ("python's bare NaN accepted", '{"spool":1,"step":null,"data":{"a":NaN}}', [(None, {"a": NAN})]),
    ("wrong version / nested values rejected",
     '{"spool":2,"data":{"a":1}}\n{"spool":1,"data":{"a":[1]}}', []),
]


@pytest.mark.parametrize("name,text,want", SPOOL_CASES, ids=[c[0] for c in SPOOL_CASES])
def test_spool(name, text, want):
    same(frames("spool", text), want)


def test_spool_round_trip():
    from exporter.logs.spool import encode
    data = {"a": NAN, "b": -math.inf, "c": 1, "d": None, "e": "s"}
    same(frames("spool", encode(4, data, run="r")), [(4, data)])


DETECT = [
    (VERL_LINE, "verl_console"),
    ('{"step":1,"data":{"a":1}}', "verl_jsonl"),
    (HF_DICT, "hf"),
    ("INFO 08-13 19:25:45 ppo_trainer.py:547] ✨ Global step 12: {'reward': 0.5}", "openrlhf"),
    ("[2026-08-21 17:14:19] model.py:918 - step 7: {'train/loss': -0.0031}", "slime"),
    ("(AReaL) 20260822-09:03:26.123 StatsLogger INFO: Stats (1/1):", "areal"),
    ('{"spool":1,"data":{}}', "spool"),
    ("nothing to see here", None),
]


@pytest.mark.parametrize("line,fmt", DETECT)
def test_detect(line, fmt):
    assert detect(["noise", line, "more noise"]) == fmt


def test_pydict_edge_cases():
    d, bad = parse_pydict("{'a': np.float64(0.5), 'b': [1, 2], 'c\\'q': -1e-3, \"d\": None}")
    assert d == {"a": 0.5, "c'q": -1e-3, "d": None} and bad == 1
    assert parse_pydict("not a dict") == (None, 0)
