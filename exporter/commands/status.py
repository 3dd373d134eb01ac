"""rl-exporter status URL [--json] [--run NAME]"""
from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

from ..promql import human_duration

HELP = "print where a live run is (GET /status of an exporter or sidecar): step, ETA, open phases, goodput"


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




def render(st: dict) -> str:
    step = "-" if st.get("step") is None else f"{st['step']:g}"
    total = st.get("total_steps")
    out = [f"run {st['run']} ({st.get('framework')}): {st['state'].upper()}",
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
        return 1
    try:
        st = json.loads(body)
    except ValueError as e:
        print(f"rl-exporter status: {url} did not answer JSON: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    for one in st.get("runs", [st]):
        print(render(one))
    return 0
