"""Fault injection on the sidecar (`rl-exporter serve`), in process: rotations, restarts,
broken state files, full disks, truncations. Each case writes veRL console lines (one
frame per line), runs one or more Sidecar lives over them, and checks the ledger:

    lines written == frames in the spool (each step once) + lines dropped, by reason

so nothing is lost, duplicated or unaccounted. A "crash" is a Sidecar abandoned without
close(): what it had checkpointed and spooled stays on disk, nothing else is written.
"""
from __future__ import annotations

import collections
import json
import os
import time

import pytest

from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec


def vline(step: int) -> bytes:
    return (f"(main_task pid=7) step:{step} - actor/entropy:0.5 - actor/pg_loss:0.1 - "
            f"critic/score/mean:0.3\n").encode()


def lines(a: int, b: int) -> bytes:
    return b"".join(vline(i) for i in range(a, b))


def start(d, pattern=None, **kw) -> Sidecar:
    pattern = pattern or str(d / "train.log")
    kw.setdefault("state_path", str(d / "state.json"))
    kw.setdefault("spool_out", str(d / "spool.jsonl"))
    kw.setdefault("idle_flush", 0.0)
    return Sidecar([SourceSpec(f"verl_console:{pattern}", "r")], run="r", port=None, gpu=False,
                   checkpoint_interval=0.0, **kw)


def drain(sc: Sidecar, polls: int = 400) -> None:
    """Poll until every file is read and no record is open."""
    for _ in range(polls):
        busy = sc.poll_once()
        if not busy and sc.caught_up():
            sc.poll_once()
            return
    raise AssertionError("the sidecar did not catch up")


def crash(sc: Sidecar) -> None:
    """kill -9 right after a checkpoint: the state and spool are on disk, nothing more."""
    sc.checkpoint()
    for ex in sc.runs.values():
        ex.close()
    for s in sc.sources:
        for t in s.tracks.values():
            t.follower.close()
    sc.spool_out.close()


def spooled(d) -> list:
    with open(d / "spool.jsonl") as f:
        return [json.loads(line)["step"] for line in f]


def ledger(d, written: int, dropped: int = 0) -> dict:
    """Every written step is in the spool exactly once, or counted as dropped."""
    steps = spooled(d)
    c = collections.Counter(steps)
    dup = sum(v - 1 for v in c.values() if v > 1)
    lost = sorted(set(range(1, written + 1)) - set(c))
    assert dup == 0, f"{dup} duplicated"
    assert len(lost) == dropped, f"{len(lost)} lost (first: {lost[:5]}), {dropped} counted"
    assert len(steps) + dropped == written
    return {"written": written, "spooled": len(steps), "dropped": dropped}


def append(path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


# ------------------------------------------------------------------ rotation, then restart
@pytest.mark.parametrize("restart", ["sigterm", "kill9"])
@pytest.mark.parametrize("grow", [0, 3000])
def test_rotation_then_restart_exactly_once(tmp_path, restart, grow):
    """A rotation whose old tail and new head are read in one poll, then a restart (the
    review's gen_repro.py): the old file's last frames were spooled with the new file's
    generation and the old file's offsets, so the restart skipped (grow=3000: 1,987
    lost) or replayed (grow=0: 10 duplicated) the new file's head."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 11))
    sc = start(tmp_path)
    drain(sc)
    append(log, lines(11, 2011))           # the old file's unread tail ...
    os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(lines(2011, 2021))     # ... and the new file's head, one poll
    drain(sc)
    sc.close() if restart == "sigterm" else crash(sc)
    n = 2020 + grow
    append(log, lines(2021, n + 1))        # the trainer goes on while we are down
    sc = start(tmp_path)
    assert sc.sources[0].last["step"] == 2020  # the restored last frame is the newest one
    drain(sc)
    sc.close()
    ledger(tmp_path, n)


def test_rotation_while_down_then_crash_mid_drain(tmp_path, monkeypatch):
    """The old file's tail is read in bounded polls (not into memory at once), each
    checkpointed at the old file's offset: a crash in the middle of it resumes there,
    then reads the new file."""
    from exporter.sidecar import follow
    monkeypatch.setattr(follow, "READ_CHUNK", 64 << 10)
    monkeypatch.setattr(follow, "POLL_BUDGET", 256 << 10)
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 11))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    append(log, lines(11, 20011))          # ~2 MB unread when the file rotates
    os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(lines(20011, 20021))
    sc = start(tmp_path)
    sc.poll_once()
    f = sc.sources[0].tracks[str(log)].follower
    assert f.bytes_read <= 2 * (256 << 10), f"one poll read {f.bytes_read} bytes"
    sc.poll_once()
    crash(sc)
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    ledger(tmp_path, 20020)


def source_errors(sc: Sidecar) -> dict:
    """rl_exporter_source_errors_total by kind, as /metrics renders it."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for fam in text_string_to_metric_families(generate_latest(sc.registry).decode()):
        for s in fam.samples:
            if s.name == "rl_exporter_source_errors_total":
                out[s.labels["kind"]] = s.value
    return out


# ------------------------------------------------------------------ a broken state file
@pytest.mark.parametrize("damage", ["corrupt", "truncated", "empty"])
def test_broken_state_file_resumes_from_the_spool(tmp_path, damage, caplog):
    """The state file is unusable after a crash: the spool's last offsets (and the file
    identity they carry) resume every file exactly once instead of replaying it from
    byte 0 (the review: 80 of 120 frames duplicated); the loss of the state is counted
    and said once."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 61))
    sc = start(tmp_path)
    drain(sc)
    crash(sc)
    state = tmp_path / "state.json"
    text = state.read_text()
    state.write_text({"corrupt": "{\x00garbage" + text[5:], "truncated": text[:len(text) // 2],
                      "empty": ""}[damage])
    append(log, lines(61, 121))
    with caplog.at_level("WARNING", logger="rl_exporter"):
        sc = start(tmp_path)
        drain(sc)
    errs = source_errors(sc)
    sc.close()
    ledger(tmp_path, 120)
    assert errs.get("state_unreadable") == 1, errs
    said = [r for r in caplog.records if "state file" in r.getMessage()]
    assert len(said) == 1 and "spool" in said[0].getMessage(), [r.getMessage() for r in said]


# ------------------------------------------------------------------ truncation right after a line
def test_truncation_right_after_the_last_line_keeps_its_record(tmp_path):
    """A veRL record is complete only when the next starts or the file idles; a trainer
    restart truncating the log before that (`: > train.log` within 0.5 s) threw the
    record away, uncounted (the review's trunc.py: 10 lines, 0 frames)."""
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    sc = start(tmp_path, idle_flush=60.0)
    sc.poll_once()
    for i in range(1, 11):
        append(log, vline(i))
        sc.poll_once()                      # the line is read; its record is still open
        assert sc.sources[0].tracks[str(log)].open
        log.write_bytes(b"")                # truncated before the idle flush
        sc.poll_once()
    src = sc.sources[0]
    assert src.lines == 10 and src.tracks[str(log)].follower.truncations == 10
    sc.close()
    ledger(tmp_path, 10)
    assert src.frames + sum(src.parser_rejections().values()) == src.lines


def exported(sc: Sidecar) -> dict:
    ex = next(iter(sc.runs.values()))
    ex.flush()
    return ex.stats()


# ------------------------------------------------------------------ full disk, read-only state
def test_full_disk_for_the_spool_degrades_to_counted_errors(tmp_path):
    """--spool-out on a full disk (/dev/full answers ENOSPC): serve died of the OSError from
    checkpoint() and close(), and each poll whose spool write failed exported none of its
    frames. Now every frame is exported and each unwritten spool line is counted."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 301))
    sc = start(tmp_path, spool_out="/dev/full")
    drain(sc)
    sc.checkpoint()
    st = exported(sc)
    errs = source_errors(sc)
    sc.close()                              # no OSError
    src = sc.sources[0]
    assert src.frames == 300 and st["frames_processed"] == 300, (src.frames, st)
    assert errs["spool_write"] == 300, errs  # one per unwritten line
    assert errs["spool_sync"] >= 1, errs     # /dev/full cannot be fsynced either
    assert st["frames_processed"] + sum(st["frames_dropped"].values()) == st["frames_received"]


def test_unwritable_state_file_is_counted_and_said_rarely(tmp_path, caplog):
    """A read-only state directory: one ERROR per second, counted nowhere. Now each failed
    checkpoint is counted and the first is said (then at most every few minutes); the
    export goes on."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 101))
    with caplog.at_level("WARNING", logger="rl_exporter"):
        sc = start(tmp_path, state_path="/sys/rl-exporter-state.json")  # EACCES/ENOENT, even as root
        drain(sc)
        for _ in range(5):
            sc.checkpoint()
        errs = source_errors(sc)
        st = exported(sc)
        sc.close()
    assert errs["state_write"] >= 6, errs
    said = [r for r in caplog.records if "state file" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert st["frames_processed"] == 100
    ledger(tmp_path, 100)


# ------------------------------------------------------------------ globs: deleted files
def test_glob_source_closes_deleted_files_once_read(tmp_path):
    """40 logs of a glob source, each deleted after it was written: their descriptors were
    held forever (and their disk space never freed). Once a deleted file is read to its
    end its track is dropped; what it still held unread is read first."""
    d = tmp_path / "logs"
    d.mkdir()
    pattern = str(d / "*.log")
    sc = start(tmp_path, pattern=pattern)

    def fds():
        return sum(1 for fd in os.listdir("/proc/self/fd")
                   if os.path.realpath(f"/proc/self/fd/{fd}").startswith(str(d)))

    for i in range(40):
        (d / f"r{i}.log").write_bytes(lines(i * 10 + 1, i * 10 + 6))
    time.sleep(1.1)                         # the glob is listed again at most every second
    drain(sc)
    for i in range(40):                     # more lines, then deleted before they are read
        append(d / f"r{i}.log", lines(i * 10 + 6, i * 10 + 11))
        os.unlink(d / f"r{i}.log")
    time.sleep(1.1)
    drain(sc)
    for _ in range(3):
        sc.poll_once()
    held, tracks = fds(), len(sc.sources[0].tracks)
    sc.close()
    assert held == 0 and tracks == 0, (held, tracks)
    ledger(tmp_path, 400)


# ------------------------------------------------------------------ a lagging sidecar
def test_lagging_sidecar_reads_a_file_rotated_in_and_deleted_meanwhile(tmp_path):
    """Behind on a big file (here a 20 MB line, skipped as too long, read 8 MB a poll),
    the sidecar looked at the path only at that file's end: a file rotated in and deleted
    meanwhile was never read, uncounted (the review: 40 frames lost). The next file is
    now held open as soon as it appears."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 11) + b"x" * (20 << 20) + b"\n" + lines(11, 21))
    sc = start(tmp_path)
    sc.poll_once()
    assert sc.sources[0].tracks[str(log)].follower.lag > 0
    os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(lines(21, 31))          # rotated in ...
    sc.poll_once()
    (tmp_path / "gone").mkdir()
    os.rename(log, tmp_path / "gone" / "b.log")
    log.write_bytes(lines(31, 41))
    os.unlink(tmp_path / "gone" / "b.log")  # ... and deleted before the sidecar got to it
    drain(sc)
    errs = source_errors(sc)
    src = sc.sources[0]
    sc.close()
    ledger(tmp_path, 40)
    assert src.parser_rejections()["line_too_long"] == 1
    assert errs["file_unreadable"] == 0


def test_replaced_while_down_with_the_old_file_gone_is_counted(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 11))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    append(log, lines(11, 21))              # never read: rotated away and deleted while down
    (tmp_path / "old").mkdir()
    os.rename(log, tmp_path / "old" / "train.log.1")  # not in the directory searched
    log.write_bytes(lines(21, 31))
    os.unlink(tmp_path / "old" / "train.log.1")
    sc = start(tmp_path)
    drain(sc)
    errs = source_errors(sc)
    sc.close()
    ledger(tmp_path, 30, dropped=10)
    assert errs["file_unreadable"] == 1, errs
