"""Baselines: per-metric bands over training progress, learned from healthy runs of one recipe.

A run is read through the same path `doctor` and `backfill` use (logs.frames -> Replay, the
exporter `serve` runs): after each frame the collector's render gives every canonical series
(catalog name and labels) at that step. A series' value at a step is its last render while the
run was at that step, so what is banded is what Prometheus would have scraped.

Bands: the steps are cut into windows (of steps, or of the fraction of each run's steps), so
warm-up and late training get bands of their own. In each window the band is the pooled
[q_lo, q_hi] quantiles of the healthy runs' values, widened by `margin` x its width plus
`floor` x the metric's typical magnitude. A metric whose healthy runs disagree (their own
q_lo..q_hi ranges do not overlap in most windows), or that some run lacks, gets no band; the
file says which and why.
"""
from __future__ import annotations

import bisect
import math
import os
import re
from dataclasses import dataclass, field

VERSION = 1
# Series that are progress, identity or our own bookkeeping, not the trainer's signals.
NOT_SIGNALS = frozenset({"rl_training_step", "rl_training_step_timestamp_seconds", "rl_epoch",
                         "rl_run_info", "rl_config_value", "rl_unmapped_value"})
# The signals the runbooks read first: leave-one-out holds a healthy run inside these.
KEY_METRICS = ("rl_score", "rl_reward", "rl_shaped_reward", "rl_entropy",
               "rl_response_length_tokens", "rl_policy_clip_ratio", "rl_grad_norm",
               "rl_reference_kl", "rl_policy_kl", "rl_policy_loss", "rl_response_truncated_ratio")


# Catalog groups banded by default: what the trainer learns. Timings, throughput, memory and
# hardware follow the cluster, not the recipe; validation scores arrive every tens of steps.
TRAINING_GROUPS = frozenset({"reward", "groups", "policy", "critic", "length", "agentic",
                             "consistency", "preference", "optimizer", "world_model"})


def training_signal(name: str) -> bool:
    from ..catalog import CATALOG
    m = CATALOG.metrics.get(name)
    return m is not None and m.group in TRAINING_GROUPS and not name.endswith("_seconds")


class BaselineError(Exception):
    pass


@dataclass
class RunSeries:
    """One run as canonical series per training step."""
    name: str
    source: str
    framework: str = "auto"
    identity: dict = field(default_factory=dict)      # rl_run_info: algorithm, model
    config: dict = field(default_factory=dict)        # rl_config_value{parameter}: value
    steps: list = field(default_factory=list)         # sorted distinct steps
    values: dict = field(default_factory=dict)        # series key -> {step: value}

    def series(self, key: str) -> list[tuple[float, float]]:
        """[(step, value)] in step order."""
        return sorted(self.values.get(key, {}).items())


def series_key(name: str, labels: dict) -> str:
    """`rl_score{stat="max"}`: the series as a Prometheus selector (labels other than run)."""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "run")
    return f"{name}{{{inner}}}" if inner else name


def parse_key(key: str) -> tuple[str, dict]:
    if "{" not in key:
        return key, {}
    name, rest = key.split("{", 1)
    labels = {}
    for part in rest.rstrip("}").split(","):
        if part:
            k, v = part.split("=", 1)
            labels[k] = v.strip('"')
    return name, labels


def _is_signal(name: str) -> bool:
    from ..catalog import CATALOG, GAUGE
    if name in NOT_SIGNALS or name.startswith("rl_exporter_"):
        return False
    m = CATALOG.metrics.get(name)
    return m is not None and m.kind == GAUGE


def read_run(paths, *, fmt: str = "auto", run: str | None = None, algorithm: str | None = None,
             model: str | None = None) -> RunSeries:
    """A log or spool (or several logs of one run, in order) -> RunSeries, through the
    reading path doctor uses (algorithm, model: the rl_run_info labels doctor's --algorithm
    and --model give the run)."""
    from . import logs  # here, not at import: `rl-exporter --help` stays light
    from .replay import Replay
    paths = [paths] if isinstance(paths, str) else list(paths)
    path = paths[0]
    fmts = [logs.sniff(p, fmt) for p in paths]
    only = None
    if fmts[0] == "spool":
        runs = logs.spool_runs(path)
        if len(runs) > 1:
            if run not in runs:
                raise BaselineError(f"{path} holds {len(runs)} runs ({', '.join(runs[:10])}): "
                                    "name one with --run")
            only = run
        run = run or (runs[0] if runs else None)
    name = run or os.path.basename(path).split(".", 1)[0]
    out = RunSeries(name=name, source=path)
    replay = None
    signal: dict = {}
    frames = (x for p, f in zip(paths, fmts)
              for x in logs.frames(p, f, logs.LogStats(p), only_run=only))
    try:
        for fr, ts, fw in frames:
            if replay is None:
                replay = Replay(name, fw, algorithm=algorithm, model=model)
                out.framework = fw
            replay.apply(fr.data, fr.step, ts or 0.0)
            step = replay.pipeline.store.get("rl_training_step")
            if step is None or step != step:
                continue
            for fam in replay.collector.collect():
                for s in fam.samples:
                    ok = signal.get(s.name)
                    if ok is None:
                        ok = signal[s.name] = _is_signal(s.name)
                    if ok:
                        out.values.setdefault(series_key(s.name, s.labels), {})[step] = s.value
                    elif s.name == "rl_run_info":
                        out.identity = {k: v for k, v in s.labels.items()
                                        if k in ("framework", "algorithm", "model") and v}
                    elif s.name == "rl_config_value" and "parameter" in s.labels:
                        out.config[s.labels["parameter"]] = s.value
    finally:
        if replay is not None:
            replay.close()
    if replay is None:
        raise BaselineError(f"no metrics frames in {path} (`rl-exporter parse {path}` shows "
                            "what each line became)")
    out.steps = sorted({s for v in out.values.values() for s in v})
    return out


# ------------------------------------------------------------------ learning
def quantile(xs: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted xs (numpy's default)."""
    if not xs:
        return math.nan
    pos = q * (len(xs) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(xs) - 1)
    return xs[i] + (xs[j] - xs[i]) * (pos - i)


def progress(run: RunSeries, by: str):
    """step -> progress coordinate (the step itself, or the fraction of the run's steps)."""
    if by == "step":
        return lambda s: float(s)
    first, last = run.steps[0], run.steps[-1]
    span = max(last - first, 1)
    return lambda s: (s - first) / span


def _edges(runs: list[RunSeries], by: str, windows: int) -> list[float]:
    if by == "fraction":
        return [i / windows for i in range(windows + 1)]
    lo = min(r.steps[0] for r in runs)
    hi = max(r.steps[-1] for r in runs)
    width = max(1, math.ceil((hi - lo + 1) / windows))
    edges = [float(lo + i * width) for i in range(windows)]
    return edges + [float(max(hi + 1, edges[-1] + width))]


def window_of(edges: list[float], x: float) -> int | None:
    if x < edges[0] or x >= edges[-1] + (1e-9 if edges[-1] == 1.0 else 0):
        return None
    return min(bisect.bisect_right(edges, x) - 1, len(edges) - 2)


def learn(runs: list[RunSeries], *, by: str = "step", windows: int = 10,
          quantiles: tuple[float, float] = (0.05, 0.95), margin: float = 0.25,
          floor: float = 0.05, min_points: int = 3, disagree_share: float = 0.5,
          recipe: str | None = None, signals: str = "training") -> dict:
    """The baseline document (see module doc). signals: "training" (TRAINING_GROUPS) or
    "all" (every gauge the runs have)."""
    if not runs:
        raise BaselineError("no runs to learn from")
    if by not in ("step", "fraction"):
        raise BaselineError(f"--by {by!r}: step or fraction")
    runs = [r for r in runs if r.steps]
    if not runs:
        raise BaselineError("none of the runs has a training step")
    edges = _edges(runs, by, windows)
    qlo, qhi = quantiles
    keys = sorted(k for k in {k for r in runs for k in r.values}
                  if signals == "all" or training_signal(parse_key(k)[0]))
    bands: dict = {}
    unbanded: dict = {}
    for key in keys:
        missing = [r.name for r in runs if key not in r.values]
        if missing:
            unbanded[key] = f"missing in run(s) {', '.join(missing)}"
            continue
        per_run = []  # per run: per window sorted finite values
        for r in runs:
            pos = progress(r, by)
            ws: list[list[float]] = [[] for _ in range(len(edges) - 1)]
            for s, v in r.values[key].items():
                w = window_of(edges, pos(s))
                if w is not None and math.isfinite(v):
                    ws[w].append(v)
            per_run.append([sorted(x) for x in ws])
        allv = sorted(v for pr in per_run for w in pr for v in w)
        if not allv:
            unbanded[key] = "no finite value in the healthy runs"
            continue
        scale = quantile(sorted(abs(v) for v in allv), 0.5)
        judged = disjoint = 0
        example = None
        out_windows = []
        for w in range(len(edges) - 1):
            pooled = sorted(v for pr in per_run for v in pr[w])
            if len(pooled) < min_points:
                continue
            ranges = [(r.name, quantile(pr[w], qlo), quantile(pr[w], qhi))
                      for r, pr in zip(runs, per_run) if len(pr[w]) >= min_points]
            if len(ranges) >= 2:
                judged += 1
                tol = 1e-9 * max(scale, 1e-300)
                if max(x[1] for x in ranges) > min(x[2] for x in ranges) + tol:
                    disjoint += 1
                    example = example or (w, ranges)
            lo, hi = quantile(pooled, qlo), quantile(pooled, qhi)
            pad = margin * (hi - lo) + floor * scale
            out_windows.append([rounded(edges[w]), rounded(edges[w + 1]), rounded(lo - pad),
                                rounded(hi + pad)])
        if judged and disjoint > disagree_share * judged:
            w, ranges = example
            spans = "; ".join(f"{n} {a:.4g}..{b:.4g}" for n, a, b in ranges)
            unbanded[key] = (f"the healthy runs disagree: their p{qlo * 100:g}-p{qhi * 100:g} "
                             f"ranges do not overlap in {disjoint} of {judged} windows (at "
                             f"{_where(edges, w, by)}: {spans})")
            continue
        if not out_windows:
            unbanded[key] = f"fewer than {min_points} values in every window"
            continue
        bands[key] = out_windows
    fw = sorted({r.framework for r in runs})
    ident = {"framework": fw[0] if len(fw) == 1 else fw}
    for field_ in ("algorithm", "model"):
        vals = sorted({r.identity.get(field_, "") for r in runs} - {""})
        if vals:
            ident[field_] = vals[0] if len(vals) == 1 else vals
    params = sorted({p for r in runs for p in r.config})
    config = {}
    for p in params:
        vals = sorted({r.config.get(p) for r in runs if p in r.config})
        config[p] = rounded(vals[0]) if len(vals) == 1 else [rounded(v) for v in vals]
    if config:
        ident["config"] = config
    return {
        "rl_exporter_baseline": VERSION,
        "recipe": recipe or runs[0].name,
        "identity": ident,
        "runs": [{"name": r.name, "source": os.path.basename(r.source), "steps":
                  [int(r.steps[0]), int(r.steps[-1])]} for r in runs],
        "method": {"by": by, "windows": windows, "signals": signals, "quantiles": list(quantiles),
                   "margin": margin, "floor": floor, "min_points": min_points,
                   "note": ("one run: no check of agreement between runs" if len(runs) == 1
                            else f"a metric whose runs disagree in over {disagree_share:g} of "
                                 "the windows gets no band")},
        # each band: [from, to) of the progress coordinate, lower, upper
        "bands": bands,
        "unbanded": unbanded,
    }


def _where(edges, w, by) -> str:
    if by == "fraction":
        return f"{edges[w]:.0%}-{edges[w + 1]:.0%} of the run"
    return f"steps {int(edges[w])}-{int(edges[w + 1]) - 1}"


def rounded(x):
    """A band edge or config value as the baseline file writes it (6 significant digits)."""
    if isinstance(x, float) and math.isfinite(x) and x != 0:
        return float(f"{x:.6g}")
    return x


# ------------------------------------------------------------------ the file
def dump(doc: dict) -> str:
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _flow_list(d, data):  # one band per line: [from, to, lo, hi]
        flow = all(not isinstance(x, (list, dict)) for x in data)
        return d.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)
    _Dumper.add_representer(list, _flow_list)
    head = ("# rl-exporter baseline: per-metric bands learned from healthy runs of one recipe.\n"
            "# bands: series -> [from, to, lower, upper] per window of training progress "
            "(method.by).\n")
    return head + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=120,
                            allow_unicode=True)


MAX_FILE_BYTES = 16 << 20   # a baseline is kilobytes; 2,000 series x 10 windows is ~1 MB
MAX_SERIES = 100_000
MAX_WINDOWS = 10_000
_SERIES_KEY = re.compile(r'^[A-Za-z_:][A-Za-z0-9_:]*'
                         r'(\{[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\]|\\.)*"'
                         r'(?:,[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\]|\\.)*")*\})?$')


def load(path: str) -> dict:
    """A baseline file, checked against its schema before anything uses it: every problem
    is one BaselineError naming the file and the field (never a traceback later on)."""
    import yaml
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise BaselineError(f"{path}: {e}") from e
    if size > MAX_FILE_BYTES:
        raise BaselineError(f"{path}: {size / 2**20:.0f} MB is not a baseline (at most "
                            f"{MAX_FILE_BYTES >> 20} MB)")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where installed
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.load(f, Loader=loader)  # noqa: S506 (a safe loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as e:
        raise BaselineError(f"{path}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") \
            from e
    if not isinstance(doc, dict) or "rl_exporter_baseline" not in doc:
        raise BaselineError(f"{path}: not an rl-exporter baseline (no rl_exporter_baseline key)")
    if doc["rl_exporter_baseline"] != VERSION:
        raise BaselineError(f"{path}: baseline version {doc['rl_exporter_baseline']!r}, this "
                            f"rl-exporter reads version {VERSION}")
    problem = _schema_problem(doc)
    if problem is not None:
        raise BaselineError(f"{path}: {problem}")
    doc.setdefault("identity", {})
    doc.setdefault("unbanded", {})
    return doc


def _short(v) -> str:
    import reprlib  # bounded: a value may be an alias bomb of millions of references
    r = reprlib.Repr()
    r.maxlist = r.maxdict = 5
    r.maxlevel, r.maxstring, r.maxother = 3, 60, 60
    text = r.repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _schema_problem(doc: dict) -> str | None:
    """What is wrong with a baseline document, as `field: expected ..., got ...`; None."""
    if not isinstance(doc.get("recipe"), str) or not doc["recipe"]:
        return f"recipe: expected a name, got {_short(doc.get('recipe'))}"
    method = doc.get("method")
    if not isinstance(method, dict):
        return f"method: expected a mapping with `by`, got {_short(method)}"
    if method.get("by") not in ("step", "fraction"):
        return f"method.by: expected step or fraction, got {_short(method.get('by'))}"
    runs = doc.get("runs")
    if not isinstance(runs, list) or len(runs) > MAX_SERIES:
        return f"runs: expected a list of runs, got {_short(runs)}"
    for i, r in enumerate(runs):
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            return f"runs[{i}]: expected a mapping with a name, got {_short(r)}"
    ident = doc.get("identity", {})
    if not isinstance(ident, dict):
        return f"identity: expected a mapping, got {_short(ident)}"
    for k in ("framework", "algorithm", "model"):
        v = ident.get(k)
        if v is not None and not isinstance(v, str) and not (
                isinstance(v, list) and len(v) <= MAX_WINDOWS and all(isinstance(x, str) for x in v)):
            return f"identity.{k}: expected a name or a list of names, got {_short(v)}"
    config = ident.get("config", {})
    if not isinstance(config, dict) or len(config) > MAX_SERIES:
        return f"identity.config: expected a mapping, got {_short(config)}"
    for k, v in config.items():
        ok = _number(v) or isinstance(v, str) or (
            isinstance(v, list) and len(v) <= MAX_WINDOWS and all(_number(x) or isinstance(x, str)
                                                                  for x in v))
        if not ok:
            return f"identity.config.{k}: expected a value or a list of values, got {_short(v)}"
    bands = doc.get("bands")
    if not isinstance(bands, dict) or len(bands) > MAX_SERIES:
        return f"bands: expected a mapping of series to windows, got {_short(bands)}"
    for key, windows in bands.items():
        if not isinstance(key, str) or not _SERIES_KEY.match(key):
            return f"bands: {_short(key)} is not a series (name{{label=\"value\",...}})"
        if not isinstance(windows, list) or not windows or len(windows) > MAX_WINDOWS:
            return f"bands[{key!r}]: expected a list of windows, got {_short(windows)}"
        for i, w in enumerate(windows):
            if not (isinstance(w, list) and len(w) == 4 and all(_number(x) for x in w)
                    and w[0] < w[1] and w[2] <= w[3]):
                return (f"bands[{key!r}][{i}]: expected [from, to, lower, upper], four finite "
                        f"numbers with from < to and lower <= upper, got {_short(w)}")
    unbanded = doc.get("unbanded", {})
    if not isinstance(unbanded, dict) or len(unbanded) > MAX_SERIES or not all(
            isinstance(k, str) and _SERIES_KEY.match(k) for k in unbanded):
        return f"unbanded: expected a mapping of series to reasons, got {_short(unbanded)}"
    return None


def band_at(doc: dict, key: str, x: float):
    """(lo, hi) of `key`'s band at progress x, or None outside every window."""
    for a, b, lo, hi in doc["bands"].get(key, ()):
        if a <= x < b or (x == b == 1.0):
            return lo, hi
    return None


# ------------------------------------------------------------------ from a Prometheus
def read_prometheus(url: str, run: str, *, lookback: str = "30d", at: float | None = None,
                    step: float | None = None) -> RunSeries:
    """A run as the Prometheus that scraped it (or a backfill) holds it: its step samples
    from a range selector, then every rl_/hw_ series of the run through query_range on a
    grid as fine as its fastest step, each value kept at the step the run was at then."""
    from . import evaluate, tools

    class _Remote(tools.Prometheus):  # the API client only: no server of ours
        def __init__(self, base: str):
            self.url = base.rstrip("/")
            self.proc = None

    prom = _Remote(url)
    sel = f'{{run="{_escape(run)}"}}'
    params = {"query": f"rl_training_step{sel}[{lookback}]"}
    if at is not None:
        params["time"] = f"{at:.3f}"
    try:
        data = prom.api("/api/v1/query", params)
    except (tools.ToolFailed, OSError) as e:
        raise BaselineError(f"{url}: {e}") from e
    samples = sorted((float(t), float(v)) for s in data.get("result", []) for t, v in s["values"])
    if not samples:
        raise BaselineError(f"{url}: no rl_training_step for run {run!r} in the last {lookback}")
    changes = [t for (t, v), (_, pv) in zip(samples[1:], samples) if v != pv]
    gaps = [b - a for a, b in zip(changes, changes[1:]) if b > a]
    grid = step or max(1.0, min(gaps + [samples[1][0] - samples[0][0] if len(samples) > 1
                                        else 60.0]))
    # one grid point past the last sample: the run's last values (within the 5 min lookback)
    start, end = samples[0][0], samples[-1][0] + grid
    expr = f'{{run="{_escape(run)}",__name__=~"rl_.+|hw_.+"}}'
    try:
        got = evaluate.query_range(prom, expr, start, end, grid)
    except (tools.ToolFailed, OSError) as e:
        raise BaselineError(f"{url}: {e}") from e
    out = RunSeries(name=run, source=f"{url} run={run}")
    step_at: dict = {}
    for key, points in got.items():
        if dict(key).get("__name__") == "rl_training_step":
            step_at.update(points)
    for key, points in got.items():
        labels = dict(key)
        name = labels.pop("__name__", "")
        labels.pop("run", None)
        for k in ("job", "instance"):
            labels.pop(k, None)
        if name == "rl_run_info":
            out.framework = labels.get("framework") or out.framework
            out.identity = {k: v for k, v in labels.items()
                            if k in ("framework", "algorithm", "model") and v}
            continue
        if name == "rl_config_value" and "parameter" in labels:
            out.config[labels["parameter"]] = points[-1][1]
            continue
        if not _is_signal(name):
            continue
        col = out.values.setdefault(series_key(name, labels), {})
        for t, v in points:
            s = step_at.get(t)
            if s is not None:
                col[s] = v
    out.steps = sorted({s for v in out.values.values() for s in v})
    return out


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')
