"""POST /ingest: JSON frames pushed by a trainer that prefers pushing to being tailed.

Body: one frame object, a list of them, or {"frames": [...]}; a frame is
{"data": {key: number|string|null|"NaN"|"Infinity"|"-Infinity"}, "step": int|float|null}
(the spool format's fields; `spool`, `ts`, `run`, `framework` are accepted and ignored).
All frames of a request are validated before any is applied: a request is applied
whole or not at all. Answers: 200 {"accepted": n}; 400 {"error": reason} for bad JSON
or an invalid frame (which one and why); 401 without the bearer token when one is
configured; 413 past the body cap; 405 for anything but POST.
"""
from __future__ import annotations

import hmac
import json
import math
from collections import Counter

from ..logs.base import Frame, step_of
from ..logs.spool import decode_data

MAX_FRAMES = 10_000
MAX_KEYS = 10_000


def _reply(start_response, status: str, body: dict, extra=()):
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data)))] + list(extra))
    return [data]


def validate(obj) -> list[Frame]:
    """Frames of a request body, or ValueError saying what is wrong."""
    if isinstance(obj, dict) and "frames" in obj and "data" not in obj:
        obj = obj["frames"]
    items = obj if isinstance(obj, list) else [obj]
    if len(items) > MAX_FRAMES:
        raise ValueError(f"too many frames in one request ({len(items)} > {MAX_FRAMES})")
    frames = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise ValueError(f"frame {i}: not a JSON object")
        data = it.get("data")
        if not isinstance(data, dict):
            raise ValueError(f"frame {i}: 'data' must be an object of key -> number")
        if len(data) > MAX_KEYS:
            raise ValueError(f"frame {i}: too many keys ({len(data)} > {MAX_KEYS})")
        for k, v in data.items():
            if isinstance(v, bool) or not (v is None or isinstance(v, (int, float, str))):
                raise ValueError(f"frame {i}: value of {k!r} is a {type(v).__name__}, "
                                 "not a number, string or null")
            if isinstance(v, int) and not isinstance(v, bool):
                try:
                    float(v)
                except OverflowError:
                    raise ValueError(f"frame {i}: value of {k!r} overflows a float") from None
        step = it.get("step")
        if step is not None and (isinstance(step, bool) or not isinstance(step, (int, float))
                                 or math.isnan(step) or math.isinf(step)):
            raise ValueError(f"frame {i}: 'step' must be a finite number or null")
        frames.append(Frame(step_of(step), decode_data(data)))
    return frames


class IngestApp:
    def __init__(self, sidecar, source, token: str | None, max_bytes: int = 1 << 20):
        self.sidecar = sidecar
        self.source = source
        self.token = token.encode() if token else None
        self.max_bytes = max_bytes

    def __call__(self, environ, start_response):
        src = self.source
        if environ.get("REQUEST_METHOD") != "POST":
            return _reply(start_response, "405 Method Not Allowed", {"error": "POST only"},
                          [("Allow", "POST")])
        if self.token is not None:
            auth = environ.get("HTTP_AUTHORIZATION", "")
            scheme, _, cred = auth.strip().partition(" ")
            # the scheme is case-insensitive (RFC 7235 section 2.1)
            given = cred.strip().encode() if scheme.lower() == "bearer" else b""
            if not hmac.compare_digest(given, self.token):
                src.rejected["unauthorized"] += 1
                return _reply(start_response, "401 Unauthorized",
                              {"error": "missing or wrong bearer token"},
                              [("WWW-Authenticate", 'Bearer realm="rl-exporter ingest"')])
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0:
            src.rejected["invalid_frame"] += 1
            return _reply(start_response, "400 Bad Request", {"error": "bad Content-Length"})
        if length > self.max_bytes:
            src.rejected["too_large"] += 1
            return _reply(start_response, "413 Payload Too Large",
                          {"error": f"body of {length} bytes exceeds the {self.max_bytes}-byte cap"})
        body = environ["wsgi.input"].read(length) if length else b""
        src.lines += 1
        try:
            obj = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            # RecursionError: deeply nested arrays ("[" x 100000) are bad JSON too, not a 500
            src.rejected["bad_json"] += 1
            return _reply(start_response, "400 Bad Request", {"error": f"malformed JSON: {e}"})
        try:
            frames = validate(obj)
        except ValueError as e:
            src.rejected["invalid_frame"] += 1
            return _reply(start_response, "400 Bad Request", {"error": str(e)})
        served = self.sidecar.run_for(src.spec.run, src.framework, src)
        if served is None:
            src.rejected["run_conflict"] += 1
            return _reply(start_response, "409 Conflict",
                          {"error": "run already exported with another framework"})
        for fr in frames:
            served.pipeline.log(fr.data, step=fr.step)
            self.sidecar.backpressure(served)
        src.frames += len(frames)
        import time
        src.last_frame_ts = time.time()
        return _reply(start_response, "200 OK", {"accepted": len(frames)})


class IngestSource:
    """The POST /ingest pseudo-source (its counters; the app is in ingest.py)."""

    def __init__(self, run: str, framework: str):
        self.spec = type("Spec", (), {"name": "ingest", "run": run, "format": "ingest"})()
        self.framework = framework
        self.lines = 0
        self.frames = 0
        self.rejected: Counter = Counter()
        self.errors: Counter = Counter()
        self.last_frame_ts = float("nan")
        self.tracks: dict = {}
        self.docs: dict = {}

    def parser_rejections(self) -> Counter:
        return Counter(self.rejected)

    def health(self) -> dict:
        return {"source": "ingest", "format": "ingest", "run": self.spec.run, "state": "listening",
                "lag_bytes": 0, "frames": self.frames}
