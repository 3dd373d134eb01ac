"""The HTTP endpoint: read-only /metrics (Prometheus text or OpenMetrics, by the
Accept header), /healthz, and any POST routes a component adds (the sidecar's
/ingest). Bound to 127.0.0.1 unless told otherwise."""
from __future__ import annotations

import json
import logging
import socket
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

log = logging.getLogger(__name__)

DEFAULT_PORT = 9464  # the OTel Prometheus exporter's port
DEFAULT_ADDR = "127.0.0.1"


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = False  # a second exporter on the same port must fail, not share it
    request_queue_size = 128     # listen backlog: socketserver's 5 refuses concurrent scrapers


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):  # scrapes every few seconds would flood the trainer's log
        pass


class Endpoint:
    def __init__(self, registry, addr: str = DEFAULT_ADDR, port: int = DEFAULT_PORT,
                 health=None):
        self.registry = registry
        self.addr = addr
        self.port = port
        self.health = health or (lambda: {"status": "ok"})
        self.routes: dict[str, object] = {}  # path -> wsgi app for POST
        self._metrics_app = make_wsgi_app(registry)
        self._server = None
        self._thread = None

    def add_route(self, path: str, app) -> None:
        self.routes[path] = app

    def _app(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        method = environ.get("REQUEST_METHOD", "GET")
        if path in self.routes:
            return self.routes[path](environ, start_response)
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD"),
                                                      ("Content-Type", "text/plain")])
            return [b"read-only endpoint\n"]
        if path == "/metrics":
            return self._metrics_app(environ, start_response)
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

    def start(self) -> None:
        """Bind and serve in a daemon thread. Raises OSError if the port is taken."""
        # an IPv6 literal ("::1", "::") needs an AF_INET6 socket; names and IPv4 stay AF_INET
        cls = _Server6 if ":" in self.addr else _Server
        self._server = make_server(self.addr.strip("[]"), self.port, self._app, cls, _QuietHandler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="rl-exporter-http",
                                        daemon=True)
        self._thread.start()

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
