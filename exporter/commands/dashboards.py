"""rl-exporter dashboards [generate] [--check] [--configmaps DIR] [--out DIR]

    rl-exporter dashboards generate          # rewrite the chart's dashboards and exporter/dashboards/provisioning/
    rl-exporter dashboards --check           # CI: fail if the committed files differ from the code, or a
                                             # panel queries a metric the catalog lacks
    rl-exporter dashboards --out DIR         # the dashboards' JSON and provisioning files into DIR
    rl-exporter dashboards --configmaps DIR  # also one ConfigMap per dashboard (kubectl apply -f DIR)

`python -m exporter.dashboards ...` is the same command. Needs the `dashboards` extra
(grafana-foundation-sdk): pip install 'rl-exporter[dashboards]'. Without --out, generate writes
into the source tree (the chart), so it runs only in a clone of the repository.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = ("generate (or --check) the Grafana dashboards: the chart's JSON in a checkout, or JSON, "
        "provisioning files and ConfigMaps into a folder (needs the dashboards extra)")


def add_arguments(p):
    p.description = __doc__.split("\n\n", 1)[1]
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("dashboards_command", nargs="?", default="generate", choices=("generate",),
                   metavar="generate", help="write the dashboards (the default)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; fail if the committed files differ from the generated ones "
                        "or a panel queries a metric the catalog lacks")
    p.add_argument("--out", metavar="DIR",
                   help="write json/ and provisioning/ into DIR instead of the source tree")
    p.add_argument("--configmaps", metavar="DIR",
                   help="also write one ConfigMap per dashboard into DIR (kubectl apply -f DIR), "
                        "for clusters that load dashboards without the Helm chart")


def run(a, prog: str = "rl-exporter dashboards") -> int:
    from ..alerts.generate import dashboards_missing
    from ..alerts.paths import checkout
    hint = dashboards_missing()
    if hint:
        print(f"{prog}: needs grafana-foundation-sdk (the dashboards extra): {hint}", file=sys.stderr)
        return 1
    from ..dashboards import generate
    out = Path(a.out) if a.out else None
    in_checkout = checkout() is not None
    if a.check:
        return generate.check(out, compare=in_checkout or out is not None)
    if out is None and not in_checkout:
        print(f"{prog}: generate writes into the source tree (helm/rl-exporter/files/dashboards/), and "
              "this rl-exporter runs from an installed package: give --out DIR (and/or --configmaps DIR)",
              file=sys.stderr)
        if not a.configmaps:
            return 2
    else:
        for rel in generate.write(out):
            print(f"wrote {out / rel if out else rel}")
    if a.configmaps:
        folder = Path(a.configmaps)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in generate.configmaps().items():
            (folder / name).write_text(text)
            print(f"wrote {folder / name}")
        if out is None and not in_checkout:
            return 0
    return generate.check(out)
