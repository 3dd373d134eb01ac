"""The log formats: one parser module per trainer output format, each parser class
describing its format (name, aliases, vocabulary, what it reads, how its lines are detected);
the registry that finds them (registry.py); detection over the registry (detect.py); the one
lines -> frames loop (read.py) that `parse`, doctor, backfill and the sidecar share.
The sidecar's runtime (following files, ingest) is exporter/sidecar/. See docs/sidecar.md.

    from exporter.logs import make_parser, detect
    p = make_parser("verl_console")
    frames = p.feed("step:1 - actor/entropy:0.5") + p.flush()

`make_parser("auto")` detects the format of every line (detect.py) and hands it to that
format's parser (auto.py): for files of unknown or mixed content.

This module only re-exports: each name lives in the module that the package's layers put it
in (base <- the format modules <- registry <- detect <- auto <- read).
"""
from __future__ import annotations

from .base import Frame, LineAssembler, Parser, Rule, clean  # noqa: F401
from .detect import detect, detect_format, detect_line, near_miss, open_format  # noqa: F401
from .read import Read, Reader, make_parser, read_text  # noqa: F401
from .registry import (ALIASES, AUXILIARY, DOCUMENT_FORMATS, FORMATS, PARSERS,  # noqa: F401
                       canonical_format)
