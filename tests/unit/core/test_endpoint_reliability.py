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


def until(cond, timeout: float = 30.0) -> None:
    """Wait for a condition (a hang guard, not a speed bound)."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_restart_binds_at_once_although_old_connections_are_in_time_wait():
    """The server closes each HTTP/1.0 connection first, so its side sits in TIME_WAIT
    for ~60 s: without SO_REUSEADDR a restarted exporter could not bind its port."""
    ep = endpoint()
    port = ep.port
    for _ in range(3):
        assert b"up_test" in urllib.request.urlopen(ep.url, timeout=5).read()
    ep.stop()
    again = endpoint(port)  # without SO_REUSEADDR: EADDRINUSE, at once (no retry asked)
    try:
        assert again.port == port
        assert b"up_test" in urllib.request.urlopen(again.url, timeout=5).read()
    finally:
        again.stop()


def test_a_second_live_listener_on_the_port_still_fails():
    ep = endpoint()
    try:
        t0 = time.monotonic()
        with pytest.raises(OSError):
            endpoint(ep.port, bind_retry_s=0.6)
        assert 0.5 <= time.monotonic() - t0 < 60  # retried for the time given, then gave up
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
        # 4 handler threads are busy with idle clients; the rest are refused at once, counted
        until(lambda: ep.stats["refused"] + ep.stats["evicted"] >= 6)
        assert sum(1 for t in threading.enumerate() if t.name.startswith("rl-exporter-http-")) <= 4
        until(lambda: ep.stats["timed_out"] >= 4)  # the idle ones dropped by the read timeout
        body = urllib.request.urlopen(ep.url, timeout=5).read()
        assert b"up_test" in body
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


def slow_client(port, head=b"GET /metrics HTTP/1.1\r\nHost: x\r\n"):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head)
    return s


def test_slow_clients_holding_every_slot_cannot_starve_a_scrape(monkeypatch):
    """The review's S7: 64 connections each sending a header line a second held every slot
    forever (the timeout was per read): every scrape got 503. A request still arriving
    after EVICT_AFTER_S now gives its slot to a newcomer, counted."""
    from exporter.core import endpoint as epmod
    monkeypatch.setattr(epmod, "EVICT_AFTER_S", 0.05)
    ep = endpoint(max_connections=4)
    try:
        slow = [slow_client(ep.port) for _ in range(4)]
        time.sleep(0.2)                     # older than EVICT_AFTER_S, all still sending
        for _ in range(3):
            for s in slow:
                try:
                    s.sendall(b"X-a: b\r\n")  # one more header line each: never idle
                except OSError:             # the one evicted
                    pass
            assert b"up_test" in urllib.request.urlopen(ep.url, timeout=5).read()
        assert ep.stats["evicted"] >= 1 and ep.stats["refused"] == 0, ep.stats
        for s in slow:
            s.close()
    finally:
        ep.stop()


@pytest.mark.parametrize("head", [b"GET /metrics HTTP/1.1\r\nHost: x\r\n",
                                  b"POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 9999\r\n"
                                  b"\r\n{"])
def test_a_request_dripped_slower_than_its_deadline_is_closed(head):
    """A byte before every read timeout kept a connection (and its thread) for good: each
    request now has a deadline from its accept, headers and body included."""
    ep = endpoint(request_timeout_s=0.5, read_timeout_s=5.0)
    ep.add_route("/ingest", lambda env, sr: (sr("200 OK", []), [env["wsgi.input"].read(9999)])[1])
    try:
        s = slow_client(ep.port, head)
        s.settimeout(0.2)
        closed, deadline = False, time.monotonic() + 30
        while not closed and time.monotonic() < deadline:
            try:
                s.sendall(b"X")             # a byte every 0.2 s: never idle for a read
                closed = s.recv(1) == b""
            except socket.timeout:
                continue
            except OSError:
                closed = True
        s.close()
        assert closed
        assert ep.stats["timed_out"] >= 1, ep.stats
    finally:
        ep.stop()


@pytest.mark.parametrize("accept,gzip", [("gzip", True), ("gzip;q=0, identity", False),
                                         ("identity, gzip;q=0.5", True), ("*", True),
                                         ("*;q=0", False), ("deflate", False)])
def test_gzip_only_where_the_client_accepts_it(accept, gzip):
    """The review's 1.5: `gzip;q=0` still got gzip (prometheus_client matches the name)."""
    ep = endpoint()
    try:
        r = urllib.request.urlopen(urllib.request.Request(ep.url, headers={
            "Accept-Encoding": accept}), timeout=5)
        assert (r.headers.get("Content-Encoding") == "gzip") is gzip
    finally:
        ep.stop()
