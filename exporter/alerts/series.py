"""promtool input series for the alerts' cases (model.Case, in exporter/alerts/areas/*.py): one run,
`r` (or the one named), and its series written as promtool's expanding notation. Engine series
carry the label names vLLM/SGLang set (exporter/catalog/engines.py) plus the `run` label the
scrape attaches; a rank is a scrape target of its own with its rl_run_info naming the rank."""
from __future__ import annotations

RUN = 'run="r"'


def s(name: str, values: str, run: str = "r", **labels) -> dict:
    lab = ", ".join([f'run="{run}"'] + [f'{k}="{v}"' for k, v in labels.items()])
    return {"series": f"{name}{{{lab}}}", "values": values}


def alt(a, b, n):
    return " ".join([str(a), str(b)] * n)


# ---- phases in progress and rollout engines
START = "rl_phase_in_progress_start_timestamp_seconds"
MEDIAN = "rl_phase_recent_median_duration_seconds"
VLLM = {"model_name": "Qwen/Qwen2.5-7B-Instruct", "engine": "0"}
GPU0 = {"gpu": "0", "uuid": "GPU-0", "gpu_model": "NVIDIA H100 80GB HBM3", "rank": "0"}


def hist(metric: str, per_min: dict, n: int, **labels) -> list[dict]:
    """Cumulative histogram buckets growing by per_min[le] every minute."""
    return [s(f"{metric}_bucket", f"0+{c}x{n}", le=le, **labels) for le, c in per_min.items()]


# per minute: 100 requests; healthy p50 5 s, p99 19 s; tail: 4 % run 2-4 min (p99 210 s)
LATENCY_HEALTHY = {"5": 50, "10": 90, "20": 100, "120": 100, "240": 100, "+Inf": 100}
LATENCY_TAIL = {"5": 50, "10": 94, "20": 95, "120": 96, "240": 100, "+Inf": 100}

# ---- ranks of one run
PHASE = "rl_phase_duration_seconds"


def rank(run: str, r: int, **phases: str) -> list[dict]:
    """A rank's target: its rl_run_info and one duration series per phase (values strings)."""
    target = f'job="rl-exporter", instance="{run}-{r}:9464", run="{run}"'
    out = [{"series": f'rl_run_info{{{target}, rank="{r}", framework="verl"}}', "values": "1x30"}]
    out += [{"series": f'{PHASE}{{{target}, phase="{p}"}}', "values": v} for p, v in phases.items()]
    return out


def steps(run: str) -> dict:
    return {"series": f'rl_training_step{{run="{run}"}}', "values": "1+1x30"}


# ---- the run's lifecycle (rl_run_state, a state set; docs/alerts.md "How a run ends")
STATES = ("starting", "running", "paused", "finished", "crashed", "restarting")


def life(segments: list[tuple[str | None, int, float]], run: str = "r", **target) -> list[dict]:
    """A target's rl_run_state state set and rl_run_state_change_timestamp_seconds, one sample a
    minute: `segments` are (state, minutes, change timestamp in seconds) in order; a state of
    None is a stretch with no sample (the target down or gone)."""
    per = {st: [] for st in STATES}
    change: list[str] = []
    for state, n, at in segments:
        for st in STATES:
            per[st] += ["_" if state is None else ("1" if st == state else "0")] * n
        change += ["_" if state is None else f"{at:g}"] * n
    out = [s("rl_run_state", " ".join(v), run, **target, state=st) for st, v in per.items()]
    return out + [s("rl_run_state_change_timestamp_seconds", " ".join(change), run, **target)]


def crash_info(exception: str, message: str, values: str, run: str = "r", **target) -> dict:
    return s("rl_run_crash_info", values, run, **target, exception=exception, message=message)
