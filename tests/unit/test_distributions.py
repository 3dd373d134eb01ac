"""observe(): bucket counts equal an independent per-value reference, aliases and
rejections, NaN handling, and no per-element Python work (call counts do not grow
with the number of values; the per-value record() is never called)."""
import bisect
import math

import pytest

from exporter import Exporter
from exporter.catalog import CATALOG
from exporter.distributions import ALIASES
from exporter.testing import python_calls, scrape

np = pytest.importorskip("numpy")


@pytest.fixture
def ex():
    e = Exporter(run="t", framework="verl", serve=False)
    yield e
    e.close()


def buckets(ex, metric, labels=()):
    """{le: cumulative count} plus _count/_sum from a real scrape."""
    # an empty label value is an absent label in Prometheus (OTel pads missing ones with "")
    s = {(n, tuple((k, v) for k, v in lab if v != "")): x for (n, lab), x in scrape(ex).items()}
    out = {}
    for (name, lab), v in s.items():
        d = dict(lab)
        le = d.pop("le", None)
        if name == metric + "_bucket" and tuple(sorted(d.items())) == tuple(labels):
            out[float(le)] = v
    # signed buckets: prometheus_client omits _sum/_count (OpenMetrics); count = +Inf bucket
    count = s.get((metric + "_count", tuple(labels)), out.get(math.inf))
    return out, count, s.get((metric + "_sum", tuple(labels)))


def held_sum(ex, metric):
    """The histogram's sum as the store holds it (what OTLP pushes), for signed metrics whose
    Prometheus exposition carries no _sum."""
    for m, rows in ex.store.histograms.snapshot():
        if m.name == metric:
            return sum(total for _, _, total, _, _, _ in rows)
    return None


def reference(metric, values):
    """Cumulative `le` counts computed one value at a time (the definition)."""
    bounds = CATALOG.metrics[metric].buckets
    counts = [0] * (len(bounds) + 1)
    for v in values:
        if math.isfinite(v):
            counts[bisect.bisect_left(bounds, v)] += 1
    cum, out = 0, {}
    for b, c in zip(list(bounds) + [math.inf], counts):
        cum += c
        out[float(b)] = float(cum)
    return out


def test_catalog_histograms_exist_with_buckets():
    for full in set(ALIASES.values()):
        m = CATALOG.metrics[full]
        assert m.kind == "histogram" and len(m.buckets) >= 10
        assert list(m.buckets) == sorted(set(m.buckets))
        assert full + "_bucket" in CATALOG.names


@pytest.mark.parametrize("kind", ["list", "numpy", "torch", "torch_int", "torch_bf16"])
def test_counts_match_reference_including_boundaries(ex, kind):
    metric = "rl_sample_reward"
    bounds = CATALOG.metrics[metric].buckets
    rng = np.random.default_rng(0)
    vals = list(rng.normal(0, 3, 5000)) + list(bounds) + [b + 1e-9 for b in bounds] + [-100, 100]
    if kind == "list":
        data = vals
    elif kind == "numpy":
        data = np.asarray(vals, dtype=np.float32).astype(np.float64)
        vals = list(data)
    else:
        torch = pytest.importorskip("torch")
        if kind == "torch_int":
            vals = [float(int(v)) for v in vals]
            data = torch.tensor([int(v) for v in vals])
        elif kind == "torch_bf16":
            data = torch.tensor(vals, dtype=torch.bfloat16)
            vals = data.double().tolist()
        else:
            data = torch.tensor(vals, dtype=torch.float64)
    ex.observe("reward", data)
    got, count, total = buckets(ex, metric)
    assert got == reference(metric, vals)
    assert count == len(vals)
    assert total is None  # signed buckets: see the metric's help
    assert held_sum(ex, metric) == pytest.approx(sum(vals), rel=1e-6, abs=1e-6)


def test_accumulates_and_labels(ex):
    ex.observe("response_length", [10, 20, 5000])
    ex.observe("rl_sample_response_length_tokens", np.array([70000]))
    ex.observe("response_length", [1, 2], labels={"split": "eval"})
    got, count, total = buckets(ex, "rl_sample_response_length_tokens")
    assert count == 4 and total == 75030
    assert got[16.0] == 1 and got[32.0] == 2 and got[8192.0] == 3 and got[131072.0] == 4
    got, count, _ = buckets(ex, "rl_sample_response_length_tokens", (("split", "eval"),))
    assert count == 2 and got[1.0] == 1


def test_rejections_are_counted_never_raised(ex):
    ex.observe("no_such_thing", [1.0])
    ex.observe("rl_reward", [1.0])                  # a gauge, not a distribution
    ex.observe("rl_phase_timing_seconds", [1.0])    # timer-owned histogram
    ex.observe("reward", [1.0], labels={"pod": "x"})
    ex.observe("reward", "0.5")
    ex.observe("reward", [{"a": 1}])
    ex.observe("reward", None)
    ex.observe("reward", [])                        # empty: nothing, not an error
    s = scrape(ex)
    rej = {dict(l)["reason"]: v for (n, l), v in s.items() if n == "rl_exporter_values_rejected_total"}
    assert rej["unknown_histogram"] == 3 and rej["label"] == 1 and rej["type"] == 3
    assert ("rl_sample_reward_count", ()) not in s


def test_nonfinite_values_are_counted_not_bucketed(ex):
    torch = pytest.importorskip("torch")
    ex.observe("advantage", torch.tensor([0.0, float("nan"), float("inf"), -float("inf"), 1.0]))
    ex.observe("advantage", [float("nan")])
    got, count, total = buckets(ex, "rl_sample_advantage")
    assert count == 2 and held_sum(ex, "rl_sample_advantage") == 1.0
    s = scrape(ex)
    assert s[("rl_exporter_nonfinite_values_total", (("metric", "rl_sample_advantage"),))] == 4


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_no_per_element_python_work(ex, kind, monkeypatch):
    if kind == "torch":
        torch = pytest.importorskip("torch")
        small, big = torch.rand(1000) * 4, torch.rand(1_000_000) * 4
    else:
        small, big = np.random.rand(1000) * 4, np.random.rand(1_000_000) * 4
    monkeypatch.setattr(ex.store.histograms, "record", lambda *a, **k: pytest.fail("per-value record()"))
    ex.observe("logprob_gap", small)                   # warm caches
    # no collection mid-count: finalizers of other tests' objects (weakref callbacks) would
    # run here and count as our calls
    import gc
    gc.collect()
    gc.disable()
    try:
        calls_small = python_calls(lambda: ex.observe("logprob_gap", small))
        calls_big = python_calls(lambda: ex.observe("logprob_gap", big))
    finally:
        gc.enable()
    assert calls_big == calls_small                    # independent of the number of values
    assert calls_big < 200
    _, count, _ = buckets(ex, "rl_token_logprob_gap")
    assert count == 2000 + 1_000_000
