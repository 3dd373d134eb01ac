"""The HTTP endpoint: read-only /metrics (Prometheus text or OpenMetrics, by the
Accept header; HEAD too), /healthz, and any POST routes a component adds (the
sidecar's /ingest). Bound to 127.0.0.1 unless told otherwise.

Bounded, and slow clients cannot starve it: each connection (one request: HTTP/1.0) has
a deadline, request_timeout_s from its accept to its close, and one read that waits
read_timeout_s ends it too (both counted in stats["timed_out"]). At most max_connections
are served at once. When all are taken, the oldest connection that has been sending its
request for longer than EVICT_AFTER_S without it being answered (one byte of header a
second, a body dripped) is closed to make room (stats["evicted"]): a scraper, whose
request arrives at once, always gets a slot. Only when every slot is held by a request
younger than that, or already being answered, is the newcomer answered 503 at once
(stats["refused"]). Each is said once.
Restartable: SO_REUSEADDR lets a restarted exporter bind while the previous one's
connections sit in TIME_WAIT (Linux still refuses a second live listener), and
start() retries a port in use for bind_retry_s (default 0: at once) before raising, and
says so when it starts waiting."""
from __future__ import annotations

import errno
import json
import logging
import socket
import threading
import time
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

log = logging.getLogger(__name__)

DEFAULT_PORT = 9464  # the OTel Prometheus exporter's port
DEFAULT_ADDR = "127.0.0.1"


_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
         b"Connection: close\r\nRetry-After: 1\r\n\r\ntoo many connections\n")
EVICT_AFTER_S = 0.25  # a request still arriving after this long may lose its slot to a new one
_tls = threading.local()  # the connection the serving thread is on


class _Conn:
    __slots__ = ("sock", "start", "answering", "closed")

    def __init__(self, sock, start: float):
        self.sock, self.start, self.answering, self.closed = sock, start, False, False

    def close(self) -> None:
        """End the exchange from another thread: the serving thread's read or write fails
        at once, and it returns."""
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding header admits gzip (RFC 9110: `gzip;q=0` and `*;q=0`
    refuse it; prometheus_client checks only that the name appears)."""
    star = None
    for part in (header or "").split(","):
        name, *params = [x.strip() for x in part.split(";")]
        q = 1.0
        for prm in params:
            if prm[:2].lower() == "q=":
                try:
                    q = float(prm[2:])
                except ValueError:
                    q = 0.0
        name = name.lower()
        if name == "gzip":
            return q > 0
        if name == "*":
            star = q > 0
    return bool(star)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    # TIME_WAIT connections of a previous process must not block a restart; on Linux
    # SO_REUSEADDR never lets two live listeners share the port (the second still fails)
    allow_reuse_address = True
    request_queue_size = 128     # listen backlog: socketserver's 5 refuses concurrent scrapers
    endpoint = None              # the Endpoint: its limits and counters

    def process_request(self, request, client_address):
        ep = self.endpoint
        conn = ep._admit(request)
        if conn is None:
            ep._count("refused", f"{ep.max_connections} connections at once, none of them a "
                      "slow request: answering 503 (counted; logged once)")
            try:
                request.settimeout(0.5)
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        t = threading.Thread(target=self._serve_one, args=(request, client_address, conn),
                             name=f"rl-exporter-http-{client_address[1]}", daemon=True)
        t.start()

    def _serve_one(self, request, client_address, conn):
        _tls.conn = conn
        try:
            self.process_request_thread(request, client_address)
        finally:
            _tls.conn = None
            self.endpoint._release(conn)

    def service_actions(self):  # serve_forever's loop, every poll interval
        self.endpoint._reap(time.monotonic())


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    timeout = 10.0  # per read; set from Endpoint.read_timeout_s

    def log_message(self, *args):  # scrapes every few seconds would flood the trainer's log
        pass

    def get_environ(self):
        """Plus both ends of the connection: /debug/stacks tells its client's user by them
        (exporter/stacks.py)."""
        env = super().get_environ()
        env["rlx.peer"] = tuple(self.client_address[:2])
        try:
            env["rlx.local"] = tuple(self.connection.getsockname()[:2])
        except OSError:
            pass
        return env

    def handle(self):
        try:
            super().handle()
        except socket.timeout:  # an idle or slow client: closed, counted
            self.server.endpoint._count("timed_out")
            self.close_connection = True
        except OSError:  # closed under it: past its deadline, or evicted (counted there)
            self.close_connection = True


class _Served:
    """A WSGI body that says when it was sent: the server calls close() after the last byte."""

    __slots__ = ("_body", "_done", "_n")

    def __init__(self, body, done, n):
        self._body, self._done, self._n = body, done, n

    def __iter__(self):
        return iter(self._body)

    def __len__(self):  # a one-block body gets its Content-Length (TypeError otherwise)
        return len(self._body)

    def close(self):
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._done(self._n)


class Endpoint:
    def __init__(self, registry, addr: str = DEFAULT_ADDR, port: int = DEFAULT_PORT,
                 health=None, *, read_timeout_s: float = 10.0, request_timeout_s: float = 10.0,
                 max_connections: int = 64, bind_retry_s: float = 0.0):
        self.registry = registry
        self.addr = addr
        self.port = port
        self.read_timeout_s = read_timeout_s
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        self.bind_retry_s = bind_retry_s
        self._conns: dict[int, _Conn] = {}   # id(socket) -> connection being served
        self._conns_lock = threading.Lock()
        self.stats = {"refused": 0, "timed_out": 0, "evicted": 0}
        self.scraped = threading.Event()  # set by the first GET/HEAD of /metrics
        # scrapes of /metrics: begun, served to the end, and when the last two began
        # (monotonic), so an exporter that ends can hold on until one more has read it
        self.scrapes_begun = self.scrapes_done = 0
        self._scrape_times: list[float] = []
        self._scrape_cond = threading.Condition()
        self._said: set = set()
        self.health = health or (lambda: {"status": "ok"})
        self.routes: dict[str, object] = {}  # path -> wsgi app for POST
        self._metrics_app = make_wsgi_app(registry)
        self._server = None
        self._thread = None

    def add_route(self, path: str, app) -> None:
        self.routes[path] = app

    # ------------------------------------------------------------ connection slots
    def _admit(self, sock) -> _Conn | None:
        """A slot for a new connection: a free one, else the one of the oldest request
        still arriving after EVICT_AFTER_S (closed, counted); None: refuse it."""
        now = time.monotonic()
        with self._conns_lock:
            self._reap_locked(now)
            if len(self._conns) >= self.max_connections:
                slow = [c for c in self._conns.values()
                        if not c.answering and now - c.start >= EVICT_AFTER_S]
                if not slow:
                    return None
                victim = min(slow, key=lambda c: c.start)
                del self._conns[id(victim.sock)]
                self._count("evicted", f"all {self.max_connections} connections taken: the "
                            "slowest request still arriving is closed to make room (counted; "
                            "logged once)")
                victim.close()  # (counted first: whoever sees it closed sees it counted)
            conn = self._conns[id(sock)] = _Conn(sock, now)
            return conn

    def _release(self, conn: _Conn) -> None:
        with self._conns_lock:
            if self._conns.get(id(conn.sock)) is conn:
                del self._conns[id(conn.sock)]

    def _reap(self, now: float) -> None:
        with self._conns_lock:
            self._reap_locked(now)

    def _reap_locked(self, now: float) -> None:
        """Close every connection past its deadline (the slot is free at once)."""
        late = [c for c in self._conns.values() if now - c.start > self.request_timeout_s]
        for c in late:
            del self._conns[id(c.sock)]
            self._count("timed_out", f"a request took longer than {self.request_timeout_s:g} s "
                        "(a slow or stalled client): closed (counted; logged once)")
            c.close()

    def _count(self, what: str, message: str | None = None) -> None:
        self.stats[what] += 1
        if message and what not in self._said:
            self._said.add(what)
            log.warning("rl-exporter endpoint: %s", message)

    def _app(self, environ, start_response):
        conn = getattr(_tls, "conn", None)
        if conn is None:
            return self._route(environ, start_response)
        if environ.get("CONTENT_LENGTH", "") in ("", "0"):  # no body to wait for: it has
            conn.answering = True                            # arrived (a scrape renders now)
            return self._route(environ, start_response)

        def answer(status, headers, exc_info=None):
            conn.answering = True  # the request (its body too) has arrived: not evictable
            return start_response(status, headers, exc_info)
        return self._route(environ, answer)

    def _route(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        method = environ.get("REQUEST_METHOD", "GET")
        if path in self.routes:
            return self.routes[path](environ, start_response)
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD"),
                                                      ("Content-Type", "text/plain")])
            return [b"read-only endpoint\n"]
        if path == "/metrics":
            self.scraped.set()
            n = self._scrape_begins()
            # what prometheus_client's app (which looks for the name only) should see
            gz = accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING"))
            environ = dict(environ, HTTP_ACCEPT_ENCODING="gzip" if gz else "identity")
            if method == "HEAD":  # prometheus_client's app answers 405 to HEAD
                body = self._metrics_app(dict(environ, REQUEST_METHOD="GET"), start_response)
                close = getattr(body, "close", None)
                if close is not None:
                    close()
                self._scrape_done(n)
                return []
            return _Served(self._metrics_app(environ, start_response), self._scrape_done, n)
        if path in ("/healthz", "/health"):
            try:
                body = self.health()
                ok = body.get("status", "ok") == "ok"
            except Exception as e:  # a broken health callback is itself unhealthy
                body, ok = {"status": "error", "error": str(e)}, False
            start_response("200 OK" if ok else "503 Service Unavailable",
                           [("Content-Type", "application/json")])
            return [json.dumps(body).encode()]
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"rl-exporter: see /metrics and /healthz\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]

    # ------------------------------------------------------------ scrapes
    def _scrape_begins(self) -> int:
        with self._scrape_cond:
            self.scrapes_begun += 1
            self._scrape_times = (self._scrape_times + [time.monotonic()])[-2:]
            return self.scrapes_begun

    def _scrape_done(self, n: int) -> None:
        with self._scrape_cond:
            self.scrapes_done = max(self.scrapes_done, n)
            self._scrape_cond.notify_all()

    def scrape_interval(self) -> float | None:
        """Seconds between the last two scrapes' starts, once there were two."""
        t = self._scrape_times
        return t[1] - t[0] if len(t) == 2 else None

    def wait_for_scrape(self, after: int, deadline: float) -> bool:
        """Wait until a scrape that began after the first `after` scrapes has been served to
        its end, or time.monotonic() reaches deadline; True when one was."""
        with self._scrape_cond:
            while self.scrapes_done <= after:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._scrape_cond.wait(left)
            return True

    def last_scrape_age(self) -> float | None:
        t = self._scrape_times
        return time.monotonic() - t[-1] if t else None

    def start(self) -> None:
        """Bind and serve in a daemon thread. Raises OSError if the port is taken (by a
        live listener: retried for bind_retry_s first, as a previous process exits)."""
        self.bind()
        self._thread = threading.Thread(target=self._server.serve_forever, name="rl-exporter-http",
                                        daemon=True)
        self._thread.start()

    def bind(self):
        """Bind the port without serving yet; returns the server (the simulated fleet serves
        thousands of them from one selector thread)."""
        # an IPv6 literal ("::1", "::") needs an AF_INET6 socket; names and IPv4 stay AF_INET
        base = _Server6 if ":" in self.addr else _Server
        handler = type("_Handler", (_QuietHandler,), {"timeout": self.read_timeout_s})
        cls = type(base.__name__, (base,), {"endpoint": self})
        deadline = time.monotonic() + self.bind_retry_s
        while True:
            try:
                self._server = make_server(self.addr.strip("[]"), self.port, self._app, cls,
                                           handler)
                break
            except OSError as e:
                if e.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                    raise
                if deadline - time.monotonic() > self.bind_retry_s - 0.25:  # said once, at once
                    log.warning("rl-exporter endpoint: %s:%s is in use; waiting up to %.0f s for "
                                "it to be freed", self.addr, self.port, self.bind_retry_s)
                time.sleep(0.25)
        self.port = self._server.server_address[1]
        return self._server

    @property
    def url(self) -> str | None:
        if self._server is None:
            return None
        addr = self.addr.strip("[]")
        if addr in ("0.0.0.0", ""):
            addr = "127.0.0.1"
        elif addr == "::":
            addr = "::1"
        host = f"[{addr}]" if ":" in addr else addr
        return f"http://{host}:{self.port}/metrics"

    def detach(self) -> None:
        """Let go of the listening socket without waiting for the serving thread: in a fork
        child that thread does not exist, and shutdown() would wait for it forever."""
        if self._server is not None:
            self._server.socket.close()
            self._server = None

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
