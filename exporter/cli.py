"""`rl-exporter` command line. Each verb is a module in exporter/commands/ with
HELP, add_arguments(parser) and run(args) -> exit code."""
from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

from . import __version__, commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rl-exporter",
        description="Prometheus/OpenTelemetry metrics for LLM RL post-training runs.")
    parser.add_argument("--version", action="version", version=f"rl-exporter {__version__}")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.verbs = {}  # name -> its parser: a verb's bad flag gets that verb's usage
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        name = getattr(mod, "NAME", info.name.replace("_", "-"))
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
        parser.verbs[name] = p
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # argparse reports a verb's unknown flag with the top-level usage
        verb = parser.verbs.get(getattr(args, "command", None), parser)
        verb.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `rl-exporter catalog --json | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
