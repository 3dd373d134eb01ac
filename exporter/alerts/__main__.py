"""python -m exporter.alerts ...: the same command as `rl-exporter alerts ...`
(exporter/commands/alerts.py says what each does)."""
from __future__ import annotations

import argparse
import sys

from exporter.commands import alerts as command

PROG = "python -m exporter.alerts"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog=PROG)
    command.add_arguments(p)
    return command.run(p.parse_args(argv), prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
