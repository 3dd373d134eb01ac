"""backfill's pieces, no engine needed: the same series as serve, clocks, timestamps,
OpenMetrics lines and 2 h block files, the alert state machine, the runbook reader."""
from __future__ import annotations

import json
import math
import os

import pytest

from exporter.postmortem import clock, logs, openmetrics, rules
from exporter.postmortem.backfill import parse_time
from exporter.postmortem.evaluate import firing_intervals
from exporter.postmortem.replay import Replay

VERL = [f"step:{s} - actor/entropy:{0.5 - s / 100} - actor/pg_loss:nan - critic/score/mean:0.4 - "
        f"timing_s/step:61.5 - timing_s/gen:40.1 - val-core/openai/gsm8k/acc/mean@1:0.3 - "
        f"my/custom_key:{s} - training/global_step:{s}" for s in range(1, 6)]


def _samples(lines: list[str]) -> dict:
    out = {}
    for line in lines:
        series, value = line.rsplit(" ", 1)
        out[series] = value
    return out


def test_replay_renders_exactly_the_series_serve_exports(tmp_path):
    """The last render of a replay equals a scrape of the sidecar (serve's Sidecar class)
    after the same log, except the sidecar's own per-source and host-sampler series."""
    from prometheus_client.openmetrics.exposition import generate_latest
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    from exporter.sidecar.sidecar import Sidecar
    from exporter.sidecar.source import SourceSpec
    log = tmp_path / "train.log"
    log.write_text("\n".join(VERL) + "\n")
    sc = Sidecar([SourceSpec(f"verl:{log}", "r1")], run="r1", port=None, gpu="off")
    try:
        while sc.poll_once():
            pass
        sc.finish()  # end of input: close the open record, as serve --exit-when-idle
        for ex in sc.runs.values():
            ex.flush()
        text = generate_latest(sc.registry).decode()
    finally:
        sc.close()
    served = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name.startswith("rl_exporter_source_") or s.name.startswith("rl_exporter_frame_processing"):
                continue
            served[openmetrics.series_text(s.name, s.labels)] = s.value
    st = logs.LogStats(str(log))
    rp = Replay("r1", "verl")
    try:
        for fr, _, fw in logs.frames(str(log), "verl_console", st):
            rp.apply(fr.data, fr.step, 1.7e9 + (fr.step or 0) * 60)
        mine = _samples(rp.render())
    finally:
        rp.close()
    skip = {"rl_training_step_timestamp_seconds", "rl_exporter_last_frame_timestamp_seconds",
            "rl_run_state_change_timestamp_seconds",  # a clock too: serve's vs the log's
            # wall time by bucket: serve's clock vs the log's (tests/unit/core/test_goodput.py)
            "rl_goodput_seconds_total"}
    assert {k for k in served if k.split("{")[0] not in skip} == \
        {k for k in mine if k.split("{")[0] not in skip}
    for k, v in served.items():
        if k.split("{")[0] in skip:
            continue
        got = float(mine[k])
        assert (math.isnan(v) and math.isnan(got)) or got == v, k
    # the replay stamps the log's time, not the wall clock
    assert float(mine['rl_training_step_timestamp_seconds{run="r1"}']) == 1.7e9 + 300
    assert 'rl_policy_loss{run="r1"}' in mine and mine['rl_policy_loss{run="r1"}'] == "NaN"


def test_line_time_reads_spool_logging_prefix_and_cri():
    assert logs.line_time('{"spool":1,"ts":1724312345.12,"step":1,"data":{}}', "spool") == 1724312345.12
    t = logs.line_time("[2026-08-21 17:14:19] model.py:918 - step 7: {}", "slime")
    assert t == parse_time("2026-08-21T17:14:19Z")
    t = logs.line_time("[2026-08-21 18:09:36.250 actor_cell0_rank0] log_utils.py:542 - step 7", "miles")
    assert t == parse_time("2026-08-21T18:09:36Z") + 0.25
    t = logs.line_time("2026-08-21T17:14:19.5+02:00 stdout F step:1 - a:1", "verl_console")
    assert t == parse_time("2026-08-21T15:14:19Z") + 0.5
    assert logs.line_time("step:1 - a:1", "verl_console") is None


def test_clock_choice():
    # the trainer's own stamps, a minute apart
    assert clock.choose("auto", [(100.0 + 60 * i, 60.0) for i in range(10)])[0] == "log"
    # a spool written by a replay: all frames within a second, steps of a minute -> durations
    kind, why = clock.choose("auto", [(100.0 + 0.01 * i, 60.0) for i in range(10)])
    assert kind == "steps" and "replay" in why
    assert clock.choose("auto", [(None, 60.0)] * 3)[0] == "steps"
    assert clock.choose("auto", [(None, None)] * 3)[0] == "fixed"
    assert clock.choose("log", [(None, 5.0)] * 3)[0] == "fixed"   # said, not silent
    assert clock.choose("fixed", [(1.0, 5.0), (2.0, 5.0)])[0] == "fixed"


def test_clock_steps_sum_durations_and_share_time_within_a_step():
    c = clock.Clock("steps", 1000.0, 30.0)
    assert c.at(None, 60.0, 1) == 1000.0
    assert c.at(None, 70.0, 2) == 1070.0
    assert c.at(None, None, 2) == pytest.approx(1070.001)   # slime: perf/rollout lines of step 2
    assert c.at(None, None, 3) == pytest.approx(1140.001)   # last known duration carries on
    f = clock.Clock("fixed", 0.0, 30.0)
    assert [f.at(None, 99.0, s) for s in (1, 2, 3)] == [0.0, 30.0, 60.0]
    lg = clock.Clock("log", 0.0, 30.0)
    assert lg.at(50.0, None, 1) == 50.0 and lg.at(40.0, None, 2) == pytest.approx(50.001)
    assert lg.adjusted == 1  # went backwards: moved forward, counted


def test_step_durations_resolve_through_the_catalog():
    d = clock.StepDurations()
    assert d.of({"timing_s/step": 61.5, "timing_s/gen": 40.0}, "verl") == 61.5
    assert d.of({"perf/step_time": 12.0}, "slime") == 12.0
    assert d.of({"timing_s/gen": 40.0}, "verl") is None     # a phase, not the step
    assert d.of({"timing_s/step": float("nan")}, "verl") is None


def test_openmetrics_lines_and_block_files(tmp_path):
    assert openmetrics.series_text("rl_x", {"run": 'a"b\\c\nd', "k": "v"}) == \
        'rl_x{k="v",run="a\\"b\\\\c\\nd"}'
    assert [openmetrics.value_text(v) for v in (math.nan, math.inf, -math.inf, 2)] == \
        ["NaN", "+Inf", "-Inf", "2.0"]
    closed = []
    bf = openmetrics.BlockFiles(str(tmp_path), on_close=closed.append)
    t0 = 7200 * 1000  # a block boundary, in seconds
    for t in (t0 - 60, t0 - 0.5, t0, t0 + 3600, t0 + 7200):
        bf.write(t, ['a{run="r"} 1.0', 'b{run="r"} NaN'])
    bf.close()
    assert len(closed) == 3 and bf.samples == 10
    first = open(closed[0]).read().splitlines()
    assert first[0] == f'a{{run="r"}} 1.0 {t0 - 60:.3f}' and first[-1] == "# EOF"


def test_firing_honours_for_and_gaps():
    pts = [(t, 1.0) for t in range(0, 600, 60)]            # active 0..540 every minute
    assert firing_intervals(pts, 60, 300) == [(300, 1.0, 540)]
    assert firing_intervals(pts, 60, 0) == [(0, 1.0, 540)]
    assert firing_intervals(pts, 60, 600) == []            # never active for 10 min
    gap = [(t, 2.0) for t in (0, 60, 120, 240, 300, 360, 420)]  # absent at 180: pending resets
    assert firing_intervals(gap, 60, 180) == [(420, 2.0, 420)]


def test_runbook_sections_by_anchor_with_any_fields(tmp_path):
    rb = tmp_path / "runbook.md"
    rb.write_text("# Runbook\n\n## RLFoo\n- **Meaning**: foo.\n- **Check next**: the bar,\n"
                  "  then the baz.\n- **Diagnosis**: not this one.\n\n## RLBar\n"
                  "- **Diagnosis** (seed 1): first x; next y.\n")
    sections = rules.runbook(str(rb))
    assert list(sections) == ["rlfoo", "rlbar"]  # the title (#) is no alert section
    assert rules.next_check(sections["rlfoo"]) == "the bar, then the baz."
    assert rules.next_check(sections["rlbar"]) == "first x; next y."
    assert rules.next_check(None) == ""


def test_shipped_rules_load_and_every_alert_has_a_runbook_section():
    rs = rules.load()
    assert rs.alerts and rs.recording
    rb = rules.runbook()
    assert all(a.anchor in rb for a in rs.alerts), [a.name for a in rs.alerts if a.anchor not in rb]
    assert all(rules.next_check(rb[a.anchor]) for a in rs.alerts)
    assert sum(len(layer) for layer in rules.layers(rs.recording)) == len(rs.recording)


def test_recording_layers_put_dependants_after():
    a = rules.Recording("a:x", "sum(x)", "g", None)
    b = rules.Recording("b:y", "a:x * 2", "g", None)
    c = rules.Recording("c:z", "b:y + a:x", "g", None)
    assert [[r.record for r in layer] for layer in rules.layers([c, b, a])] == \
        [["a:x"], ["b:y"], ["c:z"]]


def test_parse_time():
    assert parse_time("1700000000") == 1.7e9
    assert parse_time("2023-11-14T22:13:20Z") == 1.7e9
    assert parse_time("+30m", relative_to=100.0) == 1900.0
    assert parse_time("+90", relative_to=0.0) == 90.0


def test_spool_run_name_and_cut_log(tmp_path):
    from exporter.postmortem.doctor import _run_name
    p = tmp_path / "x.jsonl"
    recs = [json.dumps({"spool": 1, "ts": 1.0 + i, "run": "grpo-a", "step": i,
                        "data": {"loss": 0.1}}) for i in range(3)]
    p.write_text("\n".join(recs)[:-7])  # torn last record
    assert _run_name(str(p)) == "grpo-a"
    st = logs.LogStats(str(p))
    got = list(logs.frames(str(p), "spool", st))
    assert len(got) == 2 and st.rejected.get("bad_json") == 1
    assert [t for _, t, _ in got] == [1.0, 2.0]
    assert _run_name(os.path.join(str(tmp_path), "train.log")) == "train"


def test_progress_bar_only_on_a_terminal():
    import io
    from exporter.postmortem.progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True
    pipe, tty = io.StringIO(), Tty()
    for stream in (pipe, tty):
        p = Progress(2 ** 30, "parsing", stream=stream)
        p.update(2 ** 29)
        p.close()
    assert pipe.getvalue() == ""
    assert "parsing [" in tty.getvalue() and "100.0%" in tty.getvalue()
    assert "1,024/1,024 MiB" in tty.getvalue()


def test_a_spool_of_several_runs_is_filtered_by_run(tmp_path):
    from exporter.postmortem.backfill import _spool_run_filter
    p = tmp_path / "sidecar.jsonl"
    p.write_text("".join(json.dumps({"spool": 1, "ts": 1.0 + i, "run": ("a", "b")[i % 2],
                                     "step": i // 2, "data": {"loss": 0.1}}) + "\n"
                         for i in range(6)))
    assert logs.spool_runs(str(p)) == ["a", "b"]
    assert _spool_run_filter([str(p)], ["spool"], "b") == "b"
    with pytest.raises(logs.LogError, match="2 runs"):
        _spool_run_filter([str(p)], ["spool"], "c")
    st = logs.LogStats(str(p))
    got = list(logs.frames(str(p), "spool", st, only_run="b"))
    assert [fr.step for fr, _, _ in got] == [0, 1, 2] and st.other_runs == 3


def test_keep_firing_for_bridges_short_gaps_and_templates_expand():
    pts = [(t, 1.0) for t in (0, 60, 120, 300, 360)]          # absent at 180 and 240
    assert firing_intervals(pts, 60, 60) == [(60, 1.0, 120), (360, 1.0, 360)]
    # kept firing over the gap, then for keep_firing_for after the last point (until 540)
    assert firing_intervals(pts, 60, 60, keep_firing_s=180) == [(60, 1.0, 540)]
    # Prometheus counts keep_firing_for from the first evaluation without the series: absent
    # at 180, 240 and 300 is 120 s past that, still held
    assert firing_intervals([(t, 1.0) for t in (0, 60, 120, 360)], 60, 60,
                            keep_firing_s=180) == [(60, 1.0, 540)]
    assert firing_intervals([(t, 1.0) for t in (0, 60, 120, 420)], 60, 60,
                            keep_firing_s=180) == [(60, 1.0, 300)]
    assert rules.expand('Run {{ $labels.run }}: {{ printf "%.2f" $value }} ({{ $value }})',
                        {"run": "a"}, 0.12345) == "Run a: 0.12 (0.1235)"
    assert rules.expand("{{ if $labels.x }}y{{ end }}", {}, 1.0) == "{{ if $labels.x }}y{{ end }}"
