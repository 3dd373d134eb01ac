"""Value handling on the caller's thread, for the rare frames that hold more than
plain Python scalars.

Immutable scalars (numpy's included) are passed through and coerced by the
worker. Torch tensors are mutable and may live on a GPU, so they are
snapshotted here: CPU 0-d tensors with .item() (no sync on the CPU), CUDA
tensors with one stacked copy into pinned host memory on the current stream and
an event the worker polls, so the training thread never waits for the device.
"""
from __future__ import annotations

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

    def result(self):
        deadline = time.monotonic() + self._timeout
        while not self._event.query():  # polling: never a blocking device synchronize
            if time.monotonic() > deadline:
                return None
            time.sleep(0.0005)
        return float(self._host[self._index])


def _torch_tensor_type():
    torch = sys.modules.get("torch")  # never import torch ourselves: it is the caller's
    return None if torch is None else torch.Tensor


def prepare_values(frame: dict, plain: set) -> dict:
    """Return a frame safe to hand to another thread. Learns new immutable scalar types
    into `plain` so later frames take the fast path."""
    tensor_t = _torch_tensor_type()
    cuda_keys, cuda_vals = [], []
    for k, v in frame.items():
        t = type(v)
        if t in plain:
            continue
        if tensor_t is not None and isinstance(v, tensor_t):
            if v.numel() != 1:
                continue  # the worker rejects it as a non-scalar
            if v.is_cuda:
                cuda_keys.append(k)
                cuda_vals.append(v)
            else:
                frame[k] = v.detach().reshape(()).item()
        elif getattr(t, "__module__", "") == "numpy" and t.__name__ != "ndarray":
            plain.add(t)  # numpy scalars are immutable: safe to pass through
    if cuda_vals:
        _snapshot_cuda(frame, cuda_keys, cuda_vals)
    return frame


def _snapshot_cuda(frame: dict, keys: list, tensors: list) -> None:
    import torch
    with torch.no_grad():
        stacked = torch.stack([t.detach().reshape(()).to(torch.float64) for t in tensors])
        # pinned host memory makes the copy asynchronous (always the case on a CUDA machine)
        host = torch.empty(stacked.shape, dtype=torch.float64,
                           pin_memory=torch.cuda.is_available())
        host.copy_(stacked, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
    for i, k in enumerate(keys):
        frame[k] = Pending(host, i, event)
