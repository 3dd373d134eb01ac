"""GET /status: one JSON object saying where a run is, for people, scripts and agents
(the fields are a stable contract, docs/status.md). Built from what a served run (core/run.py:
the hook's Exporter, or one of serve's runs) already holds: the step and its timestamp
(store), the step clock's median interval (goodput), the open phases (phases.LivePhases),
rl_config_value for the total, the goodput ledger, the hang watch's last capture."""
from __future__ import annotations

import json
import math
import time

from .core.thresholds import DEFAULT

SCHEMA = "rl-exporter/status/v1"
TOTAL_PARAMETERS = ("total_training_steps", "total_steps", "max_steps")


def _num(v):
    return None if v is None or not math.isfinite(v) else v


def build(ex, now: float | None = None) -> dict:
    """The status object of one served run."""
    given, now = now, time.time() if now is None else now
    store = ex.store
    step = _num(store.get("rl_training_step"))
    ts = _num(store.get("rl_training_step_timestamp_seconds"))
    total = None
    for p in TOTAL_PARAMETERS:
        total = _num(store.get("rl_config_value", {"parameter": p}))
        if total is not None:
            break
    gp = ex.goodput
    expected = gp.expected_step_seconds()
    if expected is None:  # no two steps seen yet: the framework's own step time, if any
        expected = _num(store.get("rl_step_duration_seconds"))
    watch = ex.hang_watch  # the hook's; serve's where it takes py-spy dumps
    th = watch.thresholds if watch is not None else DEFAULT
    phases = []
    for phase, open_s, median, _start in ex.open_phases():
        limit = th.phase_limit(median) if th is not None else None
        phases.append({"phase": phase, "open_seconds": round(open_s, 3),
                       "recent_median_seconds": median,
                       "hung": limit is not None and open_s > limit})
    since = round(now - ts, 3) if ts is not None else None
    stall_limit = th.stall_limit(expected) if th is not None and ts is not None else None
    stalled = since is not None and stall_limit is not None and since > stall_limit
    if ts is None:
        state = "starting"
    elif any(p["hung"] for p in phases):
        state = "hung"
    elif stalled:
        state = "stalled"
    elif total is not None and step is not None and step >= total:
        state = "finished"
    else:
        state = "running"
    eta = None
    if total is not None and step is not None and expected is not None:
        eta = round(max(0.0, total - step) * expected, 1)
    last = watch.last() if watch is not None else None
    return {
        "schema": SCHEMA, "run": ex.run, "framework": ex.framework, "rank": ex.rank,
        "state": state, "step": step, "total_steps": total,
        "progress": round(step / total, 4) if total and step is not None else None,
        "last_step_timestamp": ts, "seconds_since_last_step": since,
        "expected_step_seconds": round(expected, 3) if expected is not None else None,
        "stall_threshold_seconds": round(stall_limit, 3) if stall_limit is not None else None,
        "open_phases": phases,
        "goodput": gp.snapshot(given),  # (monotonic when live)
        "eta_seconds": eta,
        "last_hang": None if last is None else {k: last[k] for k in last if k != "stacks"},
        "time": round(now, 3),
    }


def _json_reply(start_response, body) -> list:
    data = json.dumps(body, allow_nan=False, default=str).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(data))), ("Cache-Control", "no-store")])
    return [data]


def status_app(exporters, token: str | None = None):
    """WSGI app for GET /status. `exporters` is a callable returning the served runs:
    one -> its status object; several (the sidecar) -> {"runs": [...]}, or the one named by
    ?run=NAME. Public, unless RL_EXPORTER_DEBUG_TOKEN (or `token`) is set: then it needs
    that bearer token, as /debug/stacks does."""
    import os
    from urllib.parse import parse_qs

    from .stacks import TOKEN_ENV, token_required
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None

    def app(environ, start_response):
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET"), ("Content-Type", "text/plain")])
            return [b"GET only\n"]
        denied = token_required(environ, token)
        if denied is not None:
            start_response(denied[0], [("Content-Type", "text/plain")])
            return [denied[1].encode()]
        exs = list(exporters())
        want = parse_qs(environ.get("QUERY_STRING", "")).get("run")
        if want:
            exs = [e for e in exs if e.run == want[0]]
            if not exs:
                start_response("404 Not Found", [("Content-Type", "application/json")])
                return [json.dumps({"error": f"no run {want[0]!r} here"}).encode()]
        try:
            bodies = [build(e) for e in exs]
        except Exception as e:  # a status that cannot be built says so, never kills the server
            start_response("500 Internal Server Error", [("Content-Type", "application/json")])
            return [json.dumps({"error": f"status failed: {e!r}"}).encode()]
        body = bodies[0] if len(bodies) == 1 else {"schema": SCHEMA, "runs": bodies}
        return _json_reply(start_response, body)
    return app


def add_routes(endpoint, ex) -> None:
    """The in-process exporter's GET /status and GET /debug/stacks."""
    from .stacks import stacks_app
    endpoint.add_route("/status", status_app(lambda: (ex,)))
    endpoint.add_route("/debug/stacks", stacks_app(ex))
