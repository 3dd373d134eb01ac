"""Shared assertion: what the exporter serves after a sequence of frames went through an adapter."""
from __future__ import annotations

import math

from exporter.catalog import CATALOG, STATE


def expected_series(frames, framework: str) -> dict:
    """{(sample name, sorted labels without run): value} the frames should leave behind
    (latest value wins, in the order the exporter processes keys)."""
    out = {}
    for frame in frames:
        for key, value in frame.items():
            if value is None or isinstance(value, (str, list, tuple, dict, bytes)):
                continue
            r = CATALOG.resolve(key, framework)
            if r.ignored or r.step or (r.metric is not None and r.metric.kind == STATE):
                continue
            v = float(value)
            if r.fallback:
                out[("rl_unmapped_value", (("key", key),))] = v
            else:
                out[(r.metric.name, tuple(sorted(r.labels)))] = v * r.scale
    return out


def assert_exported(series: dict, frames, framework: str) -> dict:
    exp = expected_series(frames, framework)
    assert exp, "nothing to check"
    for sample, value in exp.items():
        assert sample in series, f"{sample} missing from /metrics"
        got = series[sample]
        assert got == value or (math.isnan(got) and math.isnan(value)), (sample, got, value)
    return exp


def numeric_frame(keys, step: int, seed: float = 0.0) -> dict:
    """A frame holding every key with a distinct, step-dependent value."""
    return {k: round(seed + step + (i + 1) / 1000.0, 6) for i, k in enumerate(keys)}
