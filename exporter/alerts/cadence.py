"""The cadence matrix: every warning/critical alert against a healthy run and its pathology at
30 s, 2 min and 10 min steps, as promtool unit tests (exporter/alerts/tests/cadence-*.test.yaml).

A run is data (exporter/alerts/sim/): healthy(step, rng) gives the values a healthy GRPO run logs
at a step (the Miles lab ranges; the posttrain metrics reference and the veRL metrics guide where
the lab has none), and PATHOLOGIES[alert] edits them from the onset step on: mostly read
(from_entry) from the one description of each pathology that the demo reads too
(exporter/demo/pathologies.py); a plain row edits the simulated run's series and says why.
sim/run.py turns the steps into scrape samples.

Each cadence file holds:
- one healthy run of HEALTHY_STEPS steps: no alert of any severity fires at any evaluation;
- per alert, the healthy run with the pathology from ONSET on: the alert fires, and the number
  of pathological steps it took (MEASURED, written by `python -m exporter.alerts cadence --measure`) is
  asserted exactly and must be within the alert's stated budget.

To add an alert's rows: add from_entry(...) or a Pathology to PATHOLOGIES (and any series it
reads to sim/healthy.py),
run `python -m exporter.alerts cadence --measure`, then `python -m exporter.alerts test-file`.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path
from exporter import rules as shipped
from .rules import ALERTS
from .recordings import alert_metrics
from .render import yaml_text
from .paths import RULES_FROM_TESTS
from .sim.healthy import ENGINE, ENGINE_UP, HEALTHY_STEPS, latency_counts, uniform
from .sim.pathology import Pathology, assign, from_entry
from .sim.run import ALWAYS, CADENCES, CRASH_EVERY, ONSET, Run

HERE = Path(__file__).resolve().parent
MEASURED_FILE = HERE / "tests" / "cadence-steps.json"


_RUNNING = f"%vllm:num_requests_running{{{ENGINE}}}"
_WAITING = f"%vllm:num_requests_waiting{{{ENGINE}}}"
_BUSY = '%hw_gpu_phase_busy_seconds_total{gpu="0", rank="0"}'
_IDLE = '%hw_gpu_phase_idle_seconds_total{gpu="0", rank="0"}'
_OUTCOME = '+vllm:request_success_total{%s, finished_reason="%s"}'


def _hung_gen(v, i, rng):
    """gen opens and never closes; the GPUs sit at 0 % and the engine runs nothing."""
    v["=phases"] = [("gen", math.inf)]
    v[_BUSY] = {"gen": 0.0, "update_actor": 0.92}
    v[_IDLE] = {"gen": 1.0, "update_actor": 0.08}
    v[_RUNNING] = v[_WAITING] = {"": 0}


def _idle_rollout(v, i, rng):
    """gen waits on something else (a reward or tool server): GPUs 2-8 % busy, engine empty."""
    busy = uniform(rng, 0.02, 0.08)
    v[_BUSY] = {"gen": busy, "update_actor": 0.92}
    v[_IDLE] = {"gen": 1 - busy, "update_actor": 0.08}
    v[_RUNNING] = v[_WAITING] = {"": 0}


def _aborts(v, i, rng):
    n = v["=requests"]
    aborted = round(n * uniform(rng, 0.09, 0.11))
    length = round((n - aborted) * v["rl_response_truncated_ratio"])
    v[_OUTCOME % (ENGINE, "abort")], v[_OUTCOME % (ENGINE, "length")] = aborted, length
    v[_OUTCOME % (ENGINE, "stop")] = n - aborted - length


def _kv_thrash(v, i, rng):
    v[f"vllm:kv_cache_usage_perc{{{ENGINE}}}"] = uniform(rng, 0.96, 0.99)
    v[f"+vllm:num_preemptions_total{{{ENGINE}}}"] = round(v["rl_step_duration_seconds"] / 60 * uniform(rng, 2, 4))


def _long_tail(v, i, rng):
    """4 % of requests straggle at ~12x the median latency: histogram p99/p50 ~ 9-13."""
    v.update(latency_counts(v["=step_s"], v["=requests"], v["=latency_median"], tail=0.04))


def _engine_down(v, i, rng):
    """The engine dies as the step starts: its target is down, its series are gone, and the
    trainer waits in gen (still exporting)."""
    _hung_gen(v, i, rng)
    for key in list(v):
        if "vllm:" in key:
            v[key] = None
    v["%" + ENGINE_UP] = 0


_PHASES = ("phases and GPU time by phase come from this file's step timeline ('=phases', '%' keys); "
           "the demo writes them as side series (exporter/demo/scenarios.py phase_series)")
_ENGINE = ("the rollout engine's own series: its demo is the stand-in engine "
           "(exporter/demo/engine.py, exporter/alerts/scenarios.py ENGINE_EXPECTED)")

def _slow_rank(v, i, rng):
    """Rank 2's GPU runs at half speed (held down by its clocks, a slow host): its gen takes
    about twice the others', and they wait for it in update_actor."""
    v["=ranks"][2]["gen"] *= uniform(rng, 1.9, 2.1)


_RANKS = "per-rank phase durations exist only in this file's runs (4 ranks); the single-process demo " \
         "has one rank (the gloo test, tests/integration/test_straggler_gloo.py, is its end-to-end proof)"

PATHOLOGIES: dict[str, Pathology] = {
    "RLRunStalled": from_entry("stall", {"30s": 93, "2m": 32, "10m": 21}, note="step-times after the last step"),
    # the demo's crash-loop: from the onset every process resumes at the checkpoint before it.
    # A step window must hold 3 restarts and no new highest step for the whole `for:`; a window
    # holding about 3 (5 min at 30 s steps, 20 min at 2 min) flips between 2 and 3, so the next,
    # 4x longer one decides: its length past the first loop, then 10 min.
    "RLRestartWithoutProgress": Pathology(
        assign(rl_training_step=lambda v, i, r: ONSET + i % CRASH_EVERY), {"30s": 80, "2m": 64, "10m": 48},
        loop=True, note="step-times since the loop began (a crash every 4 steps; the window that "
                        "holds 3 restarts for good, then for 10 min)",
        why="the demo's crash-loop restarts whole processes (a new exporter each time); this run "
            "loops the logged step of one series, as a scrape of those processes shows it"),
    "RLExporterDown": from_entry("crash", {"30s": 15, "2m": 6, "10m": 4},
                                 note="step-times after the target went down"),
    "RLNonFiniteLoss": from_entry("nan-loss", {"30s": 17, "2m": 7, "10m": 13}),
    "RLOptimizerNonFiniteSkips": from_entry("nan-loss", {"30s": 10, "2m": 8, "10m": 8}),
    "RLNonFiniteGradSkipped": from_entry("nan-loss", {"30s": 8, "2m": 7, "10m": 7}),
    "RLRewardCollapse": from_entry("no-signal", {"30s": 10, "2m": 9, "10m": 7}),
    # a slow slide, under 1 % of the level a step: the step-to-step baseline follows it down
    "RLRewardDeclining": Pathology(assign(rl_reward=lambda v, i, r: v["rl_reward"] * max(0.3, 1 - 0.008 * i),
                                        rl_score=lambda v, i, r: v["rl_score"] * max(0.3, 1 - 0.008 * i)),
                                   {"30s": 66, "2m": 63, "10m": 62},
                                   why="the demo's reward-decline entry slides from the demo's own level "
                                       "(0.4); this run's healthy reward is 0.53-0.87, so the row slides "
                                       "that level by the same rate"),
    "RLEntropyCollapse": from_entry("entropy-collapse", {"30s": 12, "2m": 12, "10m": 10}),
    "RLPolicyKLSpike": from_entry("kl-spike", {"30s": 11, "2m": 10, "10m": 8}),
    "RLReferenceKLRunaway": from_entry("reference-kl-runaway", {"30s": 10, "2m": 9, "10m": 8}),
    # the heavy tail (kl_max ~100x kl_mean on a healthy step) jumps another ~15x
    "RLKLSingleTokenDominates": Pathology(assign(kl_max=lambda v, i, r: v["rl_reference_kl"] * uniform(r, 1500, 2500),
                                               rl_grad_norm=lambda v, i, r: uniform(r, 8, 12)),
                                          {"30s": 5, "2m": 4, "10m": 4},
                                          why="the demo's entry sets its own low KL baseline and a 5x grad-norm "
                                              "jump (an absolute one would also fire RLGradNormExplosion there); "
                                              "on this run's heavy-tailed KL it fires after 6-7 steps, budget 4-5"),
    "RLClipFractionHigh": from_entry("kl-spike", {"30s": 13, "2m": 12, "10m": 11}),
    "RLClipFractionNonZeroOnPolicy": from_entry("on-policy-clip", {"30s": 5, "2m": 4, "10m": 4}),
    "RLGradNormExplosion": from_entry("grad-explosion", {"30s": 11, "2m": 10, "10m": 8}),
    "RLGradNormZero": from_entry("no-signal", {"30s": 15, "2m": 13, "10m": 12}),
    "RLGradNormVanishing": from_entry("grad-vanishing", {"30s": 17, "2m": 16, "10m": 13}),
    "RLOptimizerStepsDiverge": from_entry("optimizer-diverge", {"30s": 5, "2m": 4, "10m": 4}),
    "RLValueClipFractionHigh": from_entry("value-clip", {"30s": 13, "2m": 12, "10m": 11}),
    "RLTrainInferenceNonFinite": from_entry("nonfinite-logprob", {"30s": 17, "2m": 16, "10m": 13}),
    "RLLearningRateZero": from_entry("lr-zero", {"30s": 17, "2m": 16, "10m": 13}),
    "RLNoInformativeGroups": from_entry("no-signal", {"30s": 16, "2m": 15, "10m": 12}),
    "RLResponseTruncationHigh": from_entry("length-truncation", {"30s": 10, "2m": 10, "10m": 8}),
    # answers grow 4 % a step into a 4,096-token limit, a third of them cut, the reward flat
    "RLResponseLengthRunaway": Pathology(
        assign(rl_response_length_tokens=lambda v, i, r: v["rl_response_length_tokens"] * (1 + 0.04 * i),
             rl_response_truncated_ratio=lambda v, i, r: uniform(r, 0.25, 0.45),
             rl_reward=lambda v, i, r: uniform(r, 0.55, 0.65), rl_score=lambda v, i, r: uniform(r, 0.55, 0.65),
             **{'rl_config_value{parameter="max_response_length"}': 4096}),
        {"30s": 36, "2m": 40, "10m": 37},
        why="the demo's length-runaway entry grows into the demo's 1,024-token limit from its ~340 "
            "tokens; this run's healthy lengths (396-787) need a longer limit to double under it"),
    "RLLengthFallingRewardRising": from_entry("reward-hacking", {"30s": 8, "2m": 7, "10m": 6}),
    "RLValidationRegressing": from_entry("validation-regression", {"30s": 56, "2m": 55, "10m": 55}),
    "RLCriticNotLearning": from_entry("critic-not-learning", {"30s": 17, "2m": 16, "10m": 13}),
    "RLPreferenceOverfit": from_entry("dpo-overfit", {"30s": 17, "2m": 16, "10m": 13}),
    "RLRewardModelMarginCollapse": from_entry("rm-margin-collapse", {"30s": 16, "2m": 15, "10m": 12}),
    "RLTrainInferenceMismatchRising": from_entry("train-infer-mismatch", {"30s": 8, "2m": 7, "10m": 7}),
    "RLSampleStalenessHigh": from_entry("async-staleness", {"30s": 11, "2m": 11, "10m": 8}),
    "RLMoEExpertImbalance": Pathology(
        assign(layer2=lambda v, i, r: uniform(r, 5.5, 6.5)), {"30s": 8, "2m": 8, "10m": 7},
        why="this run's MoE has 4 layers at 2.2-3.8 (64-128 experts); the demo's entry edits its layer 12"),
    "RLThroughputDrop": Pathology(
        assign(rl_gpu_throughput_tokens_per_second=lambda v, i, r: uniform(r, 250, 350)), {"30s": 12, "2m": 12, "10m": 11},
        why="the demo's entry derives tokens/s from phase timings and step tokens, which this run does not log"),
    "RLGPUMemoryNearFull": from_entry("gpu-memory-full", {"30s": 5, "2m": 4, "10m": 4}),
    "RLGPUThrottling": Pathology(
        assign(thermal=lambda v, i, r: uniform(r, 0.4, 0.6)), {"30s": 25, "2m": 8, "10m": 4},
        why="the thermal clock-event reason is NVML's: a side series in the demo, not an edit of its frames"),
    "RLMultiTurnRunaway": from_entry("multi-turn-runaway", {"30s": 5, "2m": 4, "10m": 4}),
    # Phases and rollout engines: engine series and NVML time are wall-clock windows (10 min,
    # abort window 30 min) and `for:` 2-15 min, so at short steps they take more steps to fire.
    "RLPhaseHung": Pathology(_hung_gen, {"30s": 30, "2m": 9, "10m": 6}, stop=True,
                             note="step-times since the hung step began (a floor of 10 min + for 2 min)",
                             why=_PHASES),
    "RLRolloutGPUIdle": Pathology(_idle_rollout, {"30s": 32, "2m": 12, "10m": 3},
                                  note="steps; wall clock: 10 min window + for 10 min", why=_PHASES),
    "RLRolloutAbortsHigh": Pathology(_aborts, {"30s": 34, "2m": 14, "10m": 5},
                                     note="steps; wall clock: 30 min window + for 5 min", why=_ENGINE),
    "RLRolloutKVCacheThrash": Pathology(_kv_thrash, {"30s": 34, "2m": 13, "10m": 5},
                                        note="steps; wall clock: 10 min window + for 10 min", why=_ENGINE),
    "RLRolloutLongTail": Pathology(_long_tail, {"30s": 33, "2m": 13, "10m": 5},
                                   note="steps; wall clock: 10 min window + for 15 min", why=_ENGINE),
    # the ladder's window must hold only slow steps: 5 steps or more, as many as its tier holds
    "RLRankStraggler": Pathology(_slow_rank, {"30s": 14, "2m": 14, "10m": 12}, why=_RANKS),
    "RLRolloutEngineDown": Pathology(_engine_down, {"30s": 14, "2m": 6, "10m": 4}, stop=True,
                                     note="step-times since the engine went down (for 5 min)", why=_ENGINE),
}




# ------------------------------------------------------------------ promtool files
def _dur(seconds: float) -> str:
    from .render import duration
    return duration(seconds)


def alert_names(severities=("critical", "warning")) -> list[str]:
    return [a.name for a in ALERTS if a.severity in severities]


def _measure_expr(alert: str, run: Run, pat: Pathology, end: str, res: str) -> str:
    fired = f'max by (run) (ALERTS{{alertname="{alert}", alertstate="firing", run="{alert}"}})'
    if pat.timed:
        t0 = run.ends[ONSET - 2]
        return f"ceil((min_over_time(timestamp({fired})[{end}:{res}]) - {t0:g}) / {run.step_s})"
    return (f'min_over_time((max by (run) (rl_training_step{{run="{alert}"}}) and on (run) {fired})'
            f"[{end}:{res}]) - {ONSET - 1}")


def _reads(alert: str) -> set[str]:
    """Series names a pathology run keeps: what the alert reads, and ALWAYS."""
    rule = next(a for a in ALERTS if a.name == alert)
    engine_up = {ENGINE_UP} if "{engine_job_selector}" in rule.expr else set()
    return set(alert_metrics(rule)) | ALWAYS | engine_up


def measured() -> dict:
    return json.loads(MEASURED_FILE.read_text()) if MEASURED_FILE.exists() else {}


def render_cadence(cadence: str, got: dict | None = None) -> str:
    step_s = CADENCES[cadence]
    got = measured() if got is None else got
    h = Run(step_s).build()
    end = _dur(h.n * h.dt)
    res = _dur(h.dt)
    healthy_test = {
        "name": f"cadence {cadence}: a healthy run of {HEALTHY_STEPS} steps fires nothing",
        "interval": res, "input_series": h.input_series("healthy"),
        "promql_expr_test": [{
            "expr": f'max by (alertname) (max_over_time(ALERTS{{alertstate="firing"}}[{end}]))',
            "eval_time": end, "exp_samples": []}]}
    # The pathology runs side by side in one group (run labels keep them apart; every rule
    # aggregates by run): promtool evaluates the whole rule file at each tick of each group, so
    # one group costs a fraction of one group per alert.
    runs = {name: Run(step_s, PATHOLOGIES[name], steps=ONSET + PATHOLOGIES[name].budget[cadence] + 4).build()
            for name in alert_names()}
    last = max(r.n * r.dt for r in runs.values())
    pend = _dur(last)
    series, checks = [], []
    for name, run in runs.items():
        value = got.get(cadence, {}).get(name, -1)
        reads = _reads(name)
        series += run.input_series(name, reads)
        checks.append({"expr": _measure_expr(name, run, PATHOLOGIES[name], pend, res), "eval_time": pend,
                       "exp_samples": [{"labels": f'{{run="{name}"}}', "value": value}]})
    tests = [healthy_test,
             {"name": f"cadence {cadence}: each pathology fires its alert within its budget of steps",
              "interval": res, "input_series": series, "promql_expr_test": checks}]
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": _dur(step_s),
           "tests": tests}
    return yaml_text(doc).replace("# Generated by `python -m exporter.alerts render` from exporter/alerts/.",
                                  "# Generated by `python -m exporter.alerts test-file` from exporter/alerts/cadence.py.")


def render_long_healthy(cadence: str, steps: int = 1000, seed: int = 11) -> str:
    """One healthy run of `steps` steps (not in CI: about 5x the matrix's healthy group)."""
    h = Run(CADENCES[cadence], steps=steps, seed=seed, span=steps).build()
    end = _dur(h.n * h.dt)
    doc = {"rule_files": [RULES_FROM_TESTS], "evaluation_interval": _dur(h.step_s),
           "tests": [{"name": f"long healthy run: {steps} steps at {cadence}", "interval": _dur(h.dt),
                      "input_series": h.input_series("healthy"),
                      "promql_expr_test": [{
                          "expr": f'max by (alertname) (max_over_time(ALERTS{{alertstate="firing"}}[{end}]))',
                          "eval_time": end, "exp_samples": []}]}]}
    return yaml_text(doc)


def _scratch(tmp: Path) -> Path:
    """A tests folder under tmp where the files' `rule_files` path (RULES_FROM_TESTS)
    finds a copy of the shipped rules, as it does from exporter/alerts/tests/ in the repository."""
    rules = tmp / "rules"
    rules.mkdir(parents=True)
    (rules / shipped.RULES_FILE.name).write_text(shipped.RULES_FILE.read_text())
    tests = tmp / "alerts" / "tests"
    tests.mkdir(parents=True)
    return tests


def run_long(steps: int, promtool: str = "promtool") -> int:
    import tempfile
    import time
    bad = 0
    for cadence in CADENCES:
        with tempfile.TemporaryDirectory() as tmp:
            f = _scratch(Path(tmp)) / "long.yaml"
            f.write_text(render_long_healthy(cadence, steps))
            t0 = time.monotonic()
            p = subprocess.run([promtool, "test", "rules", str(f)], capture_output=True, text=True)
            fired = sorted(set(re.findall(r'alertname="(\w+)"', p.stdout + p.stderr)))
            print(f"{cadence}: {steps} healthy steps, alerts fired: {fired or 'none'} "
                  f"({time.monotonic() - t0:.0f} s)")
            bad += p.returncode != 0
    return 1 if bad else 0


def cadence_file(cadence: str) -> Path:
    return HERE / "tests" / f"cadence-{cadence}.test.yaml"


def measure(promtool: str = "promtool") -> dict:
    """Run each cadence file with placeholder expectations and read the steps-to-fire promtool
    reports (and the alerts a healthy run fires, which must be none)."""
    import tempfile
    out: dict = {}
    for cadence in CADENCES:
        with tempfile.TemporaryDirectory() as tmp:
            f = _scratch(Path(tmp)) / f"cadence-{cadence}.test.yaml"
            f.write_text(render_cadence(cadence, {cadence: {n: -1 for n in alert_names()}}))
            p = subprocess.run([promtool, "test", "rules", str(f)], capture_output=True, text=True)
            text = p.stdout + p.stderr
            if "no file match pattern" in text:  # every alert would read as "never fired"
                raise RuntimeError(f"promtool found no rule file for {f}:\n{text[:500]}")
        res = {}
        for m in re.finditer(r'exp: \{run="(\w+)"\} \S+\s+got: (nil|\{run="\w+"\} (\S+))', text):
            res[m.group(1)] = None if m.group(2) == "nil" else int(round(float(m.group(3))))
        m = re.search(r"exp: nil\s+got: (.*?)\n\s*\n", text, re.S)
        res["_healthy_fired"] = sorted(set(re.findall(r'alertname="(\w+)"', m.group(1)))) if m else []
        out[cadence] = res
    return out


def problems() -> list[str]:
    """Measured steps within budget; every warning/critical alert has a pathology."""
    out = []
    got = measured()
    for name in alert_names():
        if name not in PATHOLOGIES:
            out.append(f"{name}: no Pathology in exporter/alerts/cadence.py (the cadence matrix needs one)")
            continue
        for cadence in CADENCES:
            v = got.get(cadence, {}).get(name)
            b = PATHOLOGIES[name].budget[cadence]
            if v is None or v < 1 or v > b:
                out.append(f"{name} at {cadence}: fires after {v} steps, budget {b} "
                           "(run `python -m exporter.alerts cadence --measure`)")
    for name in PATHOLOGIES:
        if name not in alert_names():
            out.append(f"{name}: pathology for an unknown or info alert")
    return out


def table() -> str:
    got = measured()
    rows = ["| Alert | Severity | " + " | ".join(f"{c} steps: fires after (budget)" for c in CADENCES) + " |",
            "|---|---|" + "---|" * len(CADENCES)]
    sev = {a.name: a.severity for a in ALERTS}
    for name in alert_names():
        pat = PATHOLOGIES.get(name)
        unit = " step-times" if pat and pat.timed else ""
        cells = [f"{got.get(c, {}).get(name, '?')} ({pat.budget[c] if pat else '?'}){unit}" for c in CADENCES]
        rows.append(f"| {name} | {sev[name]} | " + " | ".join(cells) + " |")
    notes = [f"- {name}: {PATHOLOGIES[name].note}" for name in alert_names()
             if name in PATHOLOGIES and PATHOLOGIES[name].note]
    return "\n".join(rows + ([""] + notes if notes else []))
