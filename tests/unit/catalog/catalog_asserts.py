"""Helpers shared by the vocabulary tests: resolve a key and assert where it lands."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from exporter.catalog import CATALOG

_CANDIDATES = (
    os.environ.get("RLX_FRAMEWORK_KEYS", ""),
    str(Path(__file__).resolve().parents[3] / "shared" / "research" / "framework-keys.json"),
    "/work/shared/research/framework-keys.json",
)


def framework_keys() -> dict | None:
    """The research file framework-keys.json where this checkout can see it, else None."""
    for path in _CANDIDATES:
        if path and Path(path).is_file():
            return json.loads(Path(path).read_text())
    return None


def research_entry(framework: str) -> dict:
    """framework-keys.json's entry for `framework`, skipping the test where the file is not
    mounted (a checkout without ../shared)."""
    import pytest
    data = framework_keys()
    if data is None:
        pytest.skip("framework-keys.json not mounted here")
    return data[framework]


def lands(key: str, framework: str, metric: str, labels: dict | None = None,
          scale: float | None = 1.0):
    """Assert `key` resolves (no fallback, not ignored) to `metric` with exactly `labels`
    (and `scale`, unless scale=None)."""
    r = CATALOG.resolve(key, framework)
    assert not r.fallback, f"{key!r} fell back: {r.reason}"
    assert not r.ignored, f"{key!r} is ignored: {r.reason}"
    assert r.metric is not None and r.metric.name == metric, \
        f"{key!r} -> {r.metric.name if r.metric else None}, expected {metric} ({r.reason})"
    assert dict(r.labels) == (labels or {}), f"{key!r} labels {dict(r.labels)} != {labels or {}}"
    if scale is not None:
        assert math.isclose(r.scale, scale, rel_tol=1e-12), f"{key!r} scale {r.scale} != {scale}"
    return r


def bundled_keys(framework: str) -> dict:
    """This checkout's copy of framework-keys.json for one framework (tests/unit/catalog/data)."""
    return json.loads((Path(__file__).parent / "data" / f"framework_keys_{framework}.json").read_text())


def known(key: str, framework: str):
    """Resolves to a catalog entry, is ignored with a reason, or is left on the fallback on
    purpose with a reason: never the fallback by omission."""
    r = CATALOG.resolve(key, framework)
    assert not r.fallback or r.deliberate, f"{key!r} fell back in {framework}: {r.reason}"
    if r.fallback:
        assert "left on" in r.reason and r.reason.split(": ", 1)[1].strip(), r.reason
        return r
    if r.ignored:
        assert r.reason.strip(), f"{key!r} ignored without a reason"
    else:
        assert r.metric is not None and r.metric.name.startswith("rl_"), r
    return r


def frame_fallbacks(frame: dict, framework: str) -> list[str]:
    """Keys of a logged frame that would land on rl_unmapped_value."""
    return [k for k in frame if CATALOG.resolve(k, framework).fallback]


def series_of(frame: dict, framework: str) -> dict:
    """(metric, labels) -> [keys] for the non-ignored, non-step keys of a frame."""
    out: dict = {}
    for k in frame:
        r = CATALOG.resolve(k, framework)
        if r.ignored or r.step or r.fallback:
            continue
        out.setdefault((r.metric.name, r.labels), []).append(k)
    return out
