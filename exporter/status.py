"""GET /status: one JSON object saying where a run is, for people, scripts and agents
(the fields are a stable contract, docs/status.md). Built from what a served run (core/run.py:
the hook's Exporter, or one of serve's runs) already holds: the lifecycle (rl_run_state, the
crash), the step and its timestamp (store), the step clock's median interval (goodput), the
open phases (phases.LivePhases), rl_config_value for the total, the goodput ledger, the hang
watch's last capture.

`state` reads, first match wins: finished or crashed (the lifecycle's end), paused (a pause
phase is open), starting (no step yet), hung (an open phase is past its hang threshold),
stalled (no step past the stall threshold: RLRunStalled), late (no step for many expected step
times, short of the stall threshold), restarting (redoing steps after a restart), running. No
time in a declared pause counts towards hung, stalled or late. EXIT_CODES are what
`rl-exporter status` exits with."""
from __future__ import annotations

import json
import math
import time

from .core.lifecycle import TOTAL_PARAMETERS  # noqa: F401 (serve's hang watch reads it here)
from .core.thresholds import DEFAULT

SCHEMA = "rl-exporter/status/v1"
# `rl-exporter status` exits with the worst state's code (docs/status.md); 2 is a usage error
EXIT_CODES = {"starting": 0, "running": 0, "paused": 0, "restarting": 0, "finished": 0,
              "late": 3, "stalled": 4, "hung": 5, "crashed": 6}
EXIT_UNREACHABLE = 7


def _num(v):
    return None if v is None or not math.isfinite(v) else v


def build(ex, now: float | None = None) -> dict:
    """The status object of one served run."""
    given, now = now, time.time() if now is None else now
    store = ex.store
    step = _num(store.get("rl_training_step"))
    ts = _num(store.get("rl_training_step_timestamp_seconds"))
    total = ex.lifecycle.total()
    gp = ex.goodput
    expected = gp.expected_step_seconds()
    if expected is None:  # no two steps seen yet: the framework's own step time, if any
        expected = _num(store.get("rl_step_duration_seconds"))
    watch = ex.hang_watch  # the hook's; serve's where it takes py-spy dumps
    th = watch.thresholds if watch is not None else DEFAULT
    lc = ex.lifecycle
    life = lc.snapshot()
    held = life["state"] in ("paused", "finished", "crashed")  # no phase or step is late then
    phases = []
    for phase, open_s, median, _start in ex.open_phases():
        limit = th.phase_limit(median) if th is not None else None
        active = open_s - lc.paused_between(now - open_s, now)  # a pause held it open
        phases.append({"phase": phase, "open_seconds": round(open_s, 3),
                       "recent_median_seconds": median,
                       "hung": not held and limit is not None and active > limit})
    since = round(now - ts, 3) if ts is not None else None
    active = lc.active_seconds(ts, now) if ts is not None else None
    stall_limit = th.stall_limit(expected) if th is not None and ts is not None else None
    late_limit = th.late_limit(expected) if th is not None and ts is not None else None
    stalled = not held and active is not None and stall_limit is not None and active > stall_limit
    late = not held and active is not None and late_limit is not None and active > late_limit
    if life["state"] in ("finished", "crashed", "paused"):
        state = life["state"]
    elif ts is None:
        state = "starting"
    elif any(p["hung"] for p in phases):
        state = "hung"
    elif stalled:
        state = "stalled"
    elif late:
        state = "late"
    elif life["state"] == "restarting":
        state = "restarting"
    else:
        state = "running"
    eta = None
    if total is not None and step is not None and expected is not None:
        eta = round(max(0.0, total - step) * expected, 1)
    last = watch.last() if watch is not None else None
    return {
        "schema": SCHEMA, "run": ex.run, "framework": ex.framework, "rank": ex.rank,
        "state": state, "lifecycle": life["state"],
        "state_since": round(life["since"], 3) if life["since"] is not None else None,
        "crash": life["crash"], "step": step, "total_steps": total,
        "progress": round(step / total, 4) if total and step is not None else None,
        "last_step_timestamp": ts, "seconds_since_last_step": since,
        "expected_step_seconds": round(expected, 3) if expected is not None else None,
        "stall_threshold_seconds": round(stall_limit, 3) if stall_limit is not None else None,
        "late_threshold_seconds": round(late_limit, 3) if late_limit is not None else None,
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
