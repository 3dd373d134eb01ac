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


class FakeCudaTensor1(FakeCudaTensor):
    """A tensor on a second GPU (this machine has none)."""
    @property
    def device(self):
        return torch.device("cuda", 1)


class FakeXlaTensor(torch.Tensor):
    """A tensor on an accelerator without CUDA events (XLA/NPU): .item() is a sync there."""
    item_threads = []

    @property
    def device(self):
        return torch.device("xla", 0)

    def item(self):
        FakeXlaTensor.item_threads.append(threading.get_ident())
        return super().item()


@pytest.fixture(autouse=True)
def fake_streams(monkeypatch):
    """torch.cuda.current_stream(device) without CUDA: the stream names its device."""
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: ("stream", str(device)))


class FakeEvent:
    instances = []
    READY_AFTER = 3  # queries answered "not yet" before the copy completes

    def __init__(self, *a, **k):
        self.recorded_on = None
        self.queries = []
        self.ready_after = FakeEvent.READY_AFTER
        FakeEvent.instances.append(self)

    def record(self, stream=None):
        self.recorded_on = threading.get_ident()
        self.stream = stream

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
    from exporter.core import values
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(values, "DEVICE_TIMEOUT_S", 0.05)
    monkeypatch.setattr(FakeEvent, "READY_AFTER", 10**9)  # the copy never completes
    t = torch.tensor(1.0).as_subclass(FakeCudaTensor)
    with Exporter(run="cuda", framework="verl", serve=False) as ex:
        ex.log({"actor/pg_loss": t}, step=1)
        s = scrape(ex)
    assert ("rl_policy_loss", ()) not in s
    assert s[("rl_exporter_values_rejected_total", (("reason", "device_timeout"),))] == 1


def test_tensors_on_two_devices_keep_the_frame_one_copy_and_event_per_device(monkeypatch):
    FakeEvent.instances.clear()
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    loss = torch.tensor(0.5).as_subclass(FakeCudaTensor)       # "cuda" (its own device)
    kl = torch.tensor(0.25).as_subclass(FakeCudaTensor1)       # cuda:1
    ent = torch.tensor(2.0).as_subclass(FakeCudaTensor1)
    with Exporter(run="cuda", framework="verl", serve=False) as ex:
        ex.log({"actor/pg_loss": loss, "actor/ppo_kl": kl, "actor/entropy": ent}, step=1)
        s = scrape(ex)
    assert s[("rl_policy_loss", ())] == 0.5
    assert s[("rl_policy_kl", ())] == 0.25
    assert s[("rl_entropy", ())] == 2.0
    streams = sorted(e.stream[1] for e in FakeEvent.instances)
    assert streams == sorted([str(loss.device), "cuda:1"])  # each event on its device's stream


def test_accelerator_tensors_are_read_on_the_worker_not_the_caller():
    FakeXlaTensor.item_threads.clear()
    t = torch.tensor(0.125).as_subclass(FakeXlaTensor)
    with Exporter(run="xla", framework="verl", serve=False) as ex:
        caller = threading.get_ident()
        ex.log({"actor/pg_loss": t}, step=1)
        t.add_(1.0)  # reused right after logging: the snapshot is a clone
        s = scrape(ex)
    assert s[("rl_policy_loss", ())] == 0.125
    assert FakeXlaTensor.item_threads and caller not in FakeXlaTensor.item_threads


def test_close_bounds_the_wait_for_device_copies_and_counts_them(monkeypatch):
    import time
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(FakeEvent, "READY_AFTER", 10**9)  # never completes; default timeout 60 s
    ex = Exporter(run="cuda", framework="verl", serve=False)
    for i in range(3):
        ex.log({"actor/pg_loss": torch.tensor(1.0).as_subclass(FakeCudaTensor)}, step=i)
    t0 = time.monotonic()
    ex.close(timeout=0.5)
    assert time.monotonic() - t0 < 30  # returned before the 60 s default wait (a hang guard)
    ex._worker.thread.join(1.0)  # a frame in progress ends at close()'s deadline
    st = ex.stats()
    # every one of the 3 values is accounted for: exported, timed out, or its frame dropped
    lost = st["values_rejected"].get("device_timeout", 0) + st["frames_dropped"].get("close_timeout", 0)
    assert lost == 3 and st["values_rejected"].get("device_timeout", 0) >= 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                                   torch.bool])
def test_cpu_scalars_are_read_in_place_exactly(dtype):
    # read without a torch op (each op releases the GIL: a 5 ms wait behind a busy thread)
    from exporter.core.values import _cpu_scalar
    for raw in (0.1, 3, -7.5, 1e4) if dtype.is_floating_point else (3, 1, 0):
        if dtype == torch.bool:
            raw = bool(raw)
        elif not dtype.is_floating_point and dtype == torch.uint8 and raw < 0:
            continue
        t = torch.tensor(raw, dtype=dtype)
        assert _cpu_scalar(t) == t.item()
    view = torch.arange(10.0, dtype=dtype if dtype.is_floating_point else torch.float32)[7:8]
    assert _cpu_scalar(view) == 7.0                     # storage offset honoured
    assert _cpu_scalar(torch.tensor(2.0, requires_grad=True) * 2) == 4.0


@pytest.mark.gpu
def test_real_cuda_values_across_devices_without_a_sync():
    """On a CUDA machine: values on every visible device (and the CPU) in one frame, copied
    without a synchronize. Exempt from RLX_REQUIRE_ALL (needs a GPU)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    frame = {"actor/pg_clipfrac": torch.tensor(0.5)}
    keys = ["actor/pg_loss", "actor/ppo_kl", "actor/entropy", "actor/grad_norm"]
    for i, k in enumerate(keys):
        frame[k] = torch.tensor(float(i + 1), device=devices[i % len(devices)])
    torch.cuda.synchronize()
    with Exporter(run="gpu", framework="verl", serve=False) as ex:
        torch.cuda.set_sync_debug_mode("error")
        try:
            ex.log(frame, step=1)
        finally:
            torch.cuda.set_sync_debug_mode(0)
        s = scrape(ex)
    assert s[("rl_policy_loss", ())] == 1.0 and s[("rl_policy_kl", ())] == 2.0
    assert s[("rl_entropy", ())] == 3.0 and s[("rl_policy_clip_ratio", ())] == 0.5
