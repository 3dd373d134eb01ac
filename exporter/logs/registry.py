"""Every log format, found in this package: each module's parser classes describe their own
format (its name, aliases, vocabulary, what it reads, how `auto` detects its lines and in
what order, its near-miss words), and everything that lists formats reads them from here:
detection (logs/detect.py), the CLI's `--format` help and "unknown format" errors, and the
format lists in the docs (`python -m exporter.logs.formats_doc`).

Adding a format is one module with a Parser subclass (and its test): nothing else names it.

Format names and their aliases (`ALIASES`: "swift" -> the "ms_swift" format) are a separate
namespace from the catalog's framework vocabularies (`catalog.FRAMEWORK_ALIASES`:
"ms-swift" -> the "swift" vocabulary); a parser names the vocabulary its keys belong to.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
import sys

from .base import Parser

# modules of this package that hold no format, not imported here (the shared parts, the
# lines -> frames loop, the docs writer); any other module that defines no parser adds none
_NOT_FORMATS = frozenset({"auto", "base", "detect", "formats_doc", "read", "registry",
                          "traceback"})


def _discover() -> tuple[type[Parser], ...]:
    """The Parser subclasses every format module defines, each once."""
    found: list[type[Parser]] = []
    package = sys.modules[__package__]  # being imported: its __path__ is set
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in _NOT_FORMATS or info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__package__}.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Parser) and \
                    obj.__module__ == mod.__name__ and obj.format != Parser.format:
                found.append(obj)
    return tuple(sorted(found, key=priority))


def priority(cls: type[Parser]) -> float:
    """A format's place in detection: its first rule's. Also the tie-break when two formats
    match as many lines of a sample, and in near misses: the more specific format wins."""
    return min((r.priority for r in cls.rules), default=math.inf)


# Every format's parser, most specific first (detection order; document formats last).
PARSERS: tuple[type[Parser], ...] = _discover()
FORMATS: dict[str, type[Parser]] = {p.format: p for p in PARSERS}
ALIASES: dict[str, str] = {a: p.format for p in PARSERS for a in p.aliases}
DOCUMENT_FORMATS = tuple(p.format for p in PARSERS if p.document)
AUXILIARY = frozenset(p.format for p in PARSERS if p.auxiliary)
STARTUP_FORMATS = frozenset(p.format for p in PARSERS if p.startup)
CONTEXT_FORMATS = frozenset(p.format for p in PARSERS if p.context)
# (gate, test, format) of every detection rule, in the order they are tried
RULES: tuple[tuple[str, object, str], ...] = tuple(
    (r.gate, r.test, p.format)
    for r, p in sorted(((r, p) for p in PARSERS for r in p.rules), key=lambda rp: rp[0].priority))
# (format, words) for near misses, in detection order
HINTS: tuple[tuple[str, tuple[str, ...]], ...] = tuple((p.format, p.hints) for p in PARSERS
                                                       if p.hints)


def names() -> str:
    """"areal, hf (trl), ...": the format names a user may pass, sorted, each with its
    aliases (the CLI's help and errors)."""
    return ", ".join(f"{n} ({', '.join(FORMATS[n].aliases)})" if FORMATS[n].aliases else n
                     for n in sorted(FORMATS))


def known() -> str:
    """"auto, areal, hf (trl), ...": every name --format takes."""
    return "auto, " + names()


def canonical_format(name: str) -> str:
    name = ALIASES.get(name, name)
    if name != "auto" and name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; known: {known()}")
    return name
