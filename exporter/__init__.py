"""rl-exporter: Prometheus/OpenTelemetry metrics for LLM RL post-training runs.

    from exporter import Exporter
    rlx = Exporter(run="grpo-a", framework="verl")   # serves http://127.0.0.1:9464/metrics
    rlx.log({"actor/pg_clipfrac": 0.12, "timing_s/gen": 41.8}, step=1)

or, for the one-exporter case, `exporter.init(...)` then `exporter.log(frame, step)`.
"""
from __future__ import annotations

import threading

from ._version import __version__ as __version__  # the package face re-exports it

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


# After a failed init() from log(), retries wait 1 s, then 2, 4 ... up to 5 minutes, so a
# broken configuration costs one attempt per backoff period, not one per log() call.
_retry_at = 0.0
_retry_wait = 0.0
_lost_frames = 0  # frames log() could not hand to any exporter (logged with each retry)


def log(frame, step=None) -> None:
    """Log to the process-wide exporter, creating one with defaults on first use."""
    global _retry_at, _retry_wait, _lost_frames
    ex = _default
    if ex is None:
        import time
        now = time.monotonic()
        if now < _retry_at:
            _lost_frames += 1
            return
        try:
            ex = init()
            _retry_wait = 0.0
        except Exception as e:  # never raise into the training loop
            _lost_frames += 1
            _retry_wait = min(300.0, max(1.0, _retry_wait * 2))
            _retry_at = now + _retry_wait
            import logging
            logging.getLogger("rl_exporter").error(
                "rl-exporter: init() failed (%r); %d frame(s) not exported so far; next try "
                "in %g s", e, _lost_frames, _retry_wait)
            return
    ex.log(frame, step)


def close() -> None:
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
            _default = None
