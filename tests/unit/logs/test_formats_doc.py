"""Every list of log formats a user reads comes from the registry: the docs' regions are what
`python -m exporter.logs.formats_doc` writes, and the CLI's --format help and "unknown format"
errors name every format and alias."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from exporter.cli import build_parser, main
from exporter.logs import formats_doc, registry


def test_committed_format_lists_are_generated():
    for path in formats_doc.TABLE_DOCS + formats_doc.LIST_DOCS:
        text = (formats_doc.ROOT / path).read_text(encoding="utf-8")
        assert formats_doc.render(path, text) == text, \
            f"{path} is stale: run python -m exporter.logs.formats_doc"


def test_the_docs_name_every_format_and_alias():
    table, names = formats_doc.format_table(), formats_doc.format_list()
    for fmt, cls in registry.FORMATS.items():
        for name in (fmt,) + cls.aliases:
            assert f"`{name}`" in table and f"`{name}`" in names
    assert "`verl`" in (formats_doc.ROOT / "README.md").read_text(encoding="utf-8")


def _help(command: str) -> str:
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    return " ".join(sub.format_help().split())


@pytest.mark.parametrize("command", ["parse", "backfill", "doctor", "serve"])
def test_format_help_and_errors_name_every_format(command, tmp_path):
    text = _help(command)
    for fmt, cls in registry.FORMATS.items():
        assert fmt in text, (command, fmt)
        for alias in cls.aliases:
            assert alias in text.replace("- ", "-"), (command, alias)
    if command == "doctor":
        from exporter.postmortem.tools import ToolMissing, find
        try:
            find("promtool"), find("prometheus")  # doctor looks for them first
        except ToolMissing as e:
            pytest.skip(str(e))
    log = tmp_path / "x.log"
    log.write_text("step:1 - actor/entropy:0.5\n")
    argv = {"parse": [str(log), "--format", "nope"],
            "backfill": [str(log), "--format", "nope", "--run", "r", "--out", str(tmp_path / "o")],
            "doctor": [str(log), "--format", "nope"],
            "serve": ["--source", f"nope:{log}", "--port", "0"]}[command]
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        rc = main([command] + argv)
    assert rc != 0
    assert f"unknown format 'nope'; known: {registry.known()}" in err.getvalue()
