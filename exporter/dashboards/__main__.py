"""python -m exporter.dashboards ...: the same command as `rl-exporter dashboards ...`
(exporter/commands/dashboards.py says what each option does)."""
from __future__ import annotations

import argparse
import sys

from exporter.commands import dashboards as command

PROG = "python -m exporter.dashboards"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog=PROG)
    command.add_arguments(p)
    return command.run(p.parse_args(argv), prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
