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


# ------------------------------------------------------------------ rewritten while down
def kill9(sc: Sidecar) -> None:
    """kill -9 at once: nothing written after the last poll's own checkpoint."""
    for ex in sc.runs.values():
        ex.close()
    for s in sc.sources:
        for t in s.tracks.values():
            t.follower.close()
    sc.spool_out.close()


def test_rotation_then_kill9_then_rewrite_while_down_exactly_once(tmp_path):
    """The review's rewrite_while_down.py: killed within a second of following a rotated-in
    file, whose checkpoint held no fingerprint (fp_len 0: taken only at the next poll);
    while down the trainer truncated and rewrote that file, longer. The restart resumed
    mid-file: 20 of 30 new frames lost, nothing counted. The fingerprint is now taken when
    a file is opened, so the rewrite is recognised and the file read from its start."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 21))
    sc = start(tmp_path)
    drain(sc)
    os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(lines(21, 41))
    sc.poll_once()                         # the rotation, the new file's lines, a checkpoint
    kill9(sc)
    state = json.loads((tmp_path / "state.json").read_text())
    saved = state["sources"][f"verl_console:{log}"]["files"][str(log)]["file"]
    assert saved["fp_len"] >= min(saved["offset"], 4096), saved
    log.write_bytes(lines(41, 71))         # the trainer restarted: `> train.log`, more lines
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    ledger(tmp_path, 70)


def test_a_record_open_at_a_crash_survives_a_truncation_while_down(tmp_path):
    """A veRL record is complete only when the next one starts or the file idles: killed
    inside that window, then the trainer truncates the log while serve is down, and the
    record's bytes are gone (the review's R4: 1 frame). The state file keeps the bytes of
    the record still open; a restart that finds them destroyed exports it from there."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 21))
    sc = start(tmp_path, idle_flush=60.0)
    for _ in range(3):
        sc.poll_once()
    assert sc.sources[0].tracks[str(log)].open  # step 20's record is still open
    kill9(sc)
    log.write_bytes(lines(21, 51))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    ledger(tmp_path, 50)


def test_state_lost_and_file_rewritten_while_down_exactly_once(tmp_path):
    """A state file rebuilt from the spool has no fingerprint: the offset it resumes at
    cannot be proved. The file was rewritten in place (longer) while down: resuming there
    lost its head. Now such a file is read from its start; what the spool holds is
    recognised (up to its last record) or, here, found to differ and read as new."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 61))
    sc = start(tmp_path)
    drain(sc)
    crash(sc)
    (tmp_path / "state.json").write_text("{garbage")
    log.write_bytes(lines(61, 131))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    ledger(tmp_path, 130)


def test_rewrite_keeping_a_long_identical_head_is_recognised(tmp_path):
    """A trainer's start-up print (a config dump) is the same at every start and longer
    than the 4 KiB head fingerprint: a rewrite while down looked unchanged, and the restart
    resumed mid-file. The checkpoint now also fingerprints the bytes just before its
    offset."""
    head = b"".join(f"config.option_{i}: value_{i}\n".encode() for i in range(300))
    assert len(head) > 4096
    log = tmp_path / "train.log"
    log.write_bytes(head + lines(1, 21))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    log.write_bytes(head + lines(21, 61))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    ledger(tmp_path, 60)


def test_lagging_sidecar_counts_a_successor_truncated_before_it_was_read(tmp_path,
                                                                         monkeypatch):
    """The review's `huge,rotate,truncate`: skipping a 100 MB line took seconds, because a
    poll that only skipped bytes counted as idle and waited a poll interval; meanwhile the
    rotated-in file was truncated and its 20 frames were lost, uncounted. A poll that read
    bytes is now busy (no wait), and a successor truncated while held unread is counted
    (errors{kind="truncated_unread"})."""
    from exporter.sidecar import follow
    monkeypatch.setattr(follow, "POLL_BUDGET", 1 << 20)
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 11) + b"x" * (8 << 20) + b"\n" + lines(11, 21))
    sc = start(tmp_path)
    sc.poll_once()
    sc.poll_once()
    assert sc.poll_once() is True          # only skipping bytes: busy all the same
    os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(lines(21, 41))         # rotated in ...
    sc.poll_once()
    log.write_bytes(lines(41, 61))         # ... and truncated before the sidecar got to it
    drain(sc)
    errs = source_errors(sc)
    sc.close()
    ledger(tmp_path, 60, dropped=20)
    assert errs["truncated_unread"] == 1, errs


def test_spool_ahead_of_an_older_checkpoint_resumes_there(tmp_path):
    """Killed a while after the last checkpoint: the spool's offset is ahead of it, and the
    checkpoint's fingerprint of the bytes before its own offset still proves the file (it
    is checked where it was taken, not at the spool's offset)."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 101))
    sc = start(tmp_path)
    drain(sc)
    sc.checkpoint_interval = 3600.0
    sc.checkpoint()
    sc._checkpoint_due = time.monotonic() + 3600.0
    append(log, lines(101, 201))
    drain(sc)                              # spooled, never checkpointed
    kill9(sc)
    append(log, lines(201, 221))
    sc = start(tmp_path)
    drain(sc)
    f = sc.sources[0].tracks[str(log)].follower
    sc.close()
    assert f.truncations == 0
    ledger(tmp_path, 220)


@pytest.mark.parametrize("change", ["truncate", "rotate"])
def test_new_content_spooled_before_its_checkpoint_reached_disk(tmp_path, change):
    """The file was truncated (or rotated) and frames of the new content spooled, then the
    process died before the checkpoint that knew of it was on disk (one fsync away). The
    spool is a generation ahead of the state: its last record, once proved by reading up
    to it, is where the restart resumes (the review's c7 under load: 43 duplicated)."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 31))
    sc = start(tmp_path)
    drain(sc)
    sc.checkpoint = lambda: None           # from here on, no checkpoint reaches the disk
    if change == "rotate":
        os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(lines(31, 61))
    drain(sc)
    kill9(sc)
    append(log, lines(61, 71))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    ledger(tmp_path, 70)


def test_a_line_nested_too_deep_costs_that_line_only(tmp_path):
    """The review's nested_jsonl_sidecar.py: a verl_jsonl line nesting 10^5 deep (200 KB,
    under the line cap) raised RecursionError out of the parser; the poll was abandoned and
    the 9 frames after it in the same poll never exported, counted only as one
    `error`. It is now one bad_json rejection; its neighbours are exported."""
    log = tmp_path / "train.jsonl"
    body = [json.dumps({"step": n, "data": {"actor/entropy": 0.5}}) for n in range(1, 21)]
    body[10] = '{"step":11,"data":{"x":' + "[" * 100000 + "]" * 100000 + "}}"
    log.write_text("\n".join(body) + "\n")
    sc = Sidecar([SourceSpec(f"verl_jsonl:{log}", "r")], run="r", port=None, gpu=False,
                 state_path=str(tmp_path / "state.json"), spool_out=str(tmp_path / "spool.jsonl"),
                 checkpoint_interval=0.0, idle_flush=0.0)
    drain(sc)
    rej = sc.sources[0].parser_rejections()
    sc.close()
    ledger(tmp_path, 20, dropped=1)
    assert 11 not in spooled(tmp_path)
    assert rej["bad_json"] == 1 and rej["error"] == 0, rej


def test_a_log_line_with_an_absurd_step_is_rejected_not_booked_as_restart(tmp_path):
    """The review's G4: `step:99999999999` among 60 veRL lines made every later interval
    `restart` badput. The step is rejected (implausible_step); the frame is exported."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 31) + vline(99999999999) + lines(31, 61))
    sc = start(tmp_path)
    drain(sc)
    p = next(iter(sc.runs.values()))
    p.flush()
    restart, st = p.goodput.totals["restart"], p.stats()
    sc.close()
    assert restart == 0.0
    assert st["values_rejected"].get("implausible_step") == 1, st["values_rejected"]
    assert st["frames_processed"] == 61 and st["last_step"] == 60


def test_spool_ahead_then_rotated_while_down_exactly_once(tmp_path):
    """The review's r8 (kill9_rotate): killed with the spool ahead of the checkpoint, then
    the file rotated while down. The old file, found by inode, is re-read up to the spool's
    last record to prove the offset; the rotation noticed in the same poll must not make
    the restart forget that (18 duplicated)."""
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 11))
    sc = start(tmp_path)
    drain(sc)
    sc.checkpoint = lambda: None            # the checkpoint lags the spool
    append(log, lines(11, 19))
    drain(sc)
    kill9(sc)
    append(log, lines(19, 51))              # while down: more, then rotated
    os.rename(log, tmp_path / "train.log.50")
    log.write_bytes(lines(51, 61))
    sc = start(tmp_path)
    drain(sc)
    sc.close()
    ledger(tmp_path, 60)


def test_bytes_seen_unread_at_a_crash_and_destroyed_while_down_are_counted(tmp_path, monkeypatch):
    """Behind on a backlog when killed, and the trainer truncates the log while serve is
    down: the bytes the last checkpoint had seen but not read are gone. Nothing can bring
    them back; the restart counts them (truncated_unread) and reads the new content."""
    from exporter.sidecar import follow
    monkeypatch.setattr(follow, "READ_CHUNK", 4 << 10)
    monkeypatch.setattr(follow, "POLL_BUDGET", 8 << 10)
    log = tmp_path / "train.log"
    log.write_bytes(lines(1, 401))          # ~35 KB: several polls
    sc = start(tmp_path)
    sc.poll_once()                          # part of it read, checkpointed with its size
    kill9(sc)
    read = len(spooled(tmp_path))
    assert 0 < read < 399
    log.write_bytes(lines(401, 421))
    sc = start(tmp_path)
    drain(sc)
    errs = source_errors(sc)
    sc.close()
    # the unread rest of the first content; the record open at the crash is kept
    ledger(tmp_path, 420, dropped=400 - read - 1)
    assert errs["truncated_unread"] == 1, errs
