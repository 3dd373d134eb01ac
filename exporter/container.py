"""The container image's entrypoint (`python -m exporter.container`, see the Dockerfile).

    docker run IMAGE demo                 # any verb: demo, doctor, backfill, parse, status, ...
    docker run IMAGE --source verl:/var/log/rl/train.log --port 9464   # flags only: serve
    docker run IMAGE                      # the image's CMD: serve the logs under /var/log/rl

A first argument that is a verb runs that verb; arguments that start with a flag are serve's
(the Helm chart's sidecar and the Kubernetes examples pass serve's flags only), so the one image
runs every verb and stays a drop-in sidecar.

`--healthcheck [PID]` is the image's HEALTHCHECK: GET /healthz on the address and port the
entrypoint process serves (its own --listen/--port, not a fixed 9464); a verb that serves
nothing (doctor, backfill, ...) is healthy without a check.
"""
from __future__ import annotations

import os
import sys
import urllib.request

from .core.endpoint import DEFAULT_PORT

MODULE = "exporter.container"
SERVING = ("serve", "demo")


def command(argv: list[str]) -> list[str]:
    """The rl-exporter command line the container's arguments stand for."""
    from .cli import build_parser
    if not argv:
        return ["--help"]
    verbs = build_parser().verbs
    if argv[0] in verbs or argv[0] in ("-h", "--help", "--version", "--log-level"):
        return argv
    return ["serve", *argv]


def _cmdline(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]


def _entrypoint_pid() -> int | None:
    """The entrypoint's process: PID 1, or under an init (docker run --init) the one running
    this module that is not a health check."""
    for pid in [1] + sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            args = _cmdline(pid)
        except OSError:
            continue
        if MODULE in args and "--healthcheck" not in args:
            return pid
    return None


def _flag(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def health_url(args: list[str]) -> str | None:
    """/healthz of the command `args` (the entrypoint's own arguments), or None when it serves
    nothing a check can find (a verb that does not serve, a fleet, any free port)."""
    cmd = command(args)
    if not cmd or cmd[0] not in SERVING or "--runs" in cmd or any(a.startswith("--runs=") for a in cmd):
        return None
    port = _flag(cmd, "--port")
    port = DEFAULT_PORT if port is None else int(port)
    if port == 0:
        return None
    host = _flag(cmd, "--listen") or os.environ.get("RL_EXPORTER_LISTEN", "").strip() or "127.0.0.1"
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/healthz"


def healthcheck(pid: int | None = None) -> int:
    pid = pid or _entrypoint_pid()
    if pid is None:
        print("rl-exporter healthcheck: no rl-exporter process found", file=sys.stderr)
        return 1
    args = _cmdline(pid)
    args = args[args.index(MODULE) + 1:] if MODULE in args else args[1:]
    url = health_url(args)
    if url is None:
        return 0
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return 0 if r.status == 200 else 1
    except (OSError, ValueError) as e:
        print(f"rl-exporter healthcheck: {url}: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--healthcheck"]:
        return healthcheck(int(argv[1]) if len(argv) > 1 else None)
    from .cli import main as cli_main
    return cli_main(command(argv))


if __name__ == "__main__":
    sys.exit(main())
