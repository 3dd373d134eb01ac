"""serve never waits in silence: it says what it waits for and when nothing it reads is a known
format; --exit-when-idle ends on a last line cut without its newline and on unreadable input,
exiting 1 when no source gave a frame; a port in use is one line, at once."""
from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from exporter.sidecar.follow import FileFollower
from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec
from tests.conftest import rl_exporter_cmd

ROOT = Path(__file__).resolve().parents[3]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
STEPS = "".join(f"step:{i} - actor/pg_loss:0.{i} - critic/score/mean:0.{i}\n" for i in range(1, 6))
CUT = "step:6 - actor/pg_loss:0.6 - critic/score/mean:0.6"     # the crash cut its newline


def serve(*args, timeout=30):
    t0 = time.monotonic()
    p = subprocess.run(rl_exporter_cmd("serve", "--port", "0", "--gpu", "off", *args), cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def test_follower_hands_over_a_cut_last_line_only_when_told(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("one\ntwo")
    f = FileFollower(str(log))
    lines = [e for e in f.poll() if e[0] == "line"]
    assert [e[1] for e in lines] == ["one"]
    assert f.lag == 3 and f.unread == 0          # everything on disk read; "two" waits for "\n"
    assert f.take_partial() == [("line", "two", 4, 7)]
    assert f.lag == 0 and f.take_partial() == []
    f.close()


def test_exit_when_idle_ends_on_a_cut_last_line_and_exports_it(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(STEPS + CUT)
    spool = tmp_path / "out.jsonl"
    p, took = serve("--source", f"verl:{log}", "--exit-when-idle", "--spool-out", str(spool))
    assert p.returncode == 0, p.stderr
    steps = [json.loads(line)["step"] for line in spool.read_text().splitlines()]
    assert steps == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("content,why", [
    (bytes(b for b in range(256) if b != 10) * 3, "1 line, none in a known metrics format"),
    (b"", "the file is empty"),
    (b"hello\nworld\n", "2 lines, none in a known metrics format"),
    (None, "no such file"),
], ids=["binary-without-newline", "empty", "unknown-format", "missing"])
def test_exit_when_idle_says_why_nothing_was_read_and_exits_1(tmp_path, content, why):
    log = tmp_path / "x.log"
    if content is not None:
        log.write_bytes(content)
    p, took = serve("--source", f"auto:{log}", "--exit-when-idle")
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert f"rl-exporter serve: source auto:{log}: {why}" in p.stderr, p.stderr
    assert "no frame read from any source" in p.stderr


def test_exit_when_idle_names_a_glob_that_matches_nothing(tmp_path):
    p, _ = serve("--source", f"auto:{tmp_path}/*.log", "--exit-when-idle")
    assert p.returncode == 1 and "no file matches" in p.stderr, p.stderr


def test_a_port_in_use_is_one_line_at_once(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(STEPS)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        p, took = serve("--source", f"verl:{log}", "--port", str(port), "--exit-when-idle")
    assert p.returncode == 1
    errors = [line for line in p.stderr.splitlines() if "rl-exporter serve:" in line or "ERROR" in line]
    assert errors == [f"rl-exporter serve: cannot serve on 127.0.0.1:{port}: [Errno 98] Address already in use"]
    assert took < 10, took   # no silent 15 s retry (it took 15.4 s before)
    bad, _ = serve("--source", f"verl:{log}", "--port", "99999")
    assert bad.returncode == 2 and "99999 is not a port" in bad.stderr


def test_live_serve_says_what_it_waits_for_and_when_lines_are_no_known_format(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="rl_exporter.sidecar")
    log = tmp_path / "later.log"
    sc = Sidecar([SourceSpec(f"auto:{log}", "r"), SourceSpec(f"auto:{tmp_path}/g/*.log", "r")],
                 run="r", port=None, gpu=False)
    try:
        for _ in range(3):
            sc.poll_once()
        said = [r.getMessage() for r in caplog.records]
        assert said.count(f"source {log}: waiting for {log} to appear") == 1, said
        assert said.count(f"source {tmp_path}/g/*.log: waiting for a file matching {tmp_path}/g/*.log") == 1
        log.write_text("vLLM starting\nloading weights\n")
        for _ in range(3):
            sc.poll_once()
        said = [r.getMessage() for r in caplog.records]
        assert f"source {log}: {log} appeared: following it" in said
        unknown = [m for m in said if "none in a known metrics format so far" in m]
        assert len(unknown) == 1 and "2 lines read" in unknown[0], said
        with log.open("a") as f:
            f.write(STEPS)
        for _ in range(3):
            sc.poll_once()
        sc.finish()  # the last record is complete (serve applies it after --idle-flush)
        assert sc.sources[0].frames == 5 and sc.nothing_read() == []
    finally:
        sc.close()


def test_a_spool_source_keeps_its_settings_in_the_spool_out(tmp_path):
    """serve re-spooling a spool (--source spool: --spool-out) writes its settings record as a
    record, never as a frame's value (a data value that is not a number or string would cost
    the frame on the next read), and serves the settings meanwhile."""
    from exporter import spool as sp
    src = tmp_path / "in.jsonl"
    src.write_text(sp.encode_settings({"n_mini": 8}, ts=1.0, run="r", framework="trl") + "\n"
                   + "".join(sp.encode(i, {"loss": 0.5}, ts=1.0 + i, run="r", framework="trl") + "\n"
                             for i in (1, 2, 3)))
    out = tmp_path / "out.jsonl"
    p, _ = serve("--source", f"spool:{src}", "--exit-when-idle", "--spool-out", str(out))
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert recs[0]["settings"] == {"n_mini": 8.0} and "data" not in recs[0]
    assert [r["step"] for r in recs[1:]] == [1, 2, 3]
    assert all(sp.SETTINGS_KEY not in r["data"] for r in recs[1:])
