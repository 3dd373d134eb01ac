"""CLI verbs, one module each (discovered by exporter.cli)."""
from __future__ import annotations

import argparse
import os


def port_number(text: str) -> int:
    """argparse type of --port: 0..65535, so a bad number is a usage error, not a bind error."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0 = any free port)")
    return port


LISTEN_ENV = "RL_EXPORTER_LISTEN"   # 0.0.0.0 in the image, so `docker run -p ... IMAGE demo` answers


def add_listen(p) -> None:
    """--listen of the verbs that serve: 127.0.0.1 unless $RL_EXPORTER_LISTEN says otherwise."""
    default = os.environ.get(LISTEN_ENV, "").strip() or "127.0.0.1"
    p.add_argument("--listen", default=default,
                   help=f"address to bind (default {default}: ${LISTEN_ENV} or 127.0.0.1)")
