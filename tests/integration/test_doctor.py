"""`rl-exporter doctor` and `backfill` end to end, with the real engine (promtool, Prometheus).

Each demo scenario is written to a spool by `rl-exporter demo --spool` (steps microseconds
apart: the backfill takes time from the run's own `timing_s/step`, ~77 s a step), and doctor
must name exactly that scenario's alerts (exporter/alerts/scenarios.py). CI runs a representative
subset (SCENARIOS); RLX_DOCTOR_ALL=1 runs every scenario whose alerts read the trainer's
frames (GPU and run-configuration side series are not in a trainer's log).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.alerts.scenarios import EXPECTED

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
STEPS, ONSET = 120, 60                     # an hour and a quarter of healthy baseline
SCENARIOS = ["healthy", "kl-spike", "nan-loss", "stall", "crash-loop"]  # crash-loop: across segments
# series written by the demo straight into the store (NVML sampler, run configuration):
# a trainer's log never has them, so these scenarios cannot be diagnosed from one
SIDE_SERIES_ONLY = {"gpu-memory-full", "gpu-throttle", "on-policy-clip",
                    "crash",         # its dead target (RLExporterDown) is in no log
                    "never-served",  # no demo process at all
                    "hang"}  # hang: a live timer() stuck open (the demo never exits)
UNTIL = {"stall": "+1h"}                   # the hung trainer's exporter kept serving an hour

needs_engine = pytest.mark.skipif(
    not (shutil.which("prometheus") and shutil.which("promtool")),
    reason="needs Debian prometheus (promtool ships with it): apt install prometheus")


def cli(*args, check=True, env=None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    p = subprocess.run([sys.executable, "-m", "exporter.cli", *args], cwd=REPO, env=e,
                       capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, f"{args}: exit {p.returncode}\n{p.stderr[-3000:]}"
    return p


def spool(tmp: Path, scenario: str) -> Path:
    path = tmp / f"{scenario}.jsonl"
    cli("demo", "--scenario", scenario, "--steps", str(STEPS), "--onset", str(ONSET),
        "--interval", "0", "--port", "0", "--exit-after", "--spool", str(path))
    assert sum(1 for _ in path.open()) >= (ONSET - 1 if scenario == "stall" else STEPS)
    return path


def doctor_json(*args) -> list[dict]:
    p = cli("doctor", *args, "--json")
    return [json.loads(line) for line in p.stdout.splitlines()]


def all_scenarios():
    if os.environ.get("RLX_DOCTOR_ALL") == "1":
        return sorted(s for s in EXPECTED if s not in SIDE_SERIES_ONLY)
    return SCENARIOS


@needs_engine
@pytest.mark.parametrize("scenario", all_scenarios())
def test_doctor_names_exactly_the_scenarios_alerts(tmp_path, scenario):
    path = spool(tmp_path, scenario)
    extra = ["--until", UNTIL[scenario]] if scenario in UNTIL else []
    if scenario == "healthy":
        extra += ["--keep", str(tmp_path / "kept")]
    rows = doctor_json(str(path), *extra)
    if scenario == "healthy":
        check_dashboards(tmp_path, path, tmp_path / "kept")
    want = set(EXPECTED[scenario])
    if not want:
        assert len(rows) == 1 and rows[0]["alert"] is None, rows
        assert len(rows[0]["checks"]) >= 10, rows[0]  # the checks that had data are named
        return
    got = {r["alert"] for r in rows}
    from exporter.demo.pathologies import BY_NAME
    may = set(BY_NAME[scenario].may) if scenario in BY_NAME else set()  # pace-dependent extras
    assert want <= got <= want | may, (scenario, got, want, may)
    for r in rows:
        assert set(r) >= {"alert", "severity", "step", "time", "value", "summary", "next"}
        assert r["severity"] in ("critical", "warning", "info")
        assert r["summary"] and r["next"], r
        assert isinstance(r["step"], int) and (scenario == "stall" or r["step"] >= ONSET), r


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


@needs_engine
def test_doctor_text_timeline_and_html_report(tmp_path):
    """The human output: header, the timeline's columns, the runbook's next check, a report."""
    pytest.importorskip("matplotlib")
    path = spool(tmp_path, "grad-explosion")
    out = tmp_path / "report.html"
    p = cli("doctor", str(path), "--html", str(out))
    lines = p.stdout.splitlines()
    assert lines[0].startswith("rl-exporter doctor: run demo-grad-explosion")
    # one sentence about the clock: the demo spool was written by a replay, and says which sample
    clock = lines[1].strip()
    assert clock.startswith("Times come from the run's step durations") and clock.endswith(".")
    assert "replay" in clock and "first 64 frames" in clock
    # the checks in one count line, no lists of names; the verdict before the timeline
    assert "checks (" in lines[2] and "had data" in lines[2] and "no data for" not in p.stdout
    verdict = next(x for x in lines if x.startswith("verdict: "))
    assert "warning" in verdict and "healthy" not in verdict
    row = next(x for x in lines if "RLGradNormExplosion" in x and x.strip()[:1].isdigit())
    assert "critical" in row or "warning" in row
    assert int(row.split()[0]) >= ONSET  # the step it fired at
    assert any(x.strip().startswith("check next:") for x in lines)
    # the runbook's first checks answered from the log: the loss it names, what moved first
    assert any(x.strip().startswith("evidence: `rl_policy_loss`") for x in lines), p.stdout
    assert any("which metric moved first" in x and "gradient norm (`rl_grad_norm`)" in x
               for x in lines), p.stdout
    verbose = cli("doctor", str(path), "--verbose").stdout
    assert "no data for: " in verbose and "judged: " in verbose
    check_html(out, "RLGradNormExplosion")


def check_html(out: Path, alert: str = "RLOptimizerNonFiniteSkips") -> None:
    from html.parser import HTMLParser

    class Check(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.imgs, self.text = [], [], []

        def handle_starttag(self, tag, attrs):
            if tag == "img":
                self.imgs.append(dict(attrs))
            elif tag not in ("meta", "br"):
                self.stack.append(tag)

        def handle_startendtag(self, tag, attrs):
            if tag == "img":
                self.imgs.append(dict(attrs))

        def handle_endtag(self, tag):
            assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
            self.stack.pop()

        def handle_data(self, data):
            self.text.append(data)

    doc = out.read_text()
    assert doc.startswith("<!DOCTYPE html>")
    c = Check()
    c.feed(doc)
    c.close()
    assert c.stack == [], c.stack
    assert len(c.imgs) >= 5
    import base64
    for img in c.imgs:
        assert img["src"].startswith("data:image/png;base64,")
        png = base64.b64decode(img["src"].split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    text = " ".join(c.text)
    assert "What to check next" in text and alert in text
    assert "http" not in doc.split("<body>", 1)[1].replace("https://github.com", "")  # no fetches


def check_dashboards(tmp_path: Path, path: Path, keep: Path) -> None:
    """backfill --out DIR, and the TSDB doctor --keep left (recording rules included), each
    under a Prometheus: every dashboard query whose metrics the log has returns data over the
    run, and both hold the same series."""
    from exporter.dashboards import DASHBOARDS
    from exporter.postmortem.tools import Prometheus
    s = json.loads(cli("backfill", str(path), "--run", "demo-healthy", "--out",
                       str(tmp_path / "bf"), "--json").stdout)
    # the 120 records and the spool's finished event (a record of its own: exporter/spool.py)
    assert s["frames"] == STEPS + 1 and s["series"] > 40 and s["blocks"] >= 1
    assert s["clock"] == "steps", s  # the demo's spool stamps are not training time
    from exporter.postmortem.backfill import parse_time
    start, end = parse_time(s["start"]), parse_time(s["end"])
    assert 60 * STEPS < end - start < 200 * STEPS  # ~77 s a step
    vars_ = {"job": ".*", "namespace": ".*", "run": ".*", "__rate_interval": "2m",
             "__interval": "1m", "__range": "10m"}
    import re
    names = []
    for data_dir in (keep / "data", tmp_path / "bf"):
        checked, missing = 0, []
        with Prometheus(str(data_dir), str(tmp_path)) as prom:
            present = set(prom.api("/api/v1/label/__name__/values", {}, post=False))
            names.append(present)
            assert "run:rl_entropy:avg_recent" in present  # recording rules backfilled
            assert "run:rl_goodput:ratio_1h" in present  # the goodput panel's
            for d in DASHBOARDS:
                for panel, q in d.queries:
                    if panel.gate_of(q) or not set(q.metrics) <= present:
                        continue
                    expr = re.sub(r"\$\{(\w+)\}|\$(\w+)",
                                  lambda m: vars_[m.group(1) or m.group(2)], q.expr)
                    data = prom.api("/api/v1/query_range", {"query": expr, "start": start,
                                                            "end": end, "step": 300})
                    checked += 1
                    if not data["result"]:
                        missing.append(f"{d.uid} / {panel.title}: {q.expr}")
        assert checked >= 30, (data_dir, checked)
        assert not missing, "\n".join(missing)
    assert names[0] == names[1]  # doctor --keep holds what backfill writes


# ---------------------------------------------------------------- every format, truncated logs
FORMAT_LOGS = {
    "verl_console": lambda s: (f"(TaskRunner pid=1) step:{s} - actor/entropy:{0.5 - s / 1000} - "
                               f"actor/pg_loss:np.float64(-0.01) - critic/score/mean:{0.3 + s / 500}"
                               f" - timing_s/step:60.5 - training/global_step:{s}\n"),
    "verl_jsonl": lambda s: json.dumps({"step": s, "data": {"actor/entropy": 0.5,
                                                            "critic/score/mean": 0.4}}) + "\n",
    "hf": lambda s: (f"{{'loss': {0.5 - s / 1000}, 'grad_norm': 0.2, 'learning_rate': 2e-05, "
                     f"'epoch': {s / 100}}}\n"),
    "openrlhf": lambda s: (f"Global step {s}: {{'policy_loss': -0.01, 'reward': {0.3 + s / 500}, "
                           f"'kl': 0.001}}\n"),
    "slime": lambda s: (f"[2026-08-21 17:{s // 60:02d}:{s % 60:02d}] model.py:918 - step {s}: "
                        f"{{'train/loss': -0.003, 'train/entropy_loss': 0.5, 'train/step': {s}}}\n"),
    "miles": lambda s: (f"[2026-08-21 18:{s // 60:02d}:{s % 60:02d}.123 actor_cell0_rank0] "
                        f"log_utils.py:542 - step {s}: {{'train/loss': -0.003, 'train/step': {s}}}\n"),
    "areal": lambda s: ("(AReaL) 20260822-09:03:26.123 StatsLogger INFO: Epoch 1/3 Step "
                        f"{s}/100 Train step {s}/300 done.\n"
                        "╒═══════════════════════════════╤═════════════╕\n"
                        f"│ ppo_actor/update/actor_loss/avg │ {-0.004 - s / 1e4:.4e} │\n"
                        "╘═══════════════════════════════╧═════════════╛\n"),
}


@needs_engine
@pytest.mark.parametrize("fmt", sorted(FORMAT_LOGS) + ["hf_state"])
def test_backfill_completes_on_every_format_cut_mid_line(tmp_path, fmt):
    if fmt == "hf_state":
        log = tmp_path / "trainer_state.json"
        log.write_text(json.dumps({"global_step": 30, "log_history": [
            {"loss": 0.5 - s / 100, "grad_norm": 0.3, "learning_rate": 1e-5, "step": s}
            for s in range(1, 31)]}))
        frames = 30
    else:
        text = "".join(FORMAT_LOGS[fmt](s) for s in range(1, 31))
        cut = text.rstrip("\n")
        cut = cut[:len(cut) - 12]  # a crash cut the last record mid-line
        log = tmp_path / f"{fmt}.log"
        log.write_text(cut)
        frames = None
    p = cli("backfill", str(log), "--run", f"t-{fmt}", "--out", str(tmp_path / "out"), "--json")
    s = json.loads(p.stdout)
    assert s["logs"][0]["format"] == fmt
    assert s["frames"] >= (frames or 29), s
    assert s["series"] >= 3 and s["samples"] > 0
    assert any(n.startswith("01") for n in os.listdir(tmp_path / "out"))
    if fmt in ("slime", "miles"):
        assert s["clock"] == "log" and s["start"].startswith("2026-08-21T1"), s


def test_missing_engine_is_a_clear_error_with_the_install_command(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(FORMAT_LOGS["verl_console"](1))
    for cmd in (["backfill", str(log), "--run", "x", "--out", str(tmp_path / "o")],
                ["doctor", str(log)]):
        p = cli(*cmd, check=False, env={"PATH": "/nonexistent"})
        assert p.returncode == 3, p
        assert "promtool" in p.stderr and "apt-get install prometheus" in p.stderr, p.stderr
        assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- real-trainer recordings
RECORDINGS_DIR = REPO / "tests" / "data" / "trl"   # spools recorded from real TRL runs
RECORDINGS = sorted(RECORDINGS_DIR.glob("*.spool")) if RECORDINGS_DIR.is_dir() else []


@needs_engine
@pytest.mark.skipif(not RECORDINGS, reason="no real-trainer spool recordings under tests/data/trl/")
@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: str(p.relative_to(RECORDINGS_DIR)))
def test_doctor_on_real_trainer_recordings(path):
    """Spools recorded from real trainer runs: doctor completes, every line is a finding or the
    healthy line; a sibling NAME.expected.json ({"alerts": [...]}) pins the alerts exactly."""
    want_file = path.with_suffix(".expected.json")
    # the recordings' own clock is the CPU's (0.1 s steps): replay them at a real cadence
    step_s = json.loads(want_file.read_text())["step_seconds"] if want_file.exists() else 60
    rows = doctor_json(str(path), "--clock", "fixed", "--step-seconds", str(step_s))
    assert rows
    for r in rows:
        if r["alert"] is None:
            assert len(rows) == 1 and r["checks"], r
        else:
            assert r["severity"] and r["summary"] and r["time"], r
    if want_file.exists():
        # the rules' confirmed findings; point findings (confirmed: false) are the single-step
        # observations the rules did not confirm (tests/integration/test_doctor_segments_points.py)
        want = set(json.loads(want_file.read_text())["alerts"])
        assert {r["alert"] for r in rows if r.get("confirmed", True)} - {None} == want


@needs_engine
def test_a_short_excerpt_says_which_rules_it_is_too_short_for():
    """A log of a few steps (a paste in an issue thread) cannot feed the step-windowed rules:
    doctor says so as its verdict, instead of 'healthy'; a 300-step run has nothing above info."""
    short = doctor_json(str(REPO / "tests/data/real/verl/verldata_qwen05b_resp256_first_records.log"),
                        "--clock", "fixed", "--step-seconds", "60")
    assert short[-1]["alert"] is None and short[-1]["steps"] <= 5
    assert {"RLEntropyCollapse", "RLRewardCollapse"} <= set(short[-1]["too_few_steps"])
    # the verdict says it is too short, never healthy, and lists what the log showed
    assert short[-1]["verdict"] == "too_short" and short[-1]["healthy"] is False
    assert "too short to judge" in short[-1]["summary"] and "healthy" not in short[-1]["summary"]
    assert short[-1]["seen"]["rl_score"]["steps"] == short[-1]["steps"]
    # a short excerpt whose numbers show a failure is not healthy: point findings say it
    flat = doctor_json(str(REPO / "tests/data/real/verl/play_verl_grpo_steps_1_4.log"),
                       "--clock", "fixed", "--step-seconds", "60")
    assert {r["alert"] for r in flat} == {"RLPointGradNormZero", "RLPointNoRewardVariance"}
    assert all(r["confirmed"] is False for r in flat)
    # a 300-step healthy run: nothing above info (its KL touches 1.37 on one step of 300: seen,
    # not confirmed, since the rule needs it on every step of a window)
    long = doctor_json(str(RECORDINGS_DIR / "healthy.spool"), "--clock", "fixed", "--step-seconds", "60")
    assert {(r["alert"], r["severity"], r["confirmed"]) for r in long} == \
        {("RLPointReferenceKLHigh", "info", False)}


@needs_engine
def test_doctor_says_which_rules_its_query_time_went_to(tmp_path):
    """Each rule whose range queries ran has its query time, summed over its pieces: what
    benchmarks/bench_doctor.py names as the slowest rules."""
    from exporter.postmortem.doctor import doctor
    out = doctor([str(spool(tmp_path, "grad-explosion"))], progress=False)
    ev = out.evaluation
    took = ev.query_seconds
    names = {a.name for a in out.ruleset.alerts} | {r.record for r in out.ruleset.recording}
    assert took and set(took) <= names, sorted(set(took) - names)
    assert set(ev.recorded) <= set(took)       # every recording that wrote series was queried
    assert "RLGradNormExplosion" in took      # the alert that fired was queried
    assert not set(took) & set(ev.no_data)     # no query for a rule with no data in the log
    assert all(s > 0 for s in took.values())
