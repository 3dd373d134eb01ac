"""The demo scenarios the alerts are proven against (offline: frames, side series, store)."""
import math

import pytest

from exporter.catalog import CATALOG
from exporter.demo import SCENARIOS, SimulatedRun
from exporter.hook import Exporter

ORIGINAL = ("healthy", "entropy-collapse", "kl-spike", "nan-loss", "grad-explosion", "length-truncation",
            "no-signal", "stall")


def test_original_scenarios_kept_and_new_ones_added():
    assert set(ORIGINAL) <= set(SCENARIOS)
    assert len(SCENARIOS) >= 25


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_frames_are_numeric_and_deterministic(scenario):
    a, b = SimulatedRun(scenario, seed=3, onset=10), SimulatedRun(scenario, seed=3, onset=10)
    for step in range(1, 40):
        fa, fb = a.frame(step), b.frame(step)
        assert fa == fb or (fa and fb and all(
            (x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
            for x, y in zip(fa.values(), fb.values())))
        if fa is None:
            assert scenario in ("stall", "gen-hang", "hang") and step >= 10
            continue
        if scenario != "crash-loop":  # it resumes at an older step (tests/unit/demo/test_hang_crashloop.py)
            assert fa["training/global_step"] == step
        for k, v in fa.items():
            assert isinstance(v, (int, float, str)), (k, v)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_side_series_are_catalog_series(scenario):
    sim = SimulatedRun(scenario, onset=5)
    for step in (1, 10):
        for metric, value, labels in sim.side_series(step):
            m = CATALOG.metrics[metric]
            assert set(labels) <= set(m.labels), (metric, labels)
            assert math.isfinite(value)


def test_attach_writes_side_series_into_the_exporter_store():
    sim = SimulatedRun("gpu-throttle", onset=2)
    with Exporter(run="t", serve=False) as ex:
        sim.attach(ex)
        for step in range(1, 4):
            ex.log(sim.frame(step), step=step)
        ex.flush()
        ident = {"uuid": "GPU-demo-1", "gpu_model": "NVIDIA H100 80GB HBM3"}
        assert ex.store.get("hw_gpu_clock_event_active",
                            {"gpu": "1", "reason": "hardware_thermal_slowdown", **ident}) == 1.0
        ident["uuid"] = "GPU-demo-0"
        assert ex.store.get("hw_gpu_clock_event_active",
                            {"gpu": "0", "reason": "hardware_thermal_slowdown", **ident}) == 0.0
        assert ex.store.get("rl_config_value", {"parameter": "n_mini"}) == 4.0


def test_on_policy_clip_is_zero_before_the_bug_and_nonzero_after():
    sim = SimulatedRun("on-policy-clip", onset=5)
    frames = [sim.frame(s) for s in range(1, 10)]
    assert all(f["actor/pg_clipfrac"] == 0.0 for f in frames[:4])
    assert all(f["actor/pg_clipfrac"] > 0 for f in frames[4:])
    assert sim.side_series(1)[0] == ("rl_config_value", 1.0, {"parameter": "n_mini"})


def test_every_alert_has_an_end_to_end_scenario_and_every_scenario_an_expectation():
    from exporter.alerts.rules import ALERTS
    from exporter.alerts.scenarios import ENGINE_EXPECTED, EXPECTED, RANK_EXPECTED
    covered = {a for table in (EXPECTED, ENGINE_EXPECTED, RANK_EXPECTED) for alerts in table.values()
               for a in alerts}
    assert covered == {a.name for a in ALERTS}
    assert set(EXPECTED) - {"never-served"} == set(SCENARIOS)
    assert EXPECTED["healthy"] == {}
    for alerts in EXPECTED.values():
        for name, needs in alerts.items():
            assert all(m in CATALOG.metrics for m in needs), (name, needs)
