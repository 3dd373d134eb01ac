"""reduce_across_ranks on real torch.distributed (gloo, CPU), 2 and 4 processes.

One spawned group per world size runs every check (uneven shards, keys present on
some ranks only, NaN on one rank, zero weights, integer extrema, collective counts,
rank-0-only export) and returns its results; the parent asserts them, including
that every rank got the same frame.
"""
import math
import os
import pickle
import tempfile

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from exporter.catalog import CATALOG, Catalog  # noqa: E402
from exporter.catalog.model import Vocabulary, alias  # noqa: E402
from tests.helpers import free_port  # noqa: E402

pytestmark = pytest.mark.integration

_K = {
    "train/clip_frac": alias("rl_policy_clip_ratio", weight="train/valid_token_count"),
    "train/valid_token_count": alias("rl_valid_tokens"),
    "train/kl_mean": alias("rl_reference_kl", weight="train/valid_token_count"),
    "train/kl_max": alias("rl_reference_kl", stat="max"),
    "train/reward_min": alias("rl_reward", stat="min"),
    "train/response_len_max": alias("rl_response_length_tokens", stat="max"),
    "train/logprob_gap_mean": alias("rl_train_inference_logprob_abs_diff"),
    "train/logprob_gap_token_count": alias("rl_train_inference_tokens"),
    "train/grad_norm": alias("rl_grad_norm"),
    "train/loss_avg": alias("rl_loss", weight="train/valid_token_count"),
}
PT = Catalog(list(CATALOG.metrics.values()), [Vocabulary("pt", "posttrain-like", keys=_K)])


def tokens(r):
    return 10 * (r + 1) ** 2  # uneven shards: 10, 40, 90, 160 tokens


def clipped(r):
    return r + 1  # clipped tokens per rank


class _FakeExporter:
    framework = "pt"
    catalog = PT

    def __init__(self):
        self.logged = []
        self.windows_ended = 0

    def log(self, frame, step=None):
        self.logged.append((frame, step))

    def end_timer_window(self):  # a rank that does not log closes its own timer window
        self.windows_ended += 1


def _worker(rank, world, port, outdir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from exporter.distributed import log_across_ranks, reduce_across_ranks
    res = {}
    try:
        def red(frame, framework="pt", catalog=PT):
            return reduce_across_ranks(frame, None, framework, catalog=catalog)

        # 1. uneven shards, keys on some ranks only, integer extremum, min via negation
        frame = {"train/clip_frac": clipped(rank) / tokens(rank),
                 "train/valid_token_count": tokens(rank),
                 "train/response_len_max": 100 * (rank + 1),
                 "train/reward_min": -float(rank),
                 "train/grad_norm": 2.0}
        if rank % 2 == 1:
            frame["train/kl_max"] = 0.5 * rank
        if rank == 0:
            frame["zzz/rank0_only"] = 42.0
        first = red(frame)
        second = red(frame)
        res["first"] = (dict(first), first.counts, first.collectives)
        res["second"] = (dict(second), second.collectives)
        # 2. NaN on one rank (rank 1), zero weight everywhere, zero weight on some ranks
        f2 = {"train/kl_mean": math.nan if rank == 1 else 0.1,
              "train/valid_token_count": tokens(rank),
              "train/kl_max": math.nan if rank == 1 else 1.0,
              "train/logprob_gap_mean": 0.0, "train/logprob_gap_token_count": 0,
              "train/loss_avg": 0.0 if rank else 1.5}
        r2 = red(f2)
        res["nan"] = (dict(r2), sorted(r2.no_data), r2.collectives)
        f3 = {"train/logprob_gap_mean": 0.3 if rank == 0 else 0.0,
              "train/logprob_gap_token_count": 25 if rank == 0 else 0}
        res["partial_zero"] = dict(red(f3))
        # 3. a frame with no max/min keys on a fresh layout: 1 collective when steady
        plain = {"actor/pg_loss": float(rank), "critic/score": 1.0}
        red(plain, "verl", CATALOG)
        r4 = red(plain, "verl", CATALOG)
        res["plain"] = (dict(r4), r4.collectives)
        # 4. only rank 0 exports by default; configurable
        fx = _FakeExporter()
        log_across_ranks(fx, frame, step=5)
        fy = _FakeExporter()
        log_across_ranks(fy, frame, step=5, export_ranks=None)
        res["logged"] = (len(fx.logged), len(fy.logged), fx.logged[0][1] if fx.logged else None)
        res["windows_ended"] = (fx.windows_ended, fy.windows_ended)
    finally:
        dist.destroy_process_group()
    with open(os.path.join(outdir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(res, f)


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


@pytest.fixture(scope="module", params=[2, 4], ids=lambda w: f"world{w}")
def ranks(request):
    world = request.param
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(_worker, args=(world, free_port(), d), nprocs=world, join=True)
        out = []
        for r in range(world):
            with open(os.path.join(d, f"rank{r}.pkl"), "rb") as f:
                out.append(pickle.load(f))
    return world, out


def test_every_rank_gets_the_same_frame(ranks):
    world, res = ranks
    for r in range(1, world):
        for check in ("first", "second", "nan", "partial_zero", "plain"):
            assert _same(res[0][check], res[r][check]), (check, r)


def test_global_fraction_is_exact_where_the_naive_mean_is_not(ranks):
    world, res = ranks
    frame, counts, _ = res[0]["first"]
    true_global = sum(clipped(r) for r in range(world)) / sum(tokens(r) for r in range(world))
    naive = sum(clipped(r) / tokens(r) for r in range(world)) / world
    assert abs(naive - true_global) > 0.01  # e.g. world 2: 0.075 vs 0.06
    assert frame["train/clip_frac"] == pytest.approx(true_global, rel=1e-12)
    assert frame["train/valid_token_count"] == sum(tokens(r) for r in range(world))
    assert isinstance(frame["train/valid_token_count"], int)


def test_presence_extrema_and_counts(ranks):
    world, res = ranks
    frame, counts, collectives = res[0]["first"]
    assert frame["train/response_len_max"] == 100 * world
    assert isinstance(frame["train/response_len_max"], int)
    assert frame["train/reward_min"] == -(world - 1)
    odd = [r for r in range(world) if r % 2 == 1]
    assert frame["train/kl_max"] == 0.5 * max(odd)
    assert counts["train/kl_max"] == len(odd)
    assert frame["zzz/rank0_only"] == 42.0 and counts["zzz/rank0_only"] == 1
    assert counts["train/clip_frac"] == world
    assert frame["train/grad_norm"] == 2.0
    # first call: schema flag round + key exchange + SUM + MAX; then SUM + MAX only
    assert collectives == 4
    assert res[0]["second"][1] == 2
    assert _same(res[0]["second"][0], frame)


def test_nan_on_one_rank_and_zero_weights(ranks):
    world, res = ranks
    frame, no_data, collectives = res[0]["nan"]
    assert math.isnan(frame["train/kl_mean"])
    assert math.isnan(frame["train/kl_max"])
    assert "train/logprob_gap_mean" not in frame and no_data == ["train/logprob_gap_mean"]
    assert frame["train/logprob_gap_token_count"] == 0
    # loss_avg 1.5 on rank 0 only (others 0.0), weighted by tokens
    want = 1.5 * tokens(0) / sum(tokens(r) for r in range(world))
    assert frame["train/loss_avg"] == pytest.approx(want)
    # zero weight on all but rank 0: rank 0's value, not diluted
    assert res[0]["partial_zero"]["train/logprob_gap_mean"] == pytest.approx(0.3)
    assert res[0]["partial_zero"]["train/logprob_gap_token_count"] == 25


def test_one_collective_without_extrema(ranks):
    world, res = ranks
    frame, collectives = res[0]["plain"]
    assert collectives == 1
    assert frame["actor/pg_loss"] == pytest.approx(sum(range(world)) / world)


def test_only_rank_zero_exports_by_default(ranks):
    world, res = ranks
    assert res[0]["logged"] == (1, 1, 5) and res[0]["windows_ended"] == (0, 0)
    for r in range(1, world):
        assert res[r]["logged"][:2] == (0, 1)
        assert res[r]["windows_ended"] == (1, 0)  # it did not log: its own window closed
