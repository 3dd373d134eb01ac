"""The hook's contract: log() copies and queues, never raises, never loses data silently."""
import collections
import decimal
import fractions
import json
import logging
import math
import threading
import types

import pytest

import exporter
from exporter import Exporter
from exporter.testing import scrape
from tests.helpers import scrape_text


@pytest.fixture
def ex():
    e = Exporter(run="t", framework="verl", serve=False)
    yield e
    e.close()


def value(series, name, **labels):
    return series.get((name, tuple(sorted(labels.items()))))


def test_realistic_verl_frame_becomes_canonical_series(ex):
    ex.log({"actor/pg_clipfrac": 0.12, "critic/score/mean": 0.44, "critic/score/max": 1,
            "timing_s/gen": 41.83, "timing_s/step": 80.0, "timing_per_token_ms/gen": 2.5,
            "perf/max_memory_allocated_gb": 2.0, "response_length/clip_ratio": 0.03,
            "training/global_step": 7})
    s = scrape(ex)
    assert value(s, "rl_policy_clip_ratio") == 0.12
    assert value(s, "rl_score") == 0.44
    assert value(s, "rl_score", stat="max") == 1.0
    assert value(s, "rl_phase_duration_seconds", phase="gen") == 41.83
    assert value(s, "rl_step_duration_seconds") == 80.0
    assert value(s, "rl_phase_time_per_token_seconds", phase="gen") == pytest.approx(0.0025)
    assert value(s, "rl_gpu_memory_peak_bytes", kind="allocated") == 2 * 2**30
    assert value(s, "rl_response_truncated_ratio") == 0.03
    assert value(s, "rl_training_step") == 7
    assert value(s, "rl_exporter_frames_processed_total") == 1


def test_nan_and_inf_are_visible_and_counted(ex):
    ex.log({"actor/pg_loss": 0.5, "actor/grad_norm": 1.0}, step=1)
    ex.log({"actor/pg_loss": float("nan"), "actor/grad_norm": float("inf"),
            "critic/score/min": float("-inf")}, step=2)
    s = scrape(ex)
    assert math.isnan(value(s, "rl_policy_loss"))  # not the stale 0.5
    assert value(s, "rl_grad_norm") == math.inf
    assert value(s, "rl_score", stat="min") == -math.inf
    assert value(s, "rl_exporter_nonfinite_values_total", metric="rl_policy_loss") == 1
    assert value(s, "rl_exporter_nonfinite_values_total", metric="rl_grad_norm") == 1


def test_the_otel_sdk_alone_would_hide_a_nan_loss():
    """Why the store exists: OTel's synchronous gauge drops NaN and keeps the old value."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from prometheus_client import CollectorRegistry, generate_latest
    reg = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=reg)])
    gauge = provider.get_meter("t").create_gauge("loss")
    gauge.set(0.5)
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    gauge.set(float("nan"))
    text = generate_latest(reg).decode()
    provider.shutdown()
    assert "loss{" in text and "NaN" not in text and " 0.5" in text


@pytest.mark.parametrize("raw,expected", [
    (3, 3.0), (True, 1.0), (False, 0.0), (2.5, 2.5), (-7, -7.0), (1e308, 1e308),
    (decimal.Decimal("0.25"), 0.25), (fractions.Fraction(1, 4), 0.25),
])
def test_scalar_types(ex, raw, expected):
    ex.log({"actor/pg_clipfrac": raw})
    assert value(scrape(ex), "rl_policy_clip_ratio") == expected


def test_numpy_values(ex):
    np = pytest.importorskip("numpy")
    ex.log({"actor/pg_clipfrac": np.float32(0.5), "actor/ppo_kl": np.int64(2),
            "actor/entropy": np.bool_(True), "actor/lr": np.array(1e-6),
            "critic/score/mean": np.float64(0.25)})
    s = scrape(ex)
    assert value(s, "rl_policy_clip_ratio") == 0.5
    assert value(s, "rl_policy_kl") == 2.0
    assert value(s, "rl_entropy") == 1.0
    assert value(s, "rl_learning_rate") == pytest.approx(1e-6)
    assert value(s, "rl_score") == 0.25


def test_torch_cpu_scalar_is_snapshotted_at_log_time(ex):
    torch = pytest.importorskip("torch")
    t = torch.tensor(0.5)
    ex.log({"actor/pg_clipfrac": t})
    t.add_(1.0)  # the training loop reuses its tensor
    assert value(scrape(ex), "rl_policy_clip_ratio") == 0.5


def test_bad_values_are_counted_rejections_of_that_key_only(ex, caplog):
    with caplog.at_level(logging.WARNING, logger="rl_exporter"):
        ex.log({"actor/pg_clipfrac": "high", "actor/ppo_kl": [1, 2], "actor/entropy": {"a": 1},
                "actor/grad_norm": None, "actor/lr": 10**400, "critic/score/mean": 0.3,
                "actor/pg_loss": object()})
        s = scrape(ex)
    assert value(s, "rl_score") == 0.3                     # the rest of the frame survives
    assert value(s, "rl_policy_clip_ratio") is None        # no NaN series left behind
    assert value(s, "rl_grad_norm") is None                # None means absent
    assert value(s, "rl_exporter_values_rejected_total", reason="string") == 1
    assert value(s, "rl_exporter_values_rejected_total", reason="type") == 3
    assert value(s, "rl_exporter_values_rejected_total", reason="overflow") == 1
    assert "str value" in caplog.text


@pytest.mark.parametrize("frame", [None, 5, "step:1 - a:1", [("a", 1)], 3.5, object()])
def test_a_frame_that_is_not_a_mapping_is_dropped_and_counted(ex, frame):
    ex.log(frame)
    s = scrape(ex)
    assert value(s, "rl_exporter_frames_dropped_total", reason="not_a_mapping") == 1
    assert value(s, "rl_exporter_frames_processed_total") == 0


def test_mappings_other_than_dict_are_accepted(ex):
    ex.log(collections.OrderedDict([("actor/pg_clipfrac", 0.1)]))
    ex.log(types.MappingProxyType({"actor/ppo_kl": 0.2}))
    s = scrape(ex)
    assert value(s, "rl_policy_clip_ratio") == 0.1 and value(s, "rl_policy_kl") == 0.2


def test_ten_thousand_key_frame_is_bounded():
    ex = Exporter(run="t", framework="verl", serve=False, fallback_limit=100)
    try:
        frame = {f"custom/metric_{i}": float(i) for i in range(10_000)}
        frame["actor/pg_clipfrac"] = 0.2
        ex.log(frame)
        s = scrape(ex)
        fallback = [k for k in s if k[0] == "rl_unmapped_value"]
        assert len(fallback) == 100
        assert value(s, "rl_exporter_unknown_keys_total") == 10_000
        assert value(s, "rl_exporter_fallback_keys_dropped_total") == 9_900
        assert value(s, "rl_policy_clip_ratio") == 0.2
    finally:
        ex.close()


def test_absurd_keys_export_as_bounded_sanitised_labels(ex):
    keys = ["with space", 'with "quotes"', "new\nline", "ünïcødé/κλειδί", "x" * 10_000, "tab\tkey",
            "", "{}", "a=b,c"]
    ex.log({k: float(i) for i, k in enumerate(keys)})
    s = scrape(ex)
    labels = {dict(k[1])["key"]: v for k, v in s.items() if k[0] == "rl_unmapped_value"}
    assert len(labels) == len(keys)  # still distinct after sanitising
    assert all(len(lab) <= 128 and "\n" not in lab and "\t" not in lab for lab in labels)
    assert labels["ünïcødé/κλειδί"] == 3.0 and labels['with "quotes"'] == 1.0


def test_counters_refuse_negative_values():
    from exporter.catalog import Catalog, Vocabulary
    from exporter.catalog.metrics import METRICS, SELF_METRICS
    from exporter.catalog.model import alias
    cat = Catalog(METRICS + SELF_METRICS,
                  [Vocabulary("t", "t", keys={"tokens_seen": alias("rl_tokens_total")})])
    ex = Exporter(run="t", framework="t", serve=False, catalog=cat)
    try:
        ex.log({"tokens_seen": 100.0})
        ex.log({"tokens_seen": -5.0})
        s = scrape(ex)
        assert value(s, "rl_tokens_total") == 100.0
        assert value(s, "rl_exporter_values_rejected_total", reason="negative_counter") == 1
    finally:
        ex.close()


def test_log_after_close_is_counted_not_raised():
    ex = Exporter(run="t", serve=False)
    ex.close()
    ex.log({"actor/pg_clipfrac": 1.0})
    ex.close()  # idempotent
    assert ex.stats()["frames_dropped"]["closed"] == 1


def test_queue_full_drops_the_oldest_frames_and_counts_them():
    ex = Exporter(run="t", framework="verl", serve=False, queue_size=4)
    gate, seen = threading.Event(), []
    original = ex._worker.process

    def slow(frame, step, ts, *rest):
        gate.wait(5)
        seen.append(step)
        original(frame, step, ts, *rest)

    ex._worker.process = slow
    try:
        ex.log({"actor/pg_clipfrac": 0.0}, step=0)
        while not ex._worker.busy:  # the worker has taken frame 0 and waits on the gate
            pass
        for i in range(1, 11):
            ex.log({"actor/pg_clipfrac": float(i)}, step=i)
        gate.set()
        assert ex.flush()
        s = scrape(ex)
        assert seen == [0, 7, 8, 9, 10]
        assert value(s, "rl_exporter_frames_dropped_total", reason="queue_full") == 6
        assert value(s, "rl_policy_clip_ratio") == 10.0
    finally:
        ex.close()


def test_internal_errors_are_counted_and_logged_once(ex, caplog, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("resolver exploded")
    monkeypatch.setattr(ex.catalog, "resolve", boom)
    with caplog.at_level(logging.ERROR, logger="rl_exporter"):
        for i in range(3):
            ex.log({f"new/key{i}": 1.0})
        s = scrape(ex)
    assert value(s, "rl_exporter_errors_total", kind="process") == 3
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "resolver exploded" in errors[0].getMessage()


def test_step_from_argument_frame_or_count(ex):
    ex.log({"actor/pg_clipfrac": 0.1})                       # no step anywhere: frame count
    assert value(scrape(ex), "rl_training_step") == 0
    ex.log({"actor/pg_clipfrac": 0.1, "training/global_step": 12})
    assert value(scrape(ex), "rl_training_step") == 12
    ex.log({"actor/pg_clipfrac": 0.1, "training/global_step": 12}, step=40)
    assert value(scrape(ex), "rl_training_step") == 40


def test_step_timestamp_moves_only_when_the_step_advances(ex):
    ex.log({"x": 1.0}, step=3)
    t1 = value(scrape(ex), "rl_training_step_timestamp_seconds")
    ex.log({"x": 1.0}, step=3)  # e.g. a validation frame for the same step
    assert value(scrape(ex), "rl_training_step_timestamp_seconds") == t1
    ex.log({"x": 1.0}, step=4)
    assert value(scrape(ex), "rl_training_step_timestamp_seconds") >= t1


def test_series_limit_per_metric():
    ex = Exporter(run="t", framework="verl", serve=False, series_limit=5)
    try:
        ex.log({f"timing_s/phase{i}": 1.0 for i in range(20)})
        s = scrape(ex)
        assert len([k for k in s if k[0] == "rl_phase_duration_seconds"]) == 5
        assert value(s, "rl_exporter_values_rejected_total", reason="series_limit") == 15
    finally:
        ex.close()


def test_run_info_carries_identity_once(ex):
    s = scrape(ex, )
    info = [k for k in s if k[0] == "rl_run_info"]
    assert len(info) == 1 and dict(info[0][1])["framework"] == "verl"
    assert all("framework" not in dict(k[1]) for k in s if k[0] != "rl_run_info")


def test_two_exporters_on_one_port_do_not_raise(port):
    a = Exporter(run="a", port=port)
    b = Exporter(run="b", port=port)
    try:
        assert a.url and b.url is None
        assert b.stats()["errors"]["bind"] == 1
        b.log({"actor/pg_clipfrac": 0.3})  # still collects
        assert ("rl_policy_clip_ratio", ()) in scrape(b)
        assert 'run="a"' in scrape_text(a.url)
    finally:
        a.close()
        b.close()


def test_module_level_convenience(port):
    ex = exporter.init(run="m", framework="verl", port=port)
    try:
        exporter.log({"actor/pg_clipfrac": 0.4}, step=2)
        assert value(scrape(ex), "rl_policy_clip_ratio") == 0.4
    finally:
        exporter.close()


def test_context_manager_closes():
    with Exporter(run="c", serve=False) as ex:
        ex.log({"actor/pg_clipfrac": 0.1})
    assert ex.closed and not ex._worker.thread.is_alive()


def test_spool_replays_to_the_same_series(tmp_path):
    """The hook can write our spool format; replaying it gives the same canonical series."""
    from exporter.logs import make_parser
    path = tmp_path / "run.spool.jsonl"
    frames = [{"actor/pg_clipfrac": 0.1, "actor/pg_loss": float("nan"), "critic/score/max": 1,
               "actor/lr": None}, {"actor/pg_clipfrac": 0.2, "training/global_step": 9}]
    with Exporter(run="sp", framework="verl", serve=False, spool=str(path)) as ex:
        for i, f in enumerate(frames):
            ex.log(f, step=None if i else 4)
        live = scrape(ex)
    lines = path.read_text().splitlines()
    # two frames, then the lifecycle's end (close(): finished at the last step)
    assert len(lines) == 3 and '"actor/pg_loss":"NaN"' in lines[0]
    assert json.loads(lines[2]) == {"spool": 1, "ts": json.loads(lines[2])["ts"], "run": "sp",
                                    "framework": "verl", "event": "finished", "step": 9}
    parser = make_parser("spool")
    replayed = [fr for line in lines[:2] for fr in parser.feed(line)]
    assert [fr.step for fr in replayed] == [4, 9]
    with Exporter(run="sp", framework="verl", serve=False) as again:
        for fr in replayed:
            again.log(fr.data, step=fr.step)
        back = scrape(again)
    for key in [("rl_policy_clip_ratio", ()), ("rl_score", (("stat", "max"),)), ("rl_training_step", ())]:
        assert back[key] == live[key]
    assert math.isnan(back[("rl_policy_loss", ())])


def test_frames_queued_at_exit_are_processed_without_close(tmp_path):
    import subprocess
    import sys
    spool = tmp_path / "s.jsonl"
    code = ("from exporter import Exporter\n"
            f"ex = Exporter(run='x', serve=False, spool={str(spool)!r})\n"
            "for i in range(200):\n    ex.log({'actor/pg_clipfrac': float(i)}, step=i)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "shutdown can only be called once" not in r.stderr, r.stderr
    lines = spool.read_text().splitlines()
    assert len(lines) == 201 and '"event":"finished","step":199' in lines[-1]  # exit: finished


def test_a_weighted_mean_over_nothing_is_no_data_not_zero():
    """posttrain's log-prob gap over 0 tokens: the gap is absent, the token count 0; the same
    on the first frame (key resolved mid-frame) and on a later one (cached key)."""
    with Exporter(run="gap", framework="posttrain", port=None, gpu=False) as ex:
        ex.log({"train/logprob_gap_mean": 0.0, "train/logprob_gap_token_count": 0}, step=1)
        ex.flush()
        s = scrape(ex)
        assert value(s, "rl_train_inference_logprob_abs_diff") is None
        assert value(s, "rl_train_inference_tokens") == 0
        ex.log({"train/logprob_gap_mean": 0.02, "train/logprob_gap_token_count": 512}, step=2)
        ex.log({"train/logprob_gap_mean": 0.0, "train/logprob_gap_token_count": 0}, step=3)
        ex.flush()
        s = scrape(ex)
        assert value(s, "rl_train_inference_logprob_abs_diff") == 0.02  # step 2's, not a false 0
        assert value(s, "rl_training_step") == 3


def test_ms_swift_name_and_step_string():
    """Exporter(framework="ms-swift") uses the swift vocabulary, and its printed step
    'global_step/max_steps': '2/4389' is step 2, not a rejected string."""
    with Exporter(run="sw", framework="ms-swift", port=None, gpu=False) as ex:
        assert ex.framework == "swift"
        ex.log({"loss": 0.5, "global_step/max_steps": "2/4389", "memory(GiB)": 30.5})
        ex.flush()
        s = scrape(ex)
        assert value(s, "rl_training_step") == 2
        assert ex.stats()["values_rejected"].get("string", 0) == 0
