"""Caller-thread value handling: CUDA tensors are snapshotted without a synchronize.

The CUDA path runs here on CPU behind a fake CUDA tensor and a fake event; the real
device path is exercised by benchmarks/gpu_check.py under set_sync_debug_mode("error")."""
import threading

import pytest

from exporter import Exporter
from exporter.testing import scrape

torch = pytest.importorskip("torch")


class FakeCudaTensor(torch.Tensor):
    @property
    def is_cuda(self):
        return True


class FakeEvent:
    instances = []
    READY_AFTER = 3  # queries answered "not yet" before the copy completes

    def __init__(self, *a, **k):
        self.recorded_on = None
        self.queries = []
        self.ready_after = FakeEvent.READY_AFTER
        FakeEvent.instances.append(self)

    def record(self, *a):
        self.recorded_on = threading.get_ident()

    def query(self):
        self.queries.append(threading.get_ident())
        return len(self.queries) > self.ready_after

    def synchronize(self):
        raise AssertionError("a blocking synchronize: the training loop would wait for the GPU")


def test_cuda_scalars_are_copied_at_log_time_and_read_off_thread(monkeypatch):
    FakeEvent.instances.clear()
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    loss = torch.tensor(0.25).as_subclass(FakeCudaTensor)
    kl = torch.tensor(7, dtype=torch.int64).as_subclass(FakeCudaTensor)
    with Exporter(run="cuda", framework="verl", serve=False) as ex:
        caller = threading.get_ident()
        ex.log({"actor/pg_loss": loss, "actor/ppo_kl": kl, "actor/pg_clipfrac": 0.1}, step=1)
        loss.add_(100.0)  # the loop reuses its buffers right after logging
        s = scrape(ex)
    assert s[("rl_policy_loss", ())] == 0.25
    assert s[("rl_policy_kl", ())] == 7.0
    assert s[("rl_policy_clip_ratio", ())] == 0.1
    (event,) = FakeEvent.instances           # one stacked copy and one event per frame
    assert event.recorded_on == caller
    assert event.queries and caller not in event.queries  # polled by the worker only
    assert len(event.queries) > event.ready_after


def test_a_device_value_that_never_arrives_is_a_counted_rejection(monkeypatch):
    from exporter import values
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(values, "DEVICE_TIMEOUT_S", 0.05)
    monkeypatch.setattr(FakeEvent, "READY_AFTER", 10**9)  # the copy never completes
    t = torch.tensor(1.0).as_subclass(FakeCudaTensor)
    with Exporter(run="cuda", framework="verl", serve=False) as ex:
        ex.log({"actor/pg_loss": t}, step=1)
        s = scrape(ex)
    assert ("rl_policy_loss", ()) not in s
    assert s[("rl_exporter_values_rejected_total", (("reason", "device_timeout"),))] == 1
