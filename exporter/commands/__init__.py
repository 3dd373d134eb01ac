"""CLI verbs, one module each (discovered by exporter.cli)."""
from __future__ import annotations

import argparse


def port_number(text: str) -> int:
    """argparse type of --port: 0..65535, so a bad number is a usage error, not a bind error."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0 = any free port)")
    return port
