"""Helpers the test folders share (tests/conftest.py re-exports free_port for older imports)."""
from __future__ import annotations

import functools
import importlib.util
import json
import sys
import urllib.request
from pathlib import Path

from exporter.postmortem.tools import free_port  # noqa: F401  (one free-port helper: doctor's)

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORK_DATA = Path(__file__).resolve().parent / "unit" / "catalog" / "data"


def scrape_text(url: str, timeout: float = 5.0) -> str:
    """The exposition text a plain GET of a /metrics URL returns."""
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def series(text: str, with_run: bool = False) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of an exposition text; `run` dropped unless with_run."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = {k: v for k, v in s.labels.items() if with_run or k != "run"}
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def res(key: str, framework: str):
    """The catalog's resolution of one logged key in one framework's vocabulary."""
    from exporter.catalog import CATALOG
    return CATALOG.resolve(key, framework)


@functools.cache
def _framework_data(framework: str) -> str:
    return (FRAMEWORK_DATA / f"{framework}.json").read_text()


def framework_data(framework: str) -> dict:
    """tests/unit/catalog/data/<framework>.json: the framework's researched keys and patterns
    (copied from framework-keys.json) and the mappings the catalog must give them."""
    return json.loads(_framework_data(framework))


def framework_keys(framework: str) -> list[str]:
    """The real metric keys a framework logs, as read from its own code."""
    return framework_data(framework)["keys"]


@functools.cache
def helm_sync():
    """helm/sync.py as a module: helm/ is a chart folder, not a package, so it is loaded by path."""
    spec = importlib.util.spec_from_file_location("helm_sync", ROOT / "helm" / "sync.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
