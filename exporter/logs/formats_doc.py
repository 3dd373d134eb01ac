"""Write the log formats into the docs, from the registry (logs/registry.py):

- docs/sidecar.md: the table of formats (name, aliases, what it reads, vocabulary);
- README.md, docs/postmortem.md, docs/kubernetes.md: the list of names `--format` and
  `--source FORMAT:` take.

Each goes between its markers (`<!-- formats-table:begin ... -->` ... `<!-- formats-table:end
-->`, and the same for `formats-list`); the rest of each file is left as it is.

    python -m exporter.logs.formats_doc          # rewrite the regions
    python -m exporter.logs.formats_doc --check  # fail if a committed region differs
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from .auto import AutoParser
from .registry import FORMATS

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "python -m exporter.logs.formats_doc"
TABLE_DOCS = ("docs/sidecar.md",)
LIST_DOCS = ("README.md", "docs/postmortem.md", "docs/kubernetes.md")


def _code(names) -> str:
    return ", ".join(f"`{n}`" for n in names)


def format_list() -> str:
    """"`areal`, `hf` (`trl`), ...": every format by name, its aliases beside it."""
    return ", ".join(f"`{n}`" + (f" ({_code(FORMATS[n].aliases)})" if FORMATS[n].aliases else "")
                     for n in sorted(FORMATS))


def format_table() -> str:
    rows = ["| FORMAT (aliases) | what | vocabulary |", "| --- | --- | --- |"]
    for name in sorted(FORMATS):
        cls = FORMATS[name]
        aliases = f" ({_code(cls.aliases)})" if cls.aliases else ""
        what = cls.summary.replace("|", "\\|")
        rows.append(f"| `{name}`{aliases} | {what} | {cls.framework} |")
    rows.append(f"| `auto` | {AutoParser.summary} | per line |")
    return "\n".join(rows)


def _region(text: str, name: str, body: str, inline: bool) -> str:
    begin = f"<!-- {name}:begin (generated: {COMMAND}) -->"
    end = f"<!-- {name}:end -->"
    pat = re.compile(re.escape(f"<!-- {name}:begin") + r"[^>]*-->.*?" + re.escape(end), re.S)
    if not pat.search(text):
        raise ValueError(f"no {name} markers")
    sep = "" if inline else "\n"
    return pat.sub(lambda _: f"{begin}{sep}{body}{sep}{end}", text, count=1)


def render(path: str, text: str) -> str:
    if path in TABLE_DOCS:
        text = _region(text, "formats-table", format_table(), inline=False)
    if path in LIST_DOCS:
        text = _region(text, "formats-list", format_list(), inline=True)
    return text


def main(argv=None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for path in TABLE_DOCS + LIST_DOCS:
        f = ROOT / path
        text = f.read_text(encoding="utf-8")
        new = render(path, text)
        if new != text:
            stale.append(path)
            if not check:
                f.write_text(new, encoding="utf-8")
    if check and stale:
        print(f"stale format lists in {', '.join(stale)}: run {COMMAND}")
        return 1
    for path in ([] if check else stale):
        print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
