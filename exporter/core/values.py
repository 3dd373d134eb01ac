"""Value handling on the caller's thread, for the rare frames that hold more than
plain Python scalars.

Immutable scalars (numpy's included) are passed through and coerced by the
worker. Torch tensors are mutable and may live on a GPU, so they are
snapshotted here: CPU 0-d tensors with .item() (no sync on the CPU); CUDA
tensors with one stacked copy per device into pinned host memory on that device's
current stream and an event recorded there, which the worker polls; tensors on
other devices (XLA, NPU, MPS...) with an on-device clone whose .item() (a sync)
runs on the worker. The training thread never waits for a device.
"""
from __future__ import annotations

import ctypes
import struct
import sys
import time

PLAIN_TYPES = frozenset({float, int, bool, str, type(None)})
DEVICE_TIMEOUT_S = 60.0  # a device copy not done by then is dropped and counted (device_timeout)


class Pending:
    """A device value copied asynchronously; result() waits on the worker thread."""

    __slots__ = ("_host", "_index", "_event", "_timeout")

    def __init__(self, host, index: int, event, timeout: float | None = None):
        self._host, self._index, self._event = host, index, event
        self._timeout = DEVICE_TIMEOUT_S if timeout is None else timeout

    def result(self, stop_at=None):
        """The value, or None when the copy is not done within the timeout, or past the
        deadline `stop_at()` returns (close() sets one while we wait)."""
        deadline = time.monotonic() + self._timeout
        while not self._event.query():  # polling: never a blocking device synchronize
            now = time.monotonic()
            if now > deadline:
                return None
            if stop_at is not None:
                stop = stop_at()
                if stop is not None and now > stop:
                    return None
            time.sleep(0.0005)
        return float(self._host[self._index])


class Deferred:
    """A tensor on a device without an event API we can poll (XLA, NPU, MPS...): cloned on
    the caller's thread (enqueued, no sync), read with .item() on the worker's."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def result(self, stop_at=None):
        return float(self._tensor.item())


# Reading a CPU scalar without a torch op: every op (.item(), .detach(), float(t)) releases
# the GIL, and getting it back from a busy thread (our worker, a data loader) costs the
# 5 ms switch interval. data_ptr() and dtype keep the GIL; the element is read with ctypes.
_READERS: dict = {}


def _readers() -> dict:
    if not _READERS:
        import torch
        for dt, ct in ((torch.float32, ctypes.c_float), (torch.float64, ctypes.c_double),
                       (torch.int64, ctypes.c_int64), (torch.int32, ctypes.c_int32),
                       (torch.int16, ctypes.c_int16), (torch.int8, ctypes.c_int8),
                       (torch.uint8, ctypes.c_uint8), (torch.bool, ctypes.c_bool)):
            _READERS[dt] = lambda ptr, ct=ct: ct.from_address(ptr).value
        _READERS[torch.float16] = lambda ptr: struct.unpack(
            "<e", ctypes.string_at(ptr, 2))[0]
        _READERS[torch.bfloat16] = lambda ptr: struct.unpack(
            "<f", b"\x00\x00" + ctypes.string_at(ptr, 2))[0]
    return _READERS


def _cpu_scalar(v):
    """The value of a one-element CPU tensor, read in place (no torch op, GIL kept)."""
    read = _readers().get(v.dtype)
    if read is not None and v.layout is _strided():
        try:
            ptr = v.data_ptr()
            if ptr:
                return read(ptr)
        except Exception:  # tensors without storage (fake/functional): the torch way
            pass
    return v.detach().reshape(()).item()


def _strided():
    import torch
    return torch.strided


def _torch_tensor_type():
    torch = sys.modules.get("torch")  # never import torch ourselves: it is the caller's
    return None if torch is None else torch.Tensor


def prepare_values(frame: dict, plain: set, counts=None) -> dict:
    """Return a frame safe to hand to another thread. Learns new immutable scalar types
    into `plain` so later frames take the fast path. A device whose copy fails loses its
    own keys only (counted as rejected values, reason device_error), not the frame."""
    tensor_t = _torch_tensor_type()
    cuda: dict = {}  # device -> ([keys], [tensors])
    for k, v in frame.items():
        t = type(v)
        if t in plain:
            continue
        if tensor_t is not None and isinstance(v, tensor_t):
            if v.numel() != 1:
                continue  # the worker rejects it as a non-scalar
            if v.is_cuda:
                keys, vals = cuda.setdefault(v.device, ([], []))
                keys.append(k)
                vals.append(v)
            elif v.device.type == "cpu":
                frame[k] = _cpu_scalar(v)
            else:
                frame[k] = Deferred(v.detach().reshape(()).clone())
        elif getattr(t, "__module__", "") == "numpy" and t.__name__ != "ndarray":
            plain.add(t)  # numpy scalars are immutable: safe to pass through
    for device, (keys, vals) in cuda.items():  # one copy per device: stack needs one device
        try:
            _snapshot_cuda(frame, device, keys, vals)
        except Exception as e:
            for k in keys:
                del frame[k]
            if counts is not None:
                counts.reject("device_error", f"copying {len(keys)} value(s) from {device} "
                              f"failed ({e!r}); not exported", n=len(keys))
    return frame


def _snapshot_cuda(frame: dict, device, keys: list, tensors: list) -> None:
    import torch
    with torch.no_grad():
        stacked = torch.stack([t.detach().reshape(()).to(torch.float64) for t in tensors])
        # pinned host memory makes the copy asynchronous (always the case on a CUDA machine)
        host = torch.empty(stacked.shape, dtype=torch.float64,
                           pin_memory=torch.cuda.is_available())
        host.copy_(stacked, non_blocking=True)
        # the event goes on the stream that ran the copy: that device's current stream
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(device))
    for i, k in enumerate(keys):
        frame[k] = Pending(host, i, event)
