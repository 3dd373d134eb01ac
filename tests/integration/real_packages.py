"""Helpers for the tests that drive our adapters through the real framework packages.

The packages are pinned in tests/requirements/<framework>.txt and installed with --no-deps
by `scripts/test` (only the imports their logging path needs come along). A missing package
skips on a developer machine and fails under CI=true, with the exact import that failed.
slime and Miles publish no package: their tracking modules are vendored verbatim at a pinned
commit under tests/vendor/ (see tests/vendor/README.md).
"""
from __future__ import annotations

import contextlib
import importlib
import os
import sys

import pytest

from tests.helpers import scrape_text, series

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENDOR = os.path.join(ROOT, "tests", "vendor")


def need(module: str, why: str = ""):
    """import `module`; skip (fail under CI) with the exact ImportError when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:  # ModuleNotFoundError included
        msg = f"cannot import {module}: {type(e).__name__}: {e}" + (f" ({why})" if why else "")
        if os.environ.get("CI"):
            pytest.fail(msg + "; scripts/test installs tests/requirements/*.txt", pytrace=False)
        pytest.skip(msg)


@contextlib.contextmanager
def vendored(name: str):
    """sys.path gets tests/vendor/<name> (a verbatim upstream snapshot) for the block."""
    path = os.path.join(VENDOR, name)
    sys.path.insert(0, path)
    before = set(sys.modules)
    try:
        yield path
    finally:
        sys.path.remove(path)
        for m in set(sys.modules) - before:
            if m == name or m.startswith(name + "."):
                del sys.modules[m]


def scrape_url(url: str) -> dict:
    """{(sample name, sorted labels without run): value} from a live /metrics endpoint."""
    return series(scrape_text(url))


def config_series(series: dict) -> dict:
    """{parameter: value} of the rl_config_value series the integrations set (a framework's
    own config echoes, e.g. AReaL's eps_clip, are left out)."""
    from exporter.integrations._common import CONFIG_PARAMETERS
    return {dict(l)["parameter"]: v for (n, l), v in series.items()
            if n == "rl_config_value" and dict(l).get("parameter") in CONFIG_PARAMETERS}


def source_function(path: str, qualname: str, namespace: dict):
    """Compile one function from a real package's source file, without importing the module
    (for modules whose import needs CUDA-only packages). Returns the function object."""
    import ast
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    parts = qualname.split(".")
    nodes = tree.body
    for part in parts:
        found = next((n for n in nodes if isinstance(n, (ast.ClassDef, ast.FunctionDef))
                      and n.name == part), None)
        if found is None:
            raise LookupError(f"{qualname} not found in {path}")
        nodes = found.body
    mod = ast.Module(body=[found], type_ignores=[])
    code = compile(mod, path, "exec")  # tracebacks point at the real file and line
    exec(code, namespace)
    return namespace[parts[-1]]
