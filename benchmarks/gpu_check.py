"""Prove on a real GPU that the exporter adds no synchronization to the training
thread: the CUDA timer, observe() and tensor log() paths run under
torch.cuda.set_sync_debug_mode("error"), which raises on any synchronizing call
made by torch on this thread.

    python3 benchmarks/gpu_check.py        # needs CUDA; exits 2 without it

Prints each check and OK/FAIL, then the published values (read after the
background thread resolved the events and copies). Exit 0 when all pass.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> int:
    import torch
    if not torch.cuda.is_available():
        print("gpu_check: CUDA not available; nothing checked")
        return 2
    from exporter import Exporter
    from exporter.testing import scrape
    dev = torch.device("cuda")
    torch.cuda.init()
    ex = Exporter(run="gpu-check", framework="verl", serve=False)
    a = torch.randn(4096, 4096, device=dev)
    lengths = torch.randint(1, 8192, (1_000_000,), device=dev)
    gaps = torch.rand(1_000_000, device=dev, dtype=torch.bfloat16)
    loss = (a @ a).mean()
    torch.cuda.synchronize()  # setup done; from here on no sync is allowed
    failures = 0

    def check(name, fn):
        nonlocal failures
        t0 = time.perf_counter()
        try:
            fn()
            print(f"OK    {name}  ({(time.perf_counter() - t0) * 1e3:.2f} ms on the caller)")
        except Exception as e:
            failures += 1
            print(f"FAIL  {name}: {type(e).__name__}: {e}")

    torch.cuda.set_sync_debug_mode("error")
    try:
        def timed_step():
            with ex.timer("train", tokens=4096):
                for _ in range(20):
                    b = a @ a  # noqa: F841
            with ex.timer("gen"):
                for _ in range(10):
                    b = a @ a  # noqa: F841

        @ex.timer("decorated")
        def decorated():
            return a @ a

        check("timer() context manager, CUDA events", timed_step)
        check("timer() decorator", decorated)
        check("observe() int64 CUDA tensor (1M)", lambda: ex.observe("response_length", lengths))
        check("observe() bf16 CUDA tensor (1M)", lambda: ex.observe("logprob_gap", gaps))
        check("log() with CUDA 0-d tensors", lambda: ex.log({"actor/pg_loss": loss,
                                                             "actor/entropy": loss * 2}, step=1))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    ex.flush()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        s = scrape(ex)
        if ("rl_phase_duration_seconds", (("phase", "gen"),)) in s and \
                ("rl_sample_response_length_tokens_count", ()) in s:
            break
        time.sleep(0.01)
    s = scrape(ex)
    for key in (("rl_phase_duration_seconds", (("phase", "train"),)),
                ("rl_phase_duration_seconds", (("phase", "gen"),)),
                ("rl_phase_duration_seconds", (("phase", "decorated"),)),
                ("rl_phase_time_per_token_seconds", (("phase", "train"),)),
                ("rl_sample_response_length_tokens_count", ()),
                ("rl_policy_loss", ())):
        print(f"{key[0]}{dict(key[1]) or ''} = {s.get(key)}")
    n = s.get(("rl_sample_response_length_tokens_count", ()))
    if n != 1_000_000:
        failures += 1
        print(f"FAIL  observe count {n} != 1000000")
    want = float((lengths <= 1024).sum())
    got = s.get(("rl_sample_response_length_tokens_bucket", (("le", "1024"),)))
    if got != want:
        failures += 1
        print(f"FAIL  bucket le=1024: {got} != {want}")
    ex.close()
    print("gpu_check:", "PASS" if failures == 0 else f"{failures} FAILED")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
