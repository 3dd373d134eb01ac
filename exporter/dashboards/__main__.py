"""python -m exporter.dashboards [--check] [--configmaps DIR]"""
from __future__ import annotations

import argparse
import sys

from pathlib import Path

from .generate import check, configmaps, write


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m exporter.dashboards",
                                description="Generate (or --check) the rl-exporter Grafana dashboards.")
    p.add_argument("--check", action="store_true",
                   help="fail if the committed files differ from the generated ones or a panel "
                        "queries a metric the catalog lacks")
    p.add_argument("--configmaps", metavar="DIR",
                   help="also write one ConfigMap per dashboard into DIR (kubectl apply -f DIR), "
                        "for clusters that load dashboards without the Helm chart")
    args = p.parse_args(argv)
    if args.check:
        return check()
    for rel in write():
        print(f"wrote {rel}")
    if args.configmaps:
        out = Path(args.configmaps)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in configmaps().items():
            (out / name).write_text(text)
            print(f"wrote {out / name}")
    return check()


if __name__ == "__main__":
    sys.exit(main())
