"""Helpers the test folders share beyond the shipped test kit (exporter/testing), whose
free_port, scrape_text and samples (as `series`) they re-export (tests/conftest.py re-exports
free_port for older imports)."""
from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

from exporter.testing import free_port, scrape_text  # noqa: F401
from exporter.testing import samples as series  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORK_DATA = Path(__file__).resolve().parent / "unit" / "catalog" / "data"


def res(key: str, framework: str):
    """The catalog's resolution of one logged key in one framework's vocabulary."""
    from exporter.catalog import CATALOG
    return CATALOG.resolve(key, framework)


@functools.cache
def _framework_data(framework: str) -> str:
    return (FRAMEWORK_DATA / f"{framework}.json").read_text()


def framework_data(framework: str) -> dict:
    """tests/unit/catalog/data/<framework>.json: the framework's researched keys and patterns
    (copied from framework-keys.json) and the mappings the catalog must give them."""
    return json.loads(_framework_data(framework))


def framework_keys(framework: str) -> list[str]:
    """The real metric keys a framework logs, as read from its own code."""
    return framework_data(framework)["keys"]


@functools.cache
def helm_sync():
    """helm/sync.py as a module: helm/ is a chart folder, not a package, so it is loaded by path."""
    spec = importlib.util.spec_from_file_location("helm_sync", ROOT / "helm" / "sync.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class OTLPReceiver:
    """A real OTLP/HTTP receiver on loopback: keeps every POST (path, content type, body) and
    decodes the metrics and traces requests with the OTLP protobufs."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        self.posts: list[tuple[str, str, bytes]] = []
        self.headers: list[dict] = []   # each POST's headers, in the order of posts
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                outer.posts.append((self.path, self.headers["Content-Type"], body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def paths(self) -> list[str]:
        return [p for p, _, _ in self.posts]

    def metric_requests(self):
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest)
        out = []
        for path, ctype, body in list(self.posts):
            if path == "/v1/metrics":
                req = ExportMetricsServiceRequest()
                req.ParseFromString(body)
                out.append((path, ctype, req))
        return out

    def points(self) -> dict:
        """{(metric, sorted attributes): value (gauges, sums) or count (histograms)}"""
        out = {}
        for _, _, req in self.metric_requests():
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        for p in getattr(m, kind).data_points:
                            attrs = {a.key: a.value.string_value for a in p.attributes}
                            val = p.as_double if kind in ("gauge", "sum") else p.count
                            out[(m.name, tuple(sorted(attrs.items())))] = val
        return out

    @property
    def spans(self) -> list:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest)
        out = []
        for path, _, body in list(self.posts):
            if path == "/v1/traces":
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        out.extend(ss.spans)
        return out

    def close(self) -> None:
        self.server.shutdown()
