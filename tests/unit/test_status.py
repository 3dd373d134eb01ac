"""GET /status and GET /debug/stacks over real HTTP on the exporter's port, the access rule
(403 from a non-loopback address without the token), and `rl-exporter status`."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from exporter import Exporter
from exporter.stacks import HangWatch, access
from exporter.testing import phase_open
from exporter.core.thresholds import HangThresholds

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def base(ex):
    return ex.url[: -len("/metrics")]


def _non_loopback_addr():
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("192.0.2.1", 9))  # no packet is sent: picks the outgoing interface
        addr = s.getsockname()[0]
        s.close()
    except OSError:
        return None
    return None if addr.startswith("127.") else addr


def test_status_fields_over_http():
    with Exporter(run="st-a", framework="verl", port=0, gpu=False) as ex:
        ex.store.set("rl_config_value", 100.0, {"parameter": "total_training_steps"})
        ex.store.set("rl_config_value", 0.0, {"parameter": "async_training"})  # gen is the step
        t0 = time.time() - 100
        for i in range(5):  # steps every 10 s, recorded with their own timestamps
            ex.process_now({"timing_s/gen": 4.0}, i, t0 + 10 * i)
        release = threading.Event()
        inside = threading.Event()

        def hold():
            with ex.timer("update_actor"):
                inside.set()
                release.wait(10)
        t = threading.Thread(target=hold)
        t.start()
        inside.wait(5)
        opened = time.monotonic()
        time.sleep(0.2)
        try:
            status, ctype, body = get(base(ex) + "/status")
            asked, open_for = time.time(), time.monotonic() - opened
        finally:
            release.set()
            t.join()
    st = json.loads(body)
    assert status == 200 and ctype == "application/json"
    assert st["schema"] == "rl-exporter/status/v1" and st["run"] == "st-a"
    assert st["step"] == 4 and st["total_steps"] == 100 and st["progress"] == 0.04
    assert st["expected_step_seconds"] == 10.0
    assert st["eta_seconds"] == (100 - 4) * 10.0
    assert 60 <= st["seconds_since_last_step"] <= asked - (t0 + 40)  # last step at t0 + 40
    [ph] = st["open_phases"]
    assert ph["phase"] == "update_actor" and 0.2 <= ph["open_seconds"] <= open_for + 0.01
    assert not ph["hung"]
    assert st["state"] == "running"
    gp = st["goodput"]
    assert gp["buckets"]["step"] == pytest.approx(40.0, abs=0.01)
    assert gp["ratio"] == pytest.approx(40.0 / gp["accounted_seconds"], abs=1e-3)


def test_status_state_hung_and_stalled():
    with Exporter(run="st-b", port=0, gpu=False) as ex:
        ex.hang_watch.thresholds = HangThresholds(phase_no_history_s=0.1, stall_floor_s=0.5)
        ex.process_now({}, 1, time.time() - 5)
        st = json.loads(get(base(ex) + "/status")[2])
        assert st["state"] == "stalled" and st["stall_threshold_seconds"] == 0.5
        with ex.timer("gen"):
            time.sleep(0.3)
            st = json.loads(get(base(ex) + "/status")[2])
        assert st["state"] == "hung" and st["open_phases"][0]["hung"]


def test_debug_stacks_on_demand_names_the_blocked_function():
    stop = threading.Event()

    def parked_in_a_recognisable_place():
        stop.wait(10)
    t = threading.Thread(target=parked_in_a_recognisable_place, name="parked")
    t.start()
    try:
        with Exporter(run="st-c", port=0, gpu=False) as ex:
            status, ctype, body = get(base(ex) + "/debug/stacks")
    finally:
        stop.set()
        t.join()
    assert status == 200 and ctype.startswith("text/plain")
    assert 'Thread "parked"' in body and "parked_in_a_recognisable_place" in body
    assert 'Thread "rl-exporter-worker"' in body


def test_debug_stacks_refused_off_loopback_without_token(monkeypatch):
    addr = _non_loopback_addr()
    if addr is None:  # no such address here: the access rule itself
        assert access({"REMOTE_ADDR": "10.1.2.3"}, None)[0] == "403 Forbidden"
        pytest.skip("no non-loopback local address to bind")
    with Exporter(run="st-d", addr=addr, port=0, gpu=False) as ex:
        with pytest.raises(urllib.error.HTTPError) as e:
            get(base(ex) + "/debug/stacks")
        assert e.value.code == 403
        # /status is read-only like /metrics: served to anyone who can reach the port
        assert get(base(ex) + "/status")[0] == 200
    monkeypatch.setenv("RL_EXPORTER_DEBUG_TOKEN", "s3cret")
    with Exporter(run="st-e", addr=addr, port=0, gpu=False) as ex:
        with pytest.raises(urllib.error.HTTPError) as e:
            get(base(ex) + "/debug/stacks", {"Authorization": "Bearer wrong"})
        assert e.value.code == 401
        status, _, body = get(base(ex) + "/debug/stacks", {"Authorization": "Bearer s3cret"})
        assert status == 200 and "rl-exporter-worker" in body


def test_access_rule():
    assert access({"REMOTE_ADDR": "127.0.0.1"}, None) is None
    assert access({"REMOTE_ADDR": "::1"}, None) is None
    assert access({"REMOTE_ADDR": "10.0.0.5"}, None)[0].startswith("403")
    # a token makes even loopback present it
    assert access({"REMOTE_ADDR": "127.0.0.1"}, "t")[0].startswith("401")
    assert access({"REMOTE_ADDR": "10.0.0.5", "HTTP_AUTHORIZATION": "Bearer t"}, "t") is None


def test_hang_watch_captures_once_per_hang(tmp_path):
    spool = str(tmp_path / "run.spool")
    with Exporter(run="st-f", serve=False, gpu=False, spool=spool) as ex:
        w = HangWatch(ex, HangThresholds(phase_no_history_s=0.2, phase_floor_s=0.1, phase_factor=0.5,
                                         stall_floor_s=3600), start=False)
        with ex.timer("weight_sync"):
            assert w.check(ex) == []          # not yet past its threshold
            time.sleep(0.3)
            [cap] = w.check(ex)
            assert w.check(ex) == []          # the same hang is captured once
        assert cap["reason"] == "phase_hung" and cap["phase"] == "weight_sync"
        assert "test_hang_watch_captures_once_per_hang" in cap["stacks"]
        with ex.timer("weight_sync"):         # a new occurrence that hangs: a new capture
            time.sleep(0.3)
            assert len(w.check(ex)) == 1
    text = open(spool + ".stacks").read()
    assert text.count("# rl-exporter hang dump") == 2 and "weight_sync" in text


def test_status_cli_prints_and_passes_json():
    with Exporter(run="st-g", port=0, gpu=False) as ex:
        ex.store.set("rl_config_value", 10.0, {"parameter": "total_training_steps"})
        t0 = time.time() - 30
        for i in range(3):
            ex.process_now({}, i, t0 + 5 * i)
        env = dict(os.environ, PYTHONPATH=ROOT)
        out = subprocess.run([sys.executable, "-m", "exporter.cli", "status", ex.url],
                             capture_output=True, text=True, env=env, timeout=60)
        js = subprocess.run([sys.executable, "-m", "exporter.cli", "status", base(ex), "--json"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "run st-g" in out.stdout and "step 2 of 10 (20.0%)" in out.stdout
    assert "ETA 40.0s" in out.stdout  # (10 - 2) x 5 s
    assert json.loads(js.stdout)["step"] == 2
    bad = subprocess.run([sys.executable, "-m", "exporter.cli", "status", "http://127.0.0.1:1"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 7 and "cannot read" in bad.stderr  # unreachable


def test_replayed_steps_are_no_live_stall():
    """backfill and the sidecar's restore stamp steps with the log's old time: the hang watch
    must not take that for a stall of this process (and dump its stacks)."""
    with Exporter(run="st-h", serve=False, gpu=False) as ex:
        w = HangWatch(ex, HangThresholds(stall_floor_s=1.0), start=False)
        ex.process_now({}, 5, time.time() - 86400)  # a step from yesterday's log
        assert w.check(ex) == []
        ex.process_now({}, 6, time.time())          # a live step; 5 s later, past the 1 s floor
        [cap] = w.check(ex, now=time.time() + 5)
        assert cap["reason"] == "no_step" and cap["last_step"] == 6
    from exporter.postmortem.replay import Replay
    rp = Replay("st-i", "verl")
    try:
        assert not hasattr(rp.pipeline, "hang_watch")  # a replay's pipeline watches nothing
    finally:
        rp.close()


def test_late_is_many_step_times_without_a_step_short_of_the_stall_page():
    """2-second steps, the last one 18 minutes ago: not RUNNING, and not yet RLRunStalled."""
    from exporter.commands.status import exit_code, render
    with Exporter(run="st-late", serve=False, gpu=False) as ex:
        t0 = time.time() - 18 * 60 - 20
        for i in range(11):
            ex.process_now({}, i, t0 + 2 * i)
        from exporter.status import build
        st = build(ex)
        assert st["state"] == "late" and st["lifecycle"] == "running"
        assert st["late_threshold_seconds"] == 60.0 and st["stall_threshold_seconds"] == 1800.0
        assert exit_code(st) == 3
        assert "LATE (no step for more than 60.0s; stalled after 30.0m)" in render(st)
        st = build(ex, now=t0 + 20 + 30)  # 30 s after the last step: on time
        assert st["state"] == "running" and exit_code(st) == 0


def test_a_pause_is_not_late_stalled_or_hung_and_its_time_is_left_out_after_it():
    from exporter.status import build
    with Exporter(run="st-pause", serve=False, gpu=False) as ex:
        ex.hang_watch.thresholds = HangThresholds(phase_no_history_s=0.1, stall_floor_s=0.5)
        now = time.time()
        for i in range(5):
            ex.process_now({}, i, now - 10 + 0.1 * i)
        with ex.timer("gen"):
            with ex.timer("heat_guard"):
                time.sleep(0.3)
                st = build(ex)
                assert st["state"] == "paused" and not st["open_phases"][0]["hung"]
                assert st["goodput"]["stalled_now_seconds"] == 0.0
                assert ex.hang_watch.check(ex) == []  # no stacks for a declared pause
        ex.process_now({}, 5, time.time())
        assert build(ex)["state"] == "running"


def test_finished_and_crashed_states_say_so_and_exit_codes_rank_the_worst():
    from exporter.commands.status import exit_code, render
    from exporter.status import build
    with Exporter(run="st-end", serve=False, gpu=False) as ex:
        ex.process_now({}, 1, time.time())
        ex.lifecycle.crashed("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2 GiB",
                             final=True)  # as the excepthook records it
        st = build(ex)
        assert st["state"] == "crashed" and st["crash"] == {
            "exception": "torch.OutOfMemoryError",
            "message": "CUDA out of memory. Tried to allocate 2 GiB"}
        assert "CRASHED for" in render(st) and "torch.OutOfMemoryError: CUDA out of memory" in render(st)
        assert exit_code(st) == 6
    assert build(ex)["state"] == "crashed"  # close() after a crash keeps it
    runs = {"runs": [dict(st, state="running"), dict(st, state="stalled"), dict(st, state="late")]}
    assert exit_code(runs) == 4
    with Exporter(run="st-done", serve=False, gpu=False) as done:
        done.process_now({}, 1, time.time())
    assert build(done)["state"] == "finished" and exit_code(build(done)) == 0
