"""Opt-in traces to a real OTLP/HTTP receiver: a span per step and per phase (phases are
children of their step's span), and a hang capture as an event on the hung phase's span."""
import time

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")

from exporter import Exporter  # noqa: E402
from tests.helpers import OTLPReceiver as Receiver  # noqa: E402
from exporter.stacks import HangWatch  # noqa: E402
from exporter.core.thresholds import HangThresholds  # noqa: E402

pytestmark = pytest.mark.integration


def test_steps_and_phases_are_spans_and_a_hang_is_an_event(monkeypatch):
    monkeypatch.setenv("RL_EXPORTER_TRACES", "1")
    rx = Receiver()
    ex = Exporter(run="traces", serve=False, gpu=False, otlp_endpoint=rx.url, otlp_interval=60)
    try:
        assert ex.spans is not None
        for step in range(1, 4):
            with ex.timer("gen"):
                time.sleep(0.02)
            with ex.timer("update_actor"):
                time.sleep(0.01)
            ex.log({}, step=step)
            ex.flush()
        w = HangWatch(ex, HangThresholds(phase_no_history_s=0.05, phase_floor_s=0.05,
                                         phase_factor=0.1), start=False)
        with ex.timer("weight_sync"):
            time.sleep(0.1)
            [cap] = w.check(ex)
    finally:
        ex.close(timeout=5)
        rx.server.shutdown()
    assert "/v1/traces" in rx.paths
    by_name = {}
    for s in rx.spans:
        by_name.setdefault(s.name, []).append(s)
    steps = by_name["rl.step"]
    assert len(steps) >= 3  # steps 1->2, 2->3, and the one open at close()
    step_ids = {s.span_id for s in steps}
    gens = by_name["gen"]
    assert len(gens) == 3 and len(by_name["update_actor"]) == 3
    # the phases of steps 2 and 3 ran inside the step span opened when the previous step arrived
    assert sum(g.parent_span_id in step_ids for g in gens) >= 2
    for g in gens:
        assert 0.015 < (g.end_time_unix_nano - g.start_time_unix_nano) / 1e9 < 1.0
    [ws] = by_name["weight_sync"]
    [ev] = [e for e in ws.events if e.name == "rl.hang"]
    attrs = {a.key: a.value for a in ev.attributes}
    assert attrs["rl.hang.reason"].string_value == "phase_hung"
    assert "test_steps_and_phases_are_spans_and_a_hang_is_an_event" in attrs["rl.hang.stacks"].string_value
    assert cap["phase"] == "weight_sync"


def test_traces_off_by_default():
    rx = Receiver()
    ex = Exporter(run="no-traces", serve=False, gpu=False, otlp_endpoint=rx.url, otlp_interval=60)
    try:
        assert ex.spans is None
        with ex.timer("gen"):
            pass
        ex.log({}, step=1)
    finally:
        ex.close(timeout=3)
        rx.server.shutdown()
    assert rx.spans == [] and "/v1/traces" not in rx.paths
