"""rl-exporter status URL [--json] [--run NAME]"""
from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

from ..promql import human_duration
from ..status import EXIT_CODES, EXIT_UNREACHABLE

HELP = ("print where a live run is (GET /status of an exporter or sidecar): state, step, ETA, "
        "open phases, goodput; the exit code says the state (0 running or finished, 3 late, "
        "4 stalled, 5 hung, 6 crashed, 7 unreachable)")


def add_arguments(p):
    p.add_argument("url", help="the exporter's address: http://host:9464 (/status, /metrics or "
                               "nothing after it)")
    p.add_argument("--json", action="store_true", help="print the JSON as served (docs/status.md)")
    p.add_argument("--run", help="one run of a sidecar that exports several")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")


def status_url(url: str, run: str | None = None) -> str:
    if "://" not in url:
        url = "http://" + url
    base = url.split("?", 1)[0].rstrip("/")
    for tail in ("/status", "/metrics"):
        if base.endswith(tail):
            base = base[: -len(tail)]
    return base + "/status" + (f"?run={urllib.request.quote(run)}" if run else "")




def exit_code(st: dict) -> int:
    """The exit code of one status object or a sidecar's {"runs": [...]}: the worst run's."""
    runs = st.get("runs", [st]) if isinstance(st, dict) else []
    codes = [EXIT_CODES.get(r.get("state"), 0) for r in runs if isinstance(r, dict)]
    return max(codes, default=0)


def render(st: dict) -> str:
    step = "-" if st.get("step") is None else f"{st['step']:g}"
    total = st.get("total_steps")
    state = st["state"].upper()
    since = st.get("state_since")
    if since is not None and st["state"] in ("finished", "crashed", "paused", "restarting"):
        state += f" for {human_duration(max(0.0, (st.get('time') or since) - since))}"
    crash = st.get("crash")
    if crash:
        state += f": {crash.get('exception')}" + (f": {crash['message']}" if crash.get("message")
                                                   else "")
    if st["state"] == "late" and st.get("late_threshold_seconds") is not None:
        state += (f" (no step for more than {human_duration(st['late_threshold_seconds'])}; "
                  f"stalled after {human_duration(st.get('stall_threshold_seconds'))})")
    out = [f"run {st['run']} ({st.get('framework')}): {state}",
           f"  step {step}" + (f" of {total:g} ({st['progress']:.1%})" if total else "")
           + f", last step {human_duration(st.get('seconds_since_last_step'))} ago, expected step "
             f"{human_duration(st.get('expected_step_seconds'))}, ETA {human_duration(st.get('eta_seconds'))}"]
    for p in st.get("open_phases") or []:
        med = p.get("recent_median_seconds")
        out.append(f"  open phase {p['phase']}: {human_duration(p['open_seconds'])}"
                   + (f" (median {human_duration(med)})" if med is not None else " (no history)")
                   + ("  HUNG" if p.get("hung") else ""))
    gp = st.get("goodput")
    if gp and gp.get("accounted_seconds"):
        wall = gp["accounted_seconds"]
        out.append(f"  goodput {gp['ratio']:.1%} of {human_duration(wall)} accounted:")
        for b, s in sorted(gp["buckets"].items(), key=lambda x: -x[1]):
            if s > 0:
                out.append(f"    {b:<18} {human_duration(s):>8}  {s / wall:6.1%}")
    hang = st.get("last_hang")
    if hang:
        out.append(f"  last hang capture: {hang.get('reason')} {hang.get('phase') or ''} "
                   "(stacks at /debug/stacks)")
    return "\n".join(out)


def run(args) -> int:
    url = status_url(args.url, args.run)
    from ..stacks import TOKEN_ENV
    token = os.environ.get(TOKEN_ENV, "").strip()  # the exporter's, where it has one set
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=args.timeout) as r:
            body = r.read().decode("utf-8")
    except (urllib.error.URLError, OSError, ValueError) as e:
        print(f"rl-exporter status: cannot read {url}: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    try:
        st = json.loads(body)
    except ValueError as e:
        print(f"rl-exporter status: {url} did not answer JSON: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if not isinstance(st, dict) or not isinstance(st.get("runs", [st]), list):
        print(f"rl-exporter status: {url} did not answer a status object", file=sys.stderr)
        return EXIT_UNREACHABLE
    if args.json:
        print(json.dumps(st, indent=2))
        return exit_code(st)
    for one in st.get("runs", [st]):
        print(render(one))
    return exit_code(st)
