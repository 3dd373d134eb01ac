"""Value coercion on the worker thread: anything a frame may hold -> a float, or None
with the rejection counted under its reason (string, type, overflow, device_timeout).

float/int/bool are handled inline by the worker's hot loop; everything else comes here:
numbers.Real and Decimal, numpy scalars and 0-d arrays, device values snapshotted by
values.py (Pending), and 0-d tensors.
"""
from __future__ import annotations

import decimal
import numbers

from .self_metrics import Counts
from .values import Deferred, Pending


class Coercer:
    def __init__(self, counts: Counts):
        self.counts = counts
        self.deadline: float | None = None  # set by close(): device waits end by then

    def number(self, key, v, count: bool = True):
        """A float, or None (rejections counted unless count=False)."""
        tv = v.__class__
        if tv is float:
            return v
        if tv is int or tv is bool:
            try:
                return float(v)
            except OverflowError:
                if count:
                    self.counts.reject("overflow")
                return None
        return self.other(key, v, count)

    def other(self, key, v, count: bool = True):
        """Anything but float/int/bool."""
        if v is None:
            return None  # absent, by contract
        try:
            if isinstance(v, (Pending, Deferred)):
                v = v.result(self._stop_at)
                if v is None:
                    if count:
                        self.counts.reject("device_timeout", f"key {key!r}: the device copy did "
                                           "not complete in time; not exported")
                    return None
                return float(v)
            if isinstance(v, str):
                reason = "string"
            elif isinstance(v, (numbers.Real, decimal.Decimal)):
                return float(v)
            elif getattr(v, "shape", None) == () and hasattr(v, "item"):
                return float(v.item())  # numpy 0-d arrays
            else:
                reason = "type"
        except OverflowError:
            reason = "overflow"
        except Exception:  # whatever a foreign __float__ / .item() raises costs this value only
            if isinstance(v, (Pending, Deferred)):
                reason = "device_error"
            else:
                # a numpy string array reads as a string; anything else that will not convert
                # (datetime64, a failing __float__) is the wrong type for a metric
                reason = "string" if isinstance(_item(v), str) else "type"
        if count:
            self.counts.reject(reason, f"key {key!r} has a {type(v).__name__} value ({reason}); "
                               "not exported")
        return None

    def _stop_at(self) -> float | None:
        return self.deadline


def _item(v):
    """v.item() where v has one and it works, else None."""
    try:
        return v.item()
    except Exception:
        return None
