"""python -m dashboards [--check]"""
from __future__ import annotations

import argparse
import sys

from .generate import ROOT, check, write


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dashboards",
                                description="Generate (or --check) the rl-exporter Grafana dashboards.")
    p.add_argument("--check", action="store_true",
                   help="fail if the committed files differ from the generated ones or a panel "
                        "queries a metric the catalog lacks")
    args = p.parse_args(argv)
    if args.check:
        return check(ROOT)
    for rel in write(ROOT):
        print(f"wrote dashboards/{rel}")
    return check(ROOT)


if __name__ == "__main__":
    sys.exit(main())
