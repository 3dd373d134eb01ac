"""The exporter's own accounting: one registry of every loss, by named reason.

Every value or frame that does not become a series is counted here, once, under a
reason (rl_exporter_frames_dropped_total, rl_exporter_values_rejected_total,
rl_exporter_nonfinite_values_total, rl_exporter_errors_total, ...). The hook, the
worker, the store, timers, distributions and the samplers all write to the same
Counts; /metrics, OTLP and stats() read it.
"""
from __future__ import annotations

import logging
from collections import Counter

log = logging.getLogger("rl_exporter")

# reasons always rendered (at 0), so alerts and dashboards see the series from the start
DROP_REASONS = ("queue_full", "closed", "not_a_mapping", "close_timeout")
REJECT_REASONS = ("string", "type")


class Counts:
    """Plain counters; increments come from several threads under the GIL (an increment
    lost to a race is possible in principle, a value lost without any count is not)."""

    def __init__(self):
        self.received = 0           # frames accepted by log()
        self.processed = 0          # frames turned into series
        self.dropped: Counter = Counter()    # frames, by reason
        self.rejected: Counter = Counter()   # values, by reason
        self.nonfinite: Counter = Counter()  # NaN/Inf values, by canonical metric
        self.errors: Counter = Counter()     # internal errors, by kind
        self.unknown = 0            # values of keys no vocabulary knows
        self.ignored = 0            # values of keys ignored on purpose
        self.fallback_dropped = 0   # unknown keys past the fallback cap
        self.stack_dumps_failed: Counter = Counter()  # serve's py-spy dumps not taken, by reason
        self._logged: set[str] = set()

    # ------------------------------------------------------------ writes
    def error(self, kind: str, exc=None, message: str | None = None) -> None:
        """Count an internal error; log the first of each kind (with the traceback when
        no message explains it)."""
        self.errors[kind] += 1
        if kind not in self._logged:
            self._logged.add(kind)
            log.error("rl-exporter: %s", message or f"{kind} failed: {exc!r}",
                      exc_info=exc if (exc is not None and message is None) else None)

    def reject(self, reason: str, message: str | None = None, n: int = 1) -> None:
        """Count a rejected value; log the first of each reason."""
        self.rejected[reason] += n
        key = "reject:" + reason
        if message is not None and key not in self._logged:
            self._logged.add(key)
            log.warning("rl-exporter: %s (counted in rl_exporter_values_rejected_total"
                        "{reason=%r}; logged once)", message, reason)

    def add_nonfinite(self, metric: str, n: int = 1) -> None:
        self.nonfinite[metric] += n

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] += n

    # ------------------------------------------------------------ reads
    def snapshot(self) -> dict:
        """A copy of every counter (plain dicts and ints)."""
        return {"frames_received": self.received, "frames_processed": self.processed,
                "frames_dropped": dict(self.dropped), "values_rejected": dict(self.rejected),
                "nonfinite_values": dict(self.nonfinite), "errors": dict(self.errors),
                "unknown_keys": self.unknown, "ignored_keys": self.ignored,
                "fallback_keys_dropped": self.fallback_dropped,
                "stack_dumps_failed": dict(self.stack_dumps_failed)}

    def series(self, store, queue_len: int, last_frame_ts: float):
        """(store, metric, labels, value) for the collector and the OTLP mirror."""
        s = store
        yield s, "rl_exporter_frames_received_total", {}, self.received
        yield s, "rl_exporter_frames_processed_total", {}, self.processed
        dropped = dict(self.dropped)
        for reason in sorted(set(dropped) | set(DROP_REASONS)):
            yield s, "rl_exporter_frames_dropped_total", {"reason": reason}, dropped.get(reason, 0)
        rejected = dict(self.rejected)
        for reason in sorted(set(rejected) | set(REJECT_REASONS)):
            yield s, "rl_exporter_values_rejected_total", {"reason": reason}, rejected.get(reason, 0)
        for metric, n in sorted(dict(self.nonfinite).items()):
            yield s, "rl_exporter_nonfinite_values_total", {"metric": metric}, n
        yield s, "rl_exporter_unknown_keys_total", {}, self.unknown
        yield s, "rl_exporter_ignored_keys_total", {}, self.ignored
        yield s, "rl_exporter_fallback_keys_dropped_total", {}, self.fallback_dropped
        for kind, n in sorted(dict(self.errors).items()):
            yield s, "rl_exporter_errors_total", {"kind": kind}, n
        # only where serve tried (exporter/sidecar/pyspy.py): no series on every rank's budget
        for reason, n in sorted(dict(self.stack_dumps_failed).items()):
            yield s, "rl_exporter_stack_dumps_failed_total", {"reason": reason}, n
        yield s, "rl_exporter_queue_frames", {}, queue_len
        yield s, "rl_exporter_last_frame_timestamp_seconds", {}, last_frame_ts
