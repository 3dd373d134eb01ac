"""The log formats: one parser module per trainer output format, each declaring its format
name, its aliases, whether it reads a whole document, and how to detect its lines; the one
lines -> frames loop (read.py) that `parse`, doctor, backfill and the sidecar share.
The sidecar's runtime (following files, ingest) is exporter/sidecar/. See docs/sidecar.md.

    from exporter.logs import make_parser, detect
    p = make_parser("verl_console")
    frames = p.feed("step:1 - actor/entropy:0.5") + p.flush()

`make_parser("auto")` detects the format of every line (detect.py) and hands it to that
format's parser (auto.py): for files of unknown or mixed content.

Format names and their aliases (`ALIASES`: "swift" -> the "ms_swift" format) are a separate
namespace from the catalog's framework vocabularies (`catalog.FRAMEWORK_ALIASES`:
"ms-swift" -> the "swift" vocabulary); a parser names the vocabulary its keys belong to.
"""
from __future__ import annotations

import os

from . import (areal, config_dump, hf, llamafactory, ms_swift, openrlhf, slime, spool,
               verl_console, verl_jsonl, verl_validation, wandb_summary)
from .auto import AutoParser
from .base import Frame, LineAssembler, Parser, clean  # noqa: F401

# Every format's parser; each class names its format, its aliases and whether it reads a
# whole document. Order: the tie-break when two formats match equally many lines.
PARSERS: tuple[type[Parser], ...] = (
    verl_console.VerlConsoleParser, verl_jsonl.VerlJsonlParser, hf.HFConsoleParser,
    hf.HFStateParser, openrlhf.OpenRLHFParser, slime.SlimeParser, slime.MilesParser,
    areal.ArealParser, spool.SpoolParser, ms_swift.MsSwiftParser,
    wandb_summary.WandbSummaryParser, verl_validation.VerlValidationParser,
    config_dump.VerlConfigParser, config_dump.MegatronArgsParser,
    llamafactory.LlamaFactoryParser,
)
FORMATS: dict[str, type[Parser]] = {p.format: p for p in PARSERS}
ALIASES = {a: p.format for p in PARSERS for a in p.aliases}
DOCUMENT_FORMATS = frozenset(p.format for p in PARSERS if p.document)


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
from .detect import AUXILIARY, detect_format, detect_line, near_miss  # noqa: E402,F401


def detect(lines, path: str | None = None) -> str | None:
    """The format of a sample of lines (and the file name): a document format by name or
    content, else the most frequent per-line match; None if nothing looks like metrics yet."""
    lines = list(lines)
    doc = open_format("auto", path, "".join(lines[:200]))
    if doc != "auto":
        return doc
    votes: dict[str, int] = {}
    aux: dict[str, int] = {}  # auxiliary prints: the format only when nothing else is there
    for line in lines:
        name = detect_format(clean(line))
        if name:
            box = aux if name in AUXILIARY else votes
            box[name] = box.get(name, 0) + 1
    votes = votes or aux
    if not votes:
        return None
    order = list(FORMATS)
    return max(votes, key=lambda n: (votes[n], -order.index(n)))


def parse_lines(lines, fmt: str):
    """Parse an iterable of lines with one format (or auto): yields (line_no, Frame), line_no
    the line that completed the frame; flushes at the end."""
    reader = Reader(fmt, where=False)
    for line in lines:
        for r in reader.feed(line):
            yield r.line, r.frame
    for r in reader.flush():
        yield r.line, r.frame


from .read import Read, Reader, open_format, read_text  # noqa: E402,F401
