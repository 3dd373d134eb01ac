"""An exporter's companion objects (phase timers, live phases, the device resolver,
distributions), created on first use, and the one way they report their own failures.

The exporter interface they use: `exporter.helper(name, factory)`, `exporter.frames_logged`,
`exporter.closed`, `exporter.counts` (error / reject / add_nonfinite), `exporter.store`,
`exporter.telemetry`, `exporter.run`. At close() the exporter ends the open window (end_step)
and drains the resolver, so the last window is published once its device events complete,
within close()'s timeout.
"""
from __future__ import annotations

import logging
import threading

log = logging.getLogger("rl_exporter")


def count_error(exporter, kind, exc, message=None):
    """Count and log a failure of a timer or a distribution on its exporter (never raised)."""
    counts = getattr(exporter, "counts", None)
    if counts is not None:
        counts.error(kind, exc, message)
    else:  # an object standing in for an Exporter (tests, other owners of a store)
        log.error("rl-exporter: %s", message or f"{kind} failed: {exc!r}")


_ATTACH_LOCK = threading.RLock()


def attached(exporter, name: str, factory):
    """The exporter's helper object `name`, created by factory(exporter) on first use."""
    helper = getattr(exporter, "helper", None)
    if helper is not None:
        return helper(name, factory)
    obj = exporter.__dict__.get(name)  # an object standing in for an Exporter
    if obj is None:
        with _ATTACH_LOCK:
            obj = exporter.__dict__.get(name)
            if obj is None:
                obj = exporter.__dict__[name] = factory(exporter)
    return obj
