"""The one description of each pathology (exporter/demo/pathologies.py) and its three readers:
the demo's frames, the cadence matrix's rows and the end-to-end table of expected alerts."""
import math

import pytest

from exporter.alerts import cadence
from exporter.alerts.rules import ALERTS
from exporter.alerts.scenarios import EXPECTED
from exporter.catalog import CATALOG
from exporter.demo import SCENARIOS, SimulatedRun
from exporter.demo.frames import key_for, series_of
from exporter.demo.pathologies import BY_NAME, PATHOLOGIES, parse

SEVERITY = {a.name: a.severity for a in ALERTS}
PAGING = ("critical", "warning")   # the alerts the cadence matrix measures


def test_every_entry_is_a_demo_scenario_and_its_expected_alerts():
    assert set(SCENARIOS) == {p.name for p in PATHOLOGIES if p.demo}
    # no demo process: the end-to-end test lists a port nobody listens on
    assert [p.name for p in PATHOLOGIES if not p.demo] == ["never-served"]
    assert EXPECTED == {p.name: p.alerts for p in PATHOLOGIES}
    assert len(BY_NAME) == len(PATHOLOGIES)
    for p in PATHOLOGIES:
        assert set(p.alerts) <= set(SEVERITY), p.name
        assert p.source and "seed" not in p.source.lower(), p.name


def test_every_cadence_row_reads_an_entry_that_fires_its_alert_or_says_why():
    for alert, row in cadence.PATHOLOGIES.items():
        if row.entry:
            entry = BY_NAME[row.entry]
            assert alert in entry.alerts, f"{alert}: its row reads {row.entry}, which does not fire it"
            assert (row.stop, row.down) == (entry.stop, entry.down), alert
        else:
            assert row.why, (f"{alert}: a plain cadence row needs why= (or read an entry of "
                             "exporter/demo/pathologies.py with cadence.from_entry)")


def test_every_entry_has_a_cadence_row_or_its_alerts_have_stated_reasons():
    read = {row.entry for row in cadence.PATHOLOGIES.values()}
    for p in PATHOLOGIES:
        measured = [a for a in p.alerts if SEVERITY[a] in PAGING]
        for a in measured:
            assert a in cadence.PATHOLOGIES, f"{p.name}: {a} has no cadence row"
        if p.name not in read:
            # not read by the matrix: each of its paging/ticket alerts is measured by another
            # entry's row or by a plain row that says why (info alerts have no row)
            for a in measured:
                assert cadence.PATHOLOGIES[a].entry or cadence.PATHOLOGIES[a].why, (p.name, a)
    assert read - {""} <= set(BY_NAME)


def _selectors():
    for p in PATHOLOGIES:
        for sel, _ in p.before + p.edits:
            yield p.name, sel


@pytest.mark.parametrize("name,sel", sorted(set(_selectors())))
def test_every_edited_series_is_a_catalog_series(name, sel):
    metric, labels = parse(sel)
    assert metric in CATALOG.metrics, (name, sel)
    assert set(labels or {}) <= set(CATALOG.metrics[metric].labels), (name, sel)


def _fixed_edits():
    for p in PATHOLOGIES:
        for sel, op in p.edits:
            if op.const is not None and not op.counter and p.demo:
                yield p.name, sel, op.const


@pytest.mark.parametrize("name,sel,value", list(_fixed_edits()))
def test_the_demo_applies_an_edit_to_the_frame_key_the_catalog_maps_to_the_series(name, sel, value):
    sim = SimulatedRun(name, seed=1, onset=5)
    frame = [sim.frame(s) for s in range(1, 9)][-1]
    metric, labels = parse(sel)
    got = [frame[k] * series_of(k)[2] for k in frame
           if series_of(k) and series_of(k)[:2] == (metric, tuple(sorted(labels.items())))]
    assert got, f"{name}: no key of the frame logs {sel}"
    for x in got:
        assert x == value or (math.isnan(x) and math.isnan(value)), (name, sel, got)


def test_a_series_missing_from_the_frame_gets_a_real_key_of_that_series():
    assert key_for("rl_reference_kl", (("stat", "max"),)) == "train/kl_max"
    assert key_for("rl_moe_load_imbalance_ratio", (("layer", "12"),)) == "moe_balance/layer_12/max_over_ideal"
    assert key_for("rl_phase_duration_seconds", (("phase", "save_checkpoint"),)) == "timing_s/save_checkpoint"
    with pytest.raises(KeyError, match="no key"):
        key_for("rl_reference_kl", (("stat", "nonsense"),))


def test_the_gpu_memory_edit_is_in_bytes_and_the_frame_in_gib():
    frame = [SimulatedRun("gpu-memory-full", onset=2).frame(s) for s in (1, 2, 3)][-1]
    assert frame["perf/max_memory_allocated_gb"] == 76.5


def test_counters_advance_once_per_step_from_the_entry():
    sim = SimulatedRun("optimizer-diverge", onset=5)
    frames = [sim.frame(s) for s in range(1, 10)]
    assert [f["optim/policy_optimizer_step"] for f in frames] == [4 * s for s in range(1, 10)]
    assert [f["optim/critic_optimizer_step"] for f in frames] == [4, 8, 12, 16] + [16] * 5
    sim = SimulatedRun("no-signal", onset=3)
    skips = [sim.frame(s)["optim/zero_grad_skips_total"] for s in range(1, 8)]
    assert [b - a for a, b in zip(skips[2:], skips[3:])] == [1, 1, 1, 1]


def test_a_cadence_row_read_from_an_entry_edits_the_matrix_series():
    run = cadence.Run(120, cadence.PATHOLOGIES["RLLearningRateZero"], steps=cadence.ONSET + 5).build()
    healthy = cadence.Run(120, None, steps=cadence.ONSET + 5).build()
    lr = run.series["rl_learning_rate"]
    assert lr[-1] == 0.0 and healthy.series["rl_learning_rate"][-1] > 0
    assert lr[:10] == healthy.series["rl_learning_rate"][:10]
    steps = cadence.Run(120, cadence.PATHOLOGIES["RLOptimizerStepsDiverge"], steps=cadence.ONSET + 5).build().series
    critic, policy = (steps[f'+rl_optimizer_steps_total{{role="{r}"}}'] for r in ("critic", "policy"))
    assert critic[-1] == 4 * (cadence.ONSET - 1) and policy[-1] == 4 * (cadence.ONSET + 5)
