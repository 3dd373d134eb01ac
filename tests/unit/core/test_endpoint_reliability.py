"""The HTTP endpoint under the reliability review's attacks: a restart on a port whose old
connections sit in TIME_WAIT, idle connections, a connection flood, HEAD."""
import socket
import threading
import time
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Gauge

from exporter.core.endpoint import Endpoint


def endpoint(port=0, **kw):
    reg = CollectorRegistry()
    Gauge("up_test", "t", registry=reg).set(1)
    ep = Endpoint(reg, "127.0.0.1", port, **kw)
    ep.start()
    return ep


def test_restart_binds_at_once_although_old_connections_are_in_time_wait():
    """The server closes each HTTP/1.0 connection first, so its side sits in TIME_WAIT
    for ~60 s: without SO_REUSEADDR a restarted exporter could not bind its port."""
    ep = endpoint()
    port = ep.port
    for _ in range(3):
        assert b"up_test" in urllib.request.urlopen(ep.url, timeout=5).read()
    ep.stop()
    t0 = time.monotonic()
    again = endpoint(port)
    try:
        assert again.port == port and time.monotonic() - t0 < 2.0
        assert b"up_test" in urllib.request.urlopen(again.url, timeout=5).read()
    finally:
        again.stop()


def test_a_second_live_listener_on_the_port_still_fails():
    ep = endpoint()
    try:
        t0 = time.monotonic()
        with pytest.raises(OSError):
            endpoint(ep.port, bind_retry_s=0.6)
        assert 0.5 <= time.monotonic() - t0 < 5.0  # retried for the time given, then gave up
    finally:
        ep.stop()


def test_a_port_freed_during_the_retry_is_taken():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    threading.Timer(0.5, holder.close).start()  # the old process exits meanwhile
    ep = endpoint(port, bind_retry_s=10.0)
    try:
        assert ep.port == port
    finally:
        ep.stop()


def test_idle_connections_time_out_and_threads_are_capped():
    ep = endpoint(read_timeout_s=0.5, max_connections=4)
    try:
        idle = [socket.create_connection(("127.0.0.1", ep.port)) for _ in range(10)]
        time.sleep(0.3)
        # 4 handler threads are busy with idle clients; the rest are refused at once, counted
        assert ep.stats["refused"] >= 6, ep.stats
        assert sum(1 for t in threading.enumerate() if t.name.startswith("rl-exporter-http-")) <= 4
        time.sleep(0.8)                     # the idle ones are dropped by the read timeout
        body = urllib.request.urlopen(ep.url, timeout=5).read()
        assert b"up_test" in body
        assert ep.stats["timed_out"] >= 4, ep.stats
        for s in idle:
            s.close()
    finally:
        ep.stop()


def test_head_metrics_is_200_without_a_body():
    ep = endpoint()
    try:
        r = urllib.request.urlopen(urllib.request.Request(ep.url, method="HEAD"), timeout=5)
        assert r.status == 200 and r.read() == b""
        assert r.headers["Content-Type"].startswith("text/plain")
    finally:
        ep.stop()
