"""The test kit (ours and users'): what an exporter exposes, a free port, a veRL-sized frame,
a phase held open.

    from exporter.testing import export_frame
    series = export_frame({"actor/pg_clipfrac": 0.1}, "verl")
    series[("rl_policy_clip_ratio", ())]   # -> 0.1 (labels other than run, sorted)

- `samples(text)`: an exposition text as {(sample name, sorted labels): value};
  `scrape(exporter)` the same of an exporter's registry, `scrape_text(url)` a GET of /metrics;
- `free_port()`: a loopback port nothing listens on (doctor starts its Prometheus on one);
- `verl_frame(seed)`: 150 keys the way veRL logs a step (the benchmarks' and the fault suite's);
- `phase_open(exporter, phase)`: a phase held open in another thread, as a trainer's;
- `python_calls(fn)`: Python-level calls fn() makes; exporter.testing.nvml: a fake NVML.
"""
from __future__ import annotations

import contextlib
import random
import sys
import threading
import urllib.request

from ..postmortem.tools import free_port  # noqa: F401  (the one helper: doctor's)

# veRL's stats families (each logged as /mean, /max, /min) and scalars, for verl_frame
VERL_STAT_FAMILIES = ("critic/score", "critic/rewards", "critic/advantages", "critic/returns",
                      "response_length", "prompt_length", "global_seqlen", "num_turns")
VERL_SCALARS = ("actor/pg_loss", "actor/pg_clipfrac", "actor/pg_clipfrac_lower", "actor/ppo_kl",
                "actor/entropy", "actor/kl_loss", "actor/kl_coef", "actor/grad_norm", "actor/lr",
                "critic/vf_loss", "critic/vf_clipfrac", "critic/vpred_mean", "critic/grad_norm",
                "perf/throughput", "perf/total_num_tokens", "perf/time_per_step",
                "perf/mfu/actor", "perf/mfu/actor_infer", "response_length/clip_ratio",
                "prompt_length/clip_ratio", "response/aborted_ratio", "training/epoch")


def samples(text: str, with_run: bool = False) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of an exposition text; `run` dropped unless
    with_run."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = {k: v for k, v in s.labels.items() if with_run or k != "run"}
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def scrape(exporter, with_run: bool = False) -> dict[tuple[str, tuple], float]:
    """Every sample the exporter's registry renders (after a flush), as samples() reads it."""
    from prometheus_client import generate_latest
    exporter.flush()
    return samples(generate_latest(exporter.registry).decode(), with_run)


def scrape_text(url: str, timeout: float = 5.0) -> str:
    """The exposition text a plain GET of a /metrics URL returns."""
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def export_frame(frame: dict, framework: str = "auto", step=None, **kwargs) -> dict:
    """Log one frame through a fresh, unserved exporter and return scrape()."""
    from ..hook import Exporter
    ex = Exporter(run=kwargs.pop("run", "test"), framework=framework, serve=False, **kwargs)
    try:
        ex.log(frame, step=step)
        return scrape(ex)
    finally:
        ex.close()


def verl_frame(seed: int | random.Random = 0) -> dict:
    """150 keys the way veRL logs a step: 20 timers, the stats families, actor/critic/perf
    scalars, then validation keys up to 150; values from `seed` (a Random or its seed)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    f = {f"timing_s/phase_{i}": rng.uniform(0.1, 60) for i in range(20)}
    for fam in VERL_STAT_FAMILIES:
        for stat in ("mean", "max", "min"):
            f[f"{fam}/{stat}"] = rng.random()
    for k in VERL_SCALARS:
        f[k] = rng.random()
    i = 0
    while len(f) < 150:
        f[f"val-core/source_{i}/acc/mean@1"] = rng.random()
        i += 1
    return f


@contextlib.contextmanager
def phase_open(exporter, phase: str, timeout: float = 10.0):
    """`phase` open in another thread (inside exporter.timer(phase), as a trainer thread is)
    for the length of the with block: for what reads phases in progress (GET /status, the
    hang watch, the GPU sampler). Yields the thread."""
    inside, release = threading.Event(), threading.Event()

    def hold():
        with exporter.timer(phase):
            inside.set()
            release.wait(timeout)
    t = threading.Thread(target=hold, name=f"phase-{phase}", daemon=True)
    t.start()
    try:
        if not inside.wait(timeout):
            raise TimeoutError(f"phase {phase!r} did not open within {timeout} s")
        yield t
    finally:
        release.set()
        t.join(timeout)


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
