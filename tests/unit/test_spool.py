"""exporter/spool.py: the spool format and its one writer (the hook's and the sidecar's)."""
import math
import os
import subprocess
import sys
from pathlib import Path

from exporter import spool

ROOT = Path(__file__).resolve().parents[2]


def test_round_trip_and_foreign_lines():
    line = spool.encode(3, {"a": math.nan, "b": math.inf, "c": "on", "d": None}, run="r")
    rec = spool.decode(line)
    data = spool.decode_data(rec["data"])
    assert rec["run"] == "r" and rec["step"] == 3 and math.isnan(data["a"])
    assert data["b"] == math.inf and data["c"] == "on" and data["d"] is None
    for bad in ("step:1 - a:2", '{"spool": 2, "data": {}}', '{"data": 1, "spool": 1}', "{torn",
                "[" * 100_000, b'{"spool":1,"data":{}'):
        assert spool.decode(bad) is None, bad[:20]


def test_peek_reads_run_and_ts_from_the_head_as_decode_does():
    data = {f"actor/k{i}": i / 7 for i in range(150)}  # a record is mostly its data
    for run in ("grpo-7b", 'a "quoted" \\ run', "ünïcode", ""):
        line = spool.encode(12, data, ts=1724312345.12, run=run, framework="verl")
        rec = spool.decode(line)
        assert spool.peek(line) == (rec["run"], rec["ts"]) == (run, 1724312345.12)
        assert spool.peek("  " + line + "\n") == (run, 1724312345.12)
    # the sidecar's extras (src, off, gen, ino) come after ts and run
    line = spool.encode(1, data, ts=5.0, run="r", framework="trl", src="/logs/" + "x" * 200,
                        off=10, gen=0, ino=1)
    assert spool.peek(line) == ("r", 5.0)
    assert spool.peek(spool.encode(1, {"a": 1})) == (None, None)       # neither written
    assert spool.peek(spool.encode(1, {"a": 1}, ts=2)) == (None, 2.0)
    for other in ('{"run": "x", "ts": 3, "data": {}}',                 # not a spool record
                  'step:1 - run:"x"', "(TaskRunner pid=1) {'run': 'x'}", ""):
        assert spool.peek(other) == (None, None)


def test_a_line_is_written_whole_or_not_at_all(tmp_path):
    f = spool.SpoolFile(str(tmp_path / "s.jsonl"))
    assert f.append('{"spool":1,"data":{}}') is None
    f.close()
    assert (tmp_path / "s.jsonl").read_text() == '{"spool":1,"data":{}}\n'
    full = spool.SpoolFile("/dev/full")                 # ENOSPC on every write
    err = full.append('{"spool":1,"data":{}}')
    assert isinstance(err, OSError) and err.errno == 28
    assert full.close() is None and full.close() is None  # idempotent, never raises


def test_the_hook_loads_no_log_parser(tmp_path):
    """The trainer imports exporter.spool (through the hook's spool writer): it must not
    pull the log parsers in with it."""
    code = ("import sys; from exporter import Exporter\n"
            f"ex = Exporter(run='t', serve=False, gpu=False, handle_sigterm=False, "
            f"spool={str(tmp_path / 's.jsonl')!r})\n"
            "ex.log({'actor/entropy': 1.0}, step=1); ex.close()\n"
            "print(sorted(m for m in sys.modules if m.startswith('exporter.logs')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True).stdout
    assert out.strip() == "[]"
    first, end = (tmp_path / "s.jsonl").read_text().splitlines()
    assert spool.decode(first)["step"] == 1
    assert spool.decode(end) is None and spool.decode_event(end)["event"] == "finished"


def test_a_settings_record_round_trips_and_rides_on_the_next_frame():
    from exporter.logs.spool import SpoolParser
    line = spool.encode_settings({"n_mini": 8, "max_grad_norm": math.inf}, ts=1.0, run="r")
    import json
    assert spool.settings_record(json.loads(line)) == {"n_mini": 8.0, "max_grad_norm": math.inf}
    assert spool.decode_event(line) is None      # not a lifecycle event
    p = SpoolParser()
    assert p.feed(line) == []                    # nothing to process until a frame comes
    # a record that says settings but holds none that are numbers is refused and counted
    assert p.feed('{"spool":1,"settings":{"n_mini":"eight"}}') == [] and p.rejected["schema"] == 1
    assert p.feed('{"spool":1,"settings":[1]}') == [] and p.rejected["schema"] == 2
    assert p.feed('{"spool":1,"settings":{"n_mini":1') == [] and p.rejected["bad_json"] == 1
    first, = p.feed(spool.encode(1, {"loss": 0.5}, run="r"))
    assert first.data == {"loss": 0.5, spool.SETTINGS_KEY: {"n_mini": 8.0, "max_grad_norm": math.inf}}
    second, = p.feed(spool.encode(2, {"loss": 0.4}, run="r"))
    assert spool.SETTINGS_KEY not in second.data  # once
