"""Helpers shared by the vocabulary tests: resolve a key and assert where it lands."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from exporter.catalog import CATALOG

_FILE = Path("research") / "framework-keys.json"
_ROOT = Path(__file__).resolve().parents[3]


def _shared_dir() -> Path | None:
    """The team's shared/ directory: $RLX_SHARED_DIR, else a `shared/` beside this checkout or
    one of its parents, else beside the main checkout of a git worktree. No fixed path."""
    env = os.environ.get("RLX_SHARED_DIR")
    if env:
        return Path(env)
    roots = [_ROOT, *_ROOT.parents]
    try:  # a git worktree: its main checkout's parents too
        import subprocess
        common = subprocess.run(["git", "-C", str(_ROOT), "rev-parse", "--git-common-dir"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        if common:
            main = (_ROOT / common).resolve().parent
            roots += [main, *main.parents]
    except (OSError, subprocess.SubprocessError):
        pass
    for r in roots:
        if (r / "shared" / _FILE).is_file():
            return r / "shared"
    return None


def _keys_path() -> Path | None:
    if os.environ.get("RLX_FRAMEWORK_KEYS"):
        return Path(os.environ["RLX_FRAMEWORK_KEYS"])
    shared = _shared_dir()
    return None if shared is None else shared / _FILE


def framework_keys() -> dict | None:
    """The research file framework-keys.json where this checkout can see it, else None."""
    path = _keys_path()
    if path is None:
        return None
    if not path.is_file():  # named explicitly but absent: say so rather than skip quietly
        raise FileNotFoundError(f"framework-keys.json not found at {path} "
                                "(RLX_FRAMEWORK_KEYS / RLX_SHARED_DIR)")
    return json.loads(path.read_text())


def research_entry(framework: str) -> dict:
    """framework-keys.json's entry for `framework`, skipping the test where the file is not
    mounted (a checkout without shared/; under RLX_REQUIRE_ALL=1 the skip is a failure)."""
    import pytest
    data = framework_keys()
    if data is None:
        pytest.skip("framework-keys.json not found: set RLX_SHARED_DIR=<dir holding "
                    "research/framework-keys.json> or RLX_FRAMEWORK_KEYS=<file>")
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


def frame_lands(frame: dict, framework: str) -> None:
    """Every key of a logged frame lands on a named series (no fallback, not ignored) and no two
    keys land on the same one."""
    seen: dict = {}
    for key in frame:
        r = CATALOG.resolve(key, framework)
        assert not r.fallback and not r.ignored, f"{key!r}: {r.reason}"
        sid = (r.metric.name, r.labels)
        assert sid not in seen, f"{key} and {seen[sid]} both become {sid}"
        seen[sid] = key


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
