"""Log sources for the sidecar: one parser module per trainer output format, format
detection, the file follower (follow.py), the HTTP ingest app (ingest.py) and the
sidecar that feeds all of them into pipelines (exporter/sidecar/). See docs/sidecar.md.

    from exporter.logs import make_parser, detect
    p = make_parser("verl_console")
    frames = p.feed("step:1 - actor/entropy:0.5") + p.flush()

`make_parser("auto")` detects the format of every line (detect.py) and hands it to that
format's parser (auto.py): for files of unknown or mixed content.
"""
from __future__ import annotations

import os

from . import (areal, config_dump, hf, ms_swift, openrlhf, slime, spool, verl_console,
               verl_jsonl, verl_validation, wandb_summary)
from .auto import AutoParser
from .base import Frame, LineAssembler, Parser, clean  # noqa: F401

# format name -> (parser class, the catalog framework its keys belong to)
FORMATS: dict[str, type[Parser]] = {
    "verl_console": verl_console.VerlConsoleParser,
    "verl_jsonl": verl_jsonl.VerlJsonlParser,
    "hf": hf.HFConsoleParser,
    "hf_state": hf.HFStateParser,
    "openrlhf": openrlhf.OpenRLHFParser,
    "slime": slime.SlimeParser,
    "miles": slime.MilesParser,
    "areal": areal.ArealParser,
    "spool": spool.SpoolParser,
    "ms_swift": ms_swift.MsSwiftParser,
    "wandb": wandb_summary.WandbSummaryParser,
    "verl_validation": verl_validation.VerlValidationParser,
    "verl_config": config_dump.VerlConfigParser,
    "megatron_args": config_dump.MegatronArgsParser,
}
ALIASES = {"verl": "verl_console", "trl": "hf", "trainer_state": "hf_state", "jsonl": "verl_jsonl",
           "swift": "ms_swift", "ms-swift": "ms_swift"}
DOCUMENT_FORMATS = frozenset({"hf_state"})


def canonical_format(name: str) -> str:
    name = ALIASES.get(name, name)
    if name != "auto" and name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; known: auto, {', '.join(FORMATS)}")
    return name


def make_parser(name: str) -> Parser:
    name = canonical_format(name)
    if name == "auto":
        return AutoParser(make_parser)
    return FORMATS[name]()


# ------------------------------------------------------------------ detection
from .detect import detect_format, detect_line, near_miss  # noqa: E402,F401


def detect(lines, path: str | None = None) -> str | None:
    """The format of a sample of lines (and the file name): the most frequent per-line
    match wins; None if nothing looks like metrics yet."""
    if path and os.path.basename(path) == "trainer_state.json":
        return "hf_state"
    votes: dict[str, int] = {}
    for line in lines:
        name = detect_line(clean(line))
        if name:
            votes[name] = votes.get(name, 0) + 1
    if not votes:
        return None
    order = list(FORMATS)
    return max(votes, key=lambda n: (votes[n], -order.index(n)))


def parse_lines(lines, fmt: str):
    """Parse an iterable of lines with one parser: yields (line_no, Frame); flushes at the end."""
    parser = make_parser(fmt)
    asm = LineAssembler()
    n = 0
    for n, line in enumerate(lines, 1):
        line = asm.feed(clean(line.rstrip("\r\n")))
        if line is None:
            continue
        for f in parser.feed(line):
            yield n, f
    for f in parser.flush():
        yield n, f
