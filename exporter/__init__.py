"""rl-exporter: Prometheus/OpenTelemetry metrics for LLM RL post-training runs.

    from exporter import Exporter
    rlx = Exporter(run="grpo-a", framework="verl")   # serves http://127.0.0.1:9464/metrics
    rlx.log({"actor/pg_clipfrac": 0.12, "timing_s/gen": 41.8}, step=1)

or, for the one-exporter case, `exporter.init(...)` then `exporter.log(frame, step)`.
"""
from __future__ import annotations

import threading

__version__ = "0.1.0"

_default = None
_default_lock = threading.Lock()


def __getattr__(name):  # keep `import exporter` light: the hook pulls in OTel
    if name == "Exporter":
        from .hook import Exporter
        return Exporter
    raise AttributeError(name)


def init(**kwargs):
    """Create (or replace) the process-wide exporter used by exporter.log()."""
    global _default
    from .hook import Exporter
    with _default_lock:
        if _default is not None:
            _default.close()
        _default = Exporter(**kwargs)
        return _default


def log(frame, step=None) -> None:
    """Log to the process-wide exporter, creating one with defaults on first use."""
    ex = _default
    if ex is None:
        try:
            ex = init()
        except Exception:  # never raise into the training loop
            return
    ex.log(frame, step)


def close() -> None:
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
            _default = None
