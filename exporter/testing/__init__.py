"""Helpers for tests (ours and users'): render what an exporter exposes.

    from exporter.testing import export_frame
    series = export_frame({"actor/pg_clipfrac": 0.1}, "verl")
    series[("rl_policy_clip_ratio", ())]   # -> 0.1 (labels other than run, sorted)
"""
from __future__ import annotations

import sys

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families


def scrape(exporter, with_run: bool = False) -> dict[tuple[str, tuple], float]:
    """Every sample the exporter's registry renders: {(sample name, sorted labels): value}.
    The `run` label is dropped unless with_run."""
    exporter.flush()
    text = generate_latest(exporter.registry).decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = {k: v for k, v in s.labels.items() if with_run or k != "run"}
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def export_frame(frame: dict, framework: str = "auto", step=None, **kwargs) -> dict:
    """Log one frame through a fresh, unserved exporter and return scrape()."""
    from ..hook import Exporter
    ex = Exporter(run=kwargs.pop("run", "test"), framework=framework, serve=False, **kwargs)
    try:
        ex.log(frame, step=step)
        return scrape(ex)
    finally:
        ex.close()


def python_calls(fn) -> int:
    """Python-level function calls made while running fn(): the same count for 1k and 1M
    elements proves there is no per-element Python work."""
    n = 0

    def prof(frame, event, arg):
        nonlocal n
        if event == "call":
            n += 1
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n
