"""The format registry: every parser in the package is found, and each describes its format
completely and consistently (names, vocabulary, detection rules with a line each claims), so
adding a format is its module and its test."""
from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import exporter.logs as logs
from exporter.catalog import FRAMEWORKS
from exporter.logs import registry
from exporter.logs.auto import AutoParser
from exporter.logs.base import Parser, clean

PACKAGE = Path(logs.__file__).parent
REAL = Path(__file__).resolve().parents[2] / "data" / "real"
RULES = [(p, r) for p in registry.PARSERS for r in p.rules]


def _defined_parsers() -> set[type]:
    out = set()
    for info in pkgutil.iter_modules(logs.__path__):
        mod = importlib.import_module(f"exporter.logs.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Parser) and obj is not Parser \
                    and obj.__module__ == mod.__name__:
                out.add(obj)
    return out


def test_every_parser_the_package_defines_is_registered():
    """A parser put in a module the registry skips (auto, base, read, ...) would be lost."""
    assert _defined_parsers() - {AutoParser} == set(registry.PARSERS)


def test_names_and_aliases_are_unique():
    names = [p.format for p in registry.PARSERS]
    aliases = [a for p in registry.PARSERS for a in p.aliases]
    assert len(set(names)) == len(names)
    assert len(set(aliases)) == len(aliases)
    assert not set(names) & set(aliases)
    assert "auto" not in names + aliases
    for a, fmt in registry.ALIASES.items():
        assert logs.canonical_format(a) == fmt and logs.make_parser(a).format == fmt


def test_each_format_names_a_vocabulary_and_says_what_it_reads():
    for p in registry.PARSERS:
        assert p.framework in ("auto",) + FRAMEWORKS, p.format
        assert p.summary.strip(), f"{p.format}: no summary (docs/sidecar.md's table)"
        if p.document:
            assert p.detect_document and not p.rules, p.format
        else:
            assert p.rules, f"{p.format}: no detection rule"
        assert not p.startup or p.auxiliary, f"{p.format}: a start-up print is auxiliary"
        assert not p.steps_from or p.steps_from in registry.FORMATS, p.format


def test_rule_priorities_are_unique():
    prios = [r.priority for _, r in RULES]
    assert len(set(prios)) == len(prios)


@pytest.mark.parametrize("parser,rule", RULES, ids=[f"{p.format}-{r.priority}" for p, r in RULES])
def test_each_rule_claims_its_example_and_no_earlier_rule_does(parser, rule):
    """The check on a rule's priority: a format placed after a rule that also matches its
    lines would never see them."""
    assert rule.gate in rule.example and rule.test(rule.example)
    first = next((p, r) for p, r in sorted(RULES, key=lambda pr: pr[1].priority)
                 if r.gate in rule.example and r.test(rule.example))
    assert first == (parser, rule), f"{first[0].format}'s rule {first[1].priority} claims it"
    assert logs.detect_format(rule.example) == parser.format


def test_gates_are_implied_by_their_tests_on_the_real_corpus():
    """A gate only spares work: a line a rule's test accepts always holds its gate."""
    lines = [clean(line) for f in sorted(REAL.rglob("*")) if f.is_file() and f.suffix != ".json"
             for line in f.read_text(encoding="utf-8", errors="replace").split("\n")]
    assert len(lines) > 2000
    for p, r in RULES:
        missed = [line for line in lines if r.test(line) and r.gate not in line]
        assert not missed, f"{p.format} rule {r.priority}: gate {r.gate!r} not in {missed[0]!r}"


def test_detection_order_is_the_rules_priorities():
    tried = [fmt for _, _, fmt in registry.RULES]
    assert tried == [p.format for p, r in sorted(RULES, key=lambda pr: pr[1].priority)]
    assert list(registry.FORMATS) == [p.format for p in registry.PARSERS]


def test_the_package_has_no_import_loop():
    """`logs/__init__.py` only re-exports: no module of the package imports a name from it."""
    modules = {info.name for info in pkgutil.iter_modules(logs.__path__)}
    for path in PACKAGE.glob("*.py"):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                names = {a.name for a in node.names}
                assert names <= modules, f"{path.name} imports {names - modules} from the package"
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module != "exporter.logs", path.name
