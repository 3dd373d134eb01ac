"""What doctor and backfill evaluate and how, no engine needed: which rules can have data, the
rule stages around the alerts, range queries cut into pieces, Prometheus's alert states, the
scratch directories and the atomic --out, the progress lines."""
from __future__ import annotations

import io
import json
import os
import signal

import pytest

from exporter.postmortem import backfill as bf
from exporter.postmortem import evaluate, rules, tools
from exporter.postmortem.progress import Phases, Progress


def test_a_rule_is_skipped_only_when_its_result_is_empty_for_certain():
    have = {"rl_entropy", "run:rl_training_step:changes_w1"}
    ladder = ("(\n  (avg by (run) (avg_over_time(rl_kl[5m])))\n  and on (run) "
              "(run:rl_training_step:changes_w1 >= 5)\nor\n  (avg by (run) (rl_kl))\n"
              "  and on (run) (run:rl_training_step:changes_w1 >= 5)\n)\n"
              "and on (run) run:rl_step_window:baseline_steps")
    assert not rules.may_have_data(ladder, have)                    # `and`: its left side
    assert rules.may_have_data(ladder.replace("rl_kl", "rl_entropy"), have)
    assert rules.may_have_data("rl_kl or rl_entropy", have)          # `or`: either side
    assert not rules.may_have_data("rl_kl unless rl_entropy", have)
    assert rules.may_have_data("rl_entropy unless rl_kl", have)
    assert not rules.may_have_data("time() - max by (run) (rl_kl) > 60", have)
    assert rules.may_have_data("sum(rl_kl) or vector(0)", have)      # makes its own
    assert rules.may_have_data("absent(rl_kl)", have)
    assert rules.may_have_data("1", set())                           # reads nothing
    assert rules.may_have_data('rl_entropy{x="a or b"} and rl_kl', have)  # a string, not `or`
    assert not rules.may_have_data("(rl_kl) + (rl_kl2)", have)


def test_rules_reading_alerts_come_after_them_and_doctor_needs_only_what_alerts_read():
    rs = rules.load(None)
    post = rules.after_alerts(rs.recording)
    assert "run_severity:alerts_firing:count" in post and "run:rl_run_state:code" in post
    assert not any(rules.reads(a.expr) & post for a in rs.alerts)
    need = rules.read_by_alerts(rs)
    assert "run:rl_training_step:changes_w1" in need          # through the ladders
    assert "run:rl_goodput:ratio_1h" not in need              # a dashboard's only


def test_range_queries_are_cut_into_pieces_on_the_grid():
    whole = [0 + 60 * k for k in range(12881)]
    for nworkers in (1, 2, 4):
        pieces = evaluate._pieces(0.0, 60.0 * 12880, 60.0, nworkers)
        got = []
        for a, b in pieces:
            assert (b - a) / 60 + 1 <= evaluate.MAX_POINTS
            got += [a + 60 * k for k in range(int((b - a) / 60) + 1)]
        assert got == whole, nworkers
        assert len(pieces) == (2 if nworkers == 1 else 2 * nworkers)
    assert evaluate._pieces(0.0, 600.0, 60.0, 2) == [(0.0, 600.0)]   # short: one query


def test_alert_states_are_prometheus_s():
    tl = evaluate.alert_timeline([(t, 2.0) for t in (0, 60, 120, 180)], 60, 120)
    assert [(t, f, at) for t, f, at, _ in tl] == [(0, False, 0), (60, False, 0),
                                                 (120, True, 0), (180, True, 0)]
    # absent at one evaluation: pending is dropped, a new one starts where it comes back
    tl = evaluate.alert_timeline([(t, 1.0) for t in (0, 60, 180, 240)], 60, 60)
    assert [(t, f, at) for t, f, at, _ in tl] == [(0, False, 0), (60, True, 0),
                                                 (180, False, 180), (240, True, 180)]
    # keep_firing_for: held firing (with the last value) after the series goes, up to `end`
    tl = evaluate.alert_timeline([(0, 1.0), (60, 3.0)], 60, 0, keep_firing_s=120, end=600)
    assert [(t, f, v) for t, f, _, v in tl] == [(0, True, 1.0), (60, True, 3.0),
                                               (120, True, 3.0), (180, True, 3.0)]
    tl = evaluate.alert_timeline([(0, 1.0), (60, 3.0)], 60, 0, keep_firing_s=600, end=150)
    assert tl[-1][0] == 120


def test_scratch_directories_go_on_every_way_out(tmp_path):
    with tools.scratch("rlx-t-", dir=str(tmp_path)) as d:
        assert os.path.isdir(d)
    assert not os.listdir(tmp_path)
    with pytest.raises(RuntimeError):
        with tools.scratch("rlx-t-", dir=str(tmp_path)):
            raise RuntimeError
    assert not os.listdir(tmp_path)
    kept = tmp_path / "kept"
    with tools.scratch("rlx-t-", keep=str(kept)) as d:
        assert d == str(kept)
    assert kept.is_dir()


def test_a_signal_waits_for_a_deferred_section():
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    tools.stop_cleanly_on_sigterm()
    try:
        done = []
        with pytest.raises(KeyboardInterrupt):
            with tools.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # the handler runs here, between bytecodes
                    pass
                done.append(1)  # not cut off
        assert done == [1]
        with pytest.raises(SystemExit) as e:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
        assert e.value.code == 128 + signal.SIGTERM
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _block(d, name, run=None):
    os.makedirs(os.path.join(d, name))
    meta = {"ulid": name, "minTime": 0, "maxTime": 1, "version": 1}
    if run:
        meta[bf.TAG] = {"run": run}
    with open(os.path.join(d, name, "meta.json"), "w") as f:
        json.dump(meta, f)


def test_publish_is_all_or_nothing_and_never_doubles_a_run(tmp_path):
    work = tmp_path / ".rlx-backfill-x"
    data = work / "data"
    for n in ("01A", "01B"):
        _block(str(data), n)
    os.makedirs(data / "wal")  # Prometheus's own files stay behind
    out = tmp_path / "out"
    got = bf.publish(str(data), str(out), "r1")
    assert sorted(os.listdir(out)) == ["01A", "01B"] and len(got) == 2
    assert bf.blocks_of(str(out), "r1") == [str(out / "01A"), str(out / "01B")]
    with pytest.raises(bf.OutputError, match="--replace"):
        bf.check_out(str(out), "r1", replace=False)
    bf.check_out(str(out), "r2", replace=False)  # another run beside it is fine
    _block(str(data), "01C")
    bf.publish(str(data), str(out), "r1", replace=True)
    assert sorted(os.listdir(out)) == ["01C"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(bf.OutputError, match="not a directory"):
        bf.check_out(str(tmp_path / "file"), "r1", replace=False)


def test_progress_lines_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        phases = Phases(stream=stream)
        with phases("parsing the log", 2 ** 21, "MiB") as bar:
            bar.update(2 ** 20)
        with phases("recording rules", None, "queries") as bar:
            bar.advance(3)
    assert pipe.getvalue() == ""
    lines = tty.getvalue().replace("\x1b[K", "").replace("\r", "\n").splitlines()
    done = [line for line in lines if line.endswith("done")]
    assert done[0].startswith("parsing the log [####") and "2/2 MiB" in done[0]
    assert done[1].startswith("recording rules ... 3 queries")
    assert Progress(10, "x", stream=tty, enabled=False).enabled is False
