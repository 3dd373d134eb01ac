"""The NVML sampler against a fake nvidia-ml-py (exporter/testing/nvml.py), through /metrics."""
from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time

import pytest

from exporter import Exporter
from exporter.catalog import CATALOG
from exporter.gpu import GPUSampler, start_store_sampler
from exporter.gpu_devices import Device, parse_visible
from exporter.core.store import Store
from exporter.testing import scrape
from exporter.testing.nvml import FakeNVML, NVMLError_Timeout

H100 = "NVIDIA H100 80GB HBM3"
RANK = "5"


def uuid(i):
    return f"GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}"


def gpu_labels(i, rank="0", **extra):
    lab = {"gpu": str(i), "uuid": uuid(i), "gpu_model": H100, "run": "r"}
    if rank is not None:
        lab["rank"] = rank
    lab.update(extra)
    return tuple(sorted(lab.items()))


def nr(labels):
    """Labels without run (scrape() without with_run)."""
    return tuple(kv for kv in labels if kv[0] != "run")


def wait_samples(ex, n=1, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ex.gpu_sampler is not None and ex.gpu_sampler.samples >= n:
            return
        time.sleep(0.005)
    raise AssertionError("sampler did not sample")


@pytest.fixture
def fake(monkeypatch):
    """Three GPUs: energy NotSupported on GPU 0, NVLink TX field NotSupported on GPU 1,
    GPU 2 lost. Installed as the `pynvml` module the sampler imports lazily."""
    nv = FakeNVML(3, unsupported={0: {"nvmlDeviceGetTotalEnergyConsumption"}},
                  unsupported_fields={1: {FakeNVML.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX}},
                  lost={2})
    nv.gpus[0]["processes"] = [(os.getpid(), 3_000_000_000), (1, 5)]
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return nv


@pytest.fixture
def ex(fake):
    e = Exporter(run="r", serve=False, rank=0, gpu="auto", gpu_interval=60)
    wait_samples(e)
    yield e
    e.close()


def test_every_series_with_identity_labels_and_base_units(ex, fake):
    s = scrape(ex, with_run=True)
    g0 = gpu_labels(0)
    assert s[("hw_gpu_utilization_ratio", gpu_labels(0, task="general"))] == pytest.approx(0.87)
    assert s[("hw_gpu_utilization_ratio", gpu_labels(0, task="memory_copy"))] == pytest.approx(0.41)
    assert s[("hw_gpu_memory_usage_bytes", g0)] == 60_000_000_000
    assert s[("hw_gpu_memory_limit_bytes", g0)] == 85_520_809_984
    assert s[("hw_gpu_memory_free_bytes", g0)] == 85_520_809_984 - 60_000_000_000
    assert s[("hw_gpu_memory_utilization_ratio", g0)] == pytest.approx(60e9 / 85_520_809_984)
    assert s[("hw_gpu_process_memory_usage_bytes", g0)] == 3_000_000_000   # our PID only
    assert s[("hw_gpu_power_watts", g0)] == pytest.approx(612.345)          # mW -> W
    assert s[("hw_gpu_power_limit_watts", g0)] == 700.0
    assert s[("hw_gpu_temperature_celsius", g0)] == 71
    assert s[("hw_gpu_temperature_limit_celsius", gpu_labels(0, limit="slowdown"))] == 87
    assert s[("hw_gpu_clock_hertz", gpu_labels(0, clock="sm"))] == 1980e6     # MHz -> Hz
    assert s[("hw_gpu_clock_hertz", gpu_labels(0, clock="memory"))] == 2619e6
    assert s[("hw_gpu_clock_max_hertz", gpu_labels(0, clock="sm"))] == 1980e6
    assert s[("hw_gpu_clock_event_active", gpu_labels(0, reason="software_power_cap"))] == 1.0
    assert s[("hw_gpu_clock_event_active", gpu_labels(0, reason="software_thermal_slowdown"))] == 1.0
    assert s[("hw_gpu_clock_event_active", gpu_labels(0, reason="hardware_slowdown"))] == 0.0
    assert s[("hw_gpu_clock_event_seconds_total", gpu_labels(0, reason="power"))] == 2.5  # ns -> s
    assert s[("hw_gpu_errors_total", gpu_labels(0, error_type="corrected"))] == 2
    assert s[("hw_gpu_errors_total", gpu_labels(0, error_type="uncorrected"))] == 0
    assert s[("hw_gpu_errors_total", gpu_labels(0, error_type="pcie_replay"))] == 7
    assert s[("hw_gpu_io_bytes_total", gpu_labels(0, direction="transmit", link="nvlink"))] == 1024 * 1024
    assert s[("hw_gpu_io_bytes_total", gpu_labels(0, direction="receive", link="pcie"))] == 0  # from start
    assert s[("hw_gpu_energy_joules_total", gpu_labels(1))] == pytest.approx(123_456.789)  # mJ -> J
    assert s[("hw_gpu_status", gpu_labels(0, state="ok"))] == 1.0
    assert s[("rl_exporter_gpu_devices", (("run", "r"),))] == 3
    # every name we render is a catalog name
    assert {name for name, _ in s} <= CATALOG.names


def test_not_supported_is_isolated_counted_once_and_not_asked_again(ex, fake):
    for _ in range(3):
        ex.gpu_sampler.sample()
    s = scrape(ex)
    # GPU 0 has no energy series; GPU 1 does; GPU 0's other series are intact
    assert not [k for k in s if k[0] == "hw_gpu_energy_joules_total" and ("gpu", "0") in k[1]]
    assert s[("hw_gpu_power_watts", nr(gpu_labels(0)))] == pytest.approx(612.345)
    err = ("rl_exporter_gpu_query_errors_total",
           (("error", "not_supported"), ("gpu", "0"), ("query", "energy")))
    assert s[err] == 1
    calls_before = fake.calls["nvmlDeviceGetTotalEnergyConsumption"]
    ex.gpu_sampler.sample()
    # asked again on GPUs 1 (and not on 0, nor on lost GPU 2 which is only probed)
    assert fake.calls["nvmlDeviceGetTotalEnergyConsumption"] == calls_before + 1
    # a NotSupported field: the NVLink TX series of GPU 1 is absent, its RX series is there
    s = scrape(ex)
    io1 = {dict(k[1])["direction"] for k in s if k[0] == "hw_gpu_io_bytes_total"
           and ("gpu", "1") in k[1] and ("link", "nvlink") in k[1]}
    assert io1 == {"receive"}
    assert s[("rl_exporter_gpu_query_errors_total", (("error", "not_supported"), ("gpu", "1"),
                                                     ("query", "field:nvlink_throughput_data_tx")))] == 1
    assert s[("hw_gpu_status", nr(gpu_labels(1, state="ok")))] == 1


def test_lost_gpu_is_failed_and_others_unaffected(ex, fake):
    s = scrape(ex, with_run=True)
    assert s[("hw_gpu_status", gpu_labels(2, state="failed"))] == 1.0
    assert s[("hw_gpu_status", gpu_labels(2, state="ok"))] == 0.0
    assert not [k for k in s if k[0] == "hw_gpu_power_watts" and ("gpu", "2") in k[1]]
    assert s[("hw_gpu_power_watts", gpu_labels(1))] == pytest.approx(612.345)
    lost = {dict(k[1])["query"] for k in s if k[0] == "rl_exporter_gpu_query_errors_total"
            and ("error", "gpu_is_lost") in k[1]}
    assert "utilization" in lost  # the first per-sample query; the rest are not asked
    assert "memory" not in lost


def test_gpu_lost_mid_run_turns_gauges_nan_keeps_counters_then_recovers(ex, fake):
    fake.lost.add(0)
    ex.gpu_sampler.sample()
    s = scrape(ex, with_run=True)
    assert s[("hw_gpu_status", gpu_labels(0, state="failed"))] == 1.0
    assert math.isnan(s[("hw_gpu_power_watts", gpu_labels(0))])
    assert math.isnan(s[("hw_gpu_utilization_ratio", gpu_labels(0, task="general"))])
    assert s[("hw_gpu_clock_max_hertz", gpu_labels(0, clock="sm"))] == 1980e6  # static, kept
    assert s[("hw_gpu_errors_total", gpu_labels(0, error_type="corrected"))] == 2  # counter kept
    assert s[("hw_gpu_power_watts", gpu_labels(1))] == pytest.approx(612.345)
    fake.lost.discard(0)
    fake.gpus[0]["power_mw"] = 400_000
    ex.gpu_sampler.sample()
    s = scrape(ex, with_run=True)
    assert s[("hw_gpu_status", gpu_labels(0, state="ok"))] == 1.0
    assert s[("hw_gpu_power_watts", gpu_labels(0))] == 400.0


def test_other_errors_degrade_and_count_every_time(fake, monkeypatch):
    fake.failing[1] = {"nvmlDeviceGetPowerUsage": NVMLError_Timeout}
    ex = Exporter(run="r", serve=False, rank=RANK, gpu=True, gpu_interval=60)
    try:
        wait_samples(ex)
        ex.gpu_sampler.sample()
        s = scrape(ex)
        assert s[("rl_exporter_gpu_query_errors_total",
                  (("error", "timeout"), ("gpu", "1"), ("query", "power")))] == 2
        assert s[("hw_gpu_status", nr(gpu_labels(1, rank=RANK, state="degraded")))] == 1.0
        assert s[("hw_gpu_temperature_celsius", nr(gpu_labels(1, rank=RANK)))] == 71  # later queries ran
        assert s[("hw_gpu_status", nr(gpu_labels(0, rank=RANK, state="ok")))] == 1.0
    finally:
        ex.close()


def test_no_rank_label_when_exporter_has_no_rank(fake, monkeypatch):
    for var in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)
    ex = Exporter(run="r", serve=False, gpu="auto", gpu_interval=60)
    try:
        wait_samples(ex)
        keys = [k for k in scrape(ex) if k[0] == "hw_gpu_power_watts"]
        assert keys and all("rank" not in dict(k[1]) for k in keys)
    finally:
        ex.close()


def test_library_not_found_is_one_info_line_and_nothing_else(monkeypatch, caplog):
    nv = FakeNVML(library_missing=True)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.setattr("exporter.gpu._logged", set())
    with caplog.at_level(logging.INFO, logger="rl_exporter"):
        ex = Exporter(run="r", serve=False, gpu="auto")
        ex2 = Exporter(run="r2", serve=False, gpu="auto")
    try:
        assert ex.gpu_sampler is None and ex2.gpu_sampler is None
        lines = [r for r in caplog.records if "GPU sampler off" in r.getMessage()]
        assert len(lines) == 1 and lines[0].levelno == logging.INFO
        assert "NVML Shared Library Not Found" in lines[0].getMessage()
        assert not [k for k in scrape(ex) if CATALOG.metrics.get(k[0], None) is not None
                    and CATALOG.metrics[k[0]].group == "gpu"]
        ex.log({"actor/entropy": 1.0})
        assert scrape(ex)[("rl_entropy", ())] == 1.0
    finally:
        ex.close()
        ex2.close()


def test_explicit_gpu_true_without_nvml_warns(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(library_missing=True))
    monkeypatch.setattr("exporter.gpu._logged", set())
    with caplog.at_level(logging.INFO, logger="rl_exporter"):
        ex = Exporter(run="r", serve=False, gpu=True)
    ex.close()
    assert [r.levelno for r in caplog.records if "GPU sampler off" in r.getMessage()] == [logging.WARNING]


def test_gpu_off_never_touches_nvml(fake):
    ex = Exporter(run="r", serve=False, gpu=False)
    ex.close()
    assert ex.gpu_sampler is None and fake.calls == {}


def test_close_stops_thread_and_shuts_nvml_down(fake):
    ex = Exporter(run="r", serve=False, gpu="auto", gpu_interval=0.05)
    wait_samples(ex, 2)
    assert fake.initialised == 1
    ex.close()
    n = ex.gpu_sampler.samples
    time.sleep(0.15)
    assert ex.gpu_sampler.samples == n
    assert fake.initialised == 0
    assert not any(t.name == "rl-exporter-gpu" and t.is_alive() for t in threading.enumerate())


def test_interval_is_honoured(fake):
    ex = Exporter(run="r", serve=False, gpu="auto", gpu_interval=0.05)
    try:
        time.sleep(0.5)
        n = ex.gpu_sampler.samples
        assert 4 <= n <= 12, n
        assert scrape(ex)[("rl_exporter_gpu_samples_total", ())] >= 4
    finally:
        ex.close()


# ---------------------------------------------------------------- CUDA_VISIBLE_DEVICES
def devs(n=4):
    return [Device(i, i, uuid(i), H100) for i in range(n)]


@pytest.mark.parametrize("env, expect", [
    (None, [0, 1, 2, 3]),
    ("", []),
    ("2,0", [2, 0]),                       # CUDA order: cuda:0 is NVML 2
    ("1, 3", [1, 3]),
    ("0,7,1", [0]),                        # invalid entry: it and the rest ignored (as CUDA)
    ("-1", []),
    ("GPU-00000002", [2]),                 # unique UUID prefix
    (uuid(3) + ",0", [3, 0]),
    ("GPU-0000000", []),                   # ambiguous prefix
    ("MIG-4f1e2d3c-aaaa-bbbb-cccc-000000000000,1", [1]),  # MIG skipped, rest kept
    ("1,1,2", [1, 2]),
])
def test_cuda_visible_devices(env, expect):
    visible, _ = parse_visible(env, devs())
    assert [d.index for d in visible] == expect


def test_sampler_labels_nvml_indices_of_visible_gpus_and_local_rank(fake):
    store = Store("r", CATALOG)
    s = GPUSampler(store, nvml=fake, env={"CUDA_VISIBLE_DEVICES": "2,0"}).start(thread=False)
    assert [d.index for d in s.devices] == [2, 0]
    s.stop()
    store = Store("r", CATALOG)
    s = GPUSampler(store, nvml=fake, mode="local",
                   env={"CUDA_VISIBLE_DEVICES": "1,0", "LOCAL_RANK": "1"}).start(thread=False)
    s.sample()
    assert [d.index for d in s.devices] == [0]
    gpus = {lab["gpu"] for m, lab in zip(store.metrics, store.labels) if m.name == "hw_gpu_power_watts"}
    assert gpus == {"0"}
    s.stop()


def test_wrapping_32bit_pcie_counter_accumulates(fake):
    fake.field_types = {197: 1}  # PCIe TX as a 32-bit unsigned value
    fake.lost.clear()
    store = Store("r", CATALOG)
    s = GPUSampler(store, nvml=fake, env={"CUDA_VISIBLE_DEVICES": "1"}).start(thread=False)
    lab = {"gpu": "1", "uuid": uuid(1), "gpu_model": H100, "direction": "transmit", "link": "pcie"}
    fake.gpus[1]["fields"][197] = (1 << 32) - 100
    s.sample()
    fake.gpus[1]["fields"][197] = (1 << 32) - 40
    s.sample()
    assert store.get("hw_gpu_io_bytes_total", lab) == 60
    fake.gpus[1]["fields"][197] = 20  # wrapped
    s.sample()
    assert store.get("hw_gpu_io_bytes_total", lab) == 120
    s.stop()


def test_process_memory_absent_when_pid_not_listed(ex):
    keys = [k for k in scrape(ex) if k[0] == "hw_gpu_process_memory_usage_bytes"]
    assert [dict(k[1])["gpu"] for k in keys] == ["0"]


def test_start_sampler_rejects_unknown_mode_as_auto(fake, caplog):
    with caplog.at_level(logging.ERROR, logger="rl_exporter"):
        s = start_store_sampler(Store("r", CATALOG), "sometimes", 60, nvml=fake)
    try:
        assert s is not None and caplog.text.count("not one of") == 1
    finally:
        s.stop()


def test_nvml_calls_do_not_hold_the_gil():
    """While the sampler waits in NVML (here: a C poll() through ctypes.CDLL, as pynvml's
    calls are), another Python thread keeps running: each query waits in C until this
    thread writes it a byte, which it can only do while the query waits without the GIL.
    (A held GIL would stop this thread for the whole call: each query would then end by its
    30 s timeout instead; how long a held GIL stops a thread is benchmarks/bench_gpu.py's.)"""
    r, w = os.pipe()
    try:
        nv = FakeNVML(1)
        store = Store("r", CATALOG)
        s = GPUSampler(store, nvml=nv, env={}).start(thread=False)
        nv.gate = r  # only the sample's queries wait for their byte
        before = sum(nv.calls.values())
        done = threading.Event()
        t = threading.Thread(target=lambda: (s.sample(), done.set()))
        t.start()
        fed = 0
        while not done.is_set():
            if sum(nv.calls.values()) > before + fed:  # a query is waiting in C for its byte
                os.write(w, b"x")
                fed += 1
            time.sleep(0.001)
        t.join()
        s.stop()
    finally:
        os.close(r)
        os.close(w)
    queried = sum(nv.calls.values()) - before
    assert nv.gated > 0 and nv.gated == fed, (nv.gated, fed, queried)


def test_serve_samples_gpus_once_from_start(monkeypatch, tmp_path):
    """The sidecar samples GPUs before any log line arrives, and only once per process."""
    from prometheus_client import generate_latest
    from exporter.sidecar.sidecar import Sidecar
    from exporter.sidecar.source import SourceSpec
    nv = FakeNVML(2)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    log = tmp_path / "train.log"
    log.write_text("step:1 - actor/pg_clipfrac:0.1\n")
    sc = Sidecar([SourceSpec(f"verl:{log}", "side")], run="side", port=None, gpu="auto", gpu_interval=0.05)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and sc.gpu_store.get(
                "hw_gpu_utilization_ratio", {"gpu": "1", "uuid": uuid(1), "gpu_model": H100,
                                             "task": "general"}) is None:
            time.sleep(0.02)
        while time.monotonic() < deadline + 5 and not any(
                ex.stats()["frames_processed"] for ex in sc.runs.values()):
            sc.poll_once()
            time.sleep(0.05)
        for ex in sc.runs.values():
            ex.flush()
        text = generate_latest(sc.registry).decode()
    finally:
        sc.close()
    util = [line for line in text.splitlines() if line.startswith("hw_gpu_utilization_ratio{")
            and 'task="general"' in line]
    assert len(util) == 2 and all('run="side"' in line for line in util)
    assert 'rl_policy_clip_ratio{run="side"} 0.1' in text
