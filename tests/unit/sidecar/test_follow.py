"""The file follower on real files: tail -F semantics and resume from a checkpoint."""
import os

from exporter.sidecar.follow import FileFollower, StateFile


def lines(events):
    return [e[1] for e in events if e[0] == "line"]


def kinds(events):
    return [e[0] for e in events if e[0] != "line"]


def append(path, data: bytes):
    with open(path, "ab") as f:
        f.write(data)


def test_waits_for_missing_file_and_directory(tmp_path):
    path = tmp_path / "not" / "yet" / "train.log"
    f = FileFollower(str(path))
    assert f.poll() == [] and f.state == "waiting"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"a\nb\n")
    assert lines(f.poll()) == ["a", "b"] and f.state == "following"


def test_partial_line_split_at_every_byte(tmp_path):
    line = "step:1 - actor/entropy:0.5 - ünï:np.float64(1e-06)\n".encode()
    for cut in range(len(line) + 1):
        path = tmp_path / f"p{cut}.log"
        path.write_bytes(b"")
        f = FileFollower(str(path))
        f.poll()
        append(path, line[:cut])
        first = lines(f.poll())
        append(path, line[cut:])
        second = lines(f.poll())
        assert first + second == [line[:-1].decode()], cut
        assert (first == []) == (cut < len(line)), cut
        assert f.offset == len(line)


def test_rotation_reads_old_file_to_its_end_then_new(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"1\n2\n")
    f = FileFollower(str(path))
    assert lines(f.poll()) == ["1", "2"]
    append(path, b"3\n4-no-newline")
    os.rename(path, tmp_path / "train.log.1")
    path.write_bytes(b"5\n")
    ev = f.poll()
    assert lines(ev) == ["3", "4-no-newline", "5"]
    assert "eof" in kinds(ev) and f.rotations == 1


def test_truncation_is_detected_and_read_from_start(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"aaaa\nbbbb\n")
    f = FileFollower(str(path))
    assert lines(f.poll()) == ["aaaa", "bbbb"]
    with open(path, "wb") as fh:  # veRL's FileLogger opens with "wb"
        fh.write(b"c\n")
    ev = f.poll()
    assert kinds(ev) == ["reset"] and lines(ev) == ["c"] and f.truncations == 1


def test_truncate_and_regrow_past_offset_caught_by_fingerprint(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"first run line 1\n")
    f = FileFollower(str(path))
    f.poll()
    with open(path, "wb") as fh:  # restarted trainer already wrote more than we had read
        fh.write(b"second run line 1\nsecond run line 2\n")
    ev = f.poll()
    assert kinds(ev) == ["reset"]
    assert lines(ev) == ["second run line 1", "second run line 2"]


def test_long_line_skipped_without_buffering(tmp_path):
    path = tmp_path / "x.log"
    f = FileFollower(str(path), max_line_bytes=1 << 16)
    path.write_bytes(b"before\n")
    f.poll()
    with open(path, "ab") as fh:
        fh.write(b"x" * (10 * 1024 * 1024))
    assert lines(f.poll()) == [] and len(f._buf) == 0
    append(path, b"tail-of-long\nafter\n")
    assert lines(f.poll()) == ["after"]
    assert f.too_long == 1


def test_binary_garbage_becomes_text(tmp_path):
    path = tmp_path / "g.log"
    path.write_bytes(os.urandom(5000).replace(b"\n", b"") + b"\nok\n")
    f = FileFollower(str(path))
    out = lines(f.poll())
    assert out[-1] == "ok" and len(out) == 2


def test_deleted_then_recreated(tmp_path):
    path = tmp_path / "d.log"
    path.write_bytes(b"1\n")
    f = FileFollower(str(path))
    f.poll()
    os.unlink(path)
    assert f.poll() == [] and f.state == "deleted"
    path.write_bytes(b"2\n")
    ev = f.poll()
    assert lines(ev) == ["2"] and f.state == "following"


def test_resume_from_checkpoint(tmp_path):
    path = tmp_path / "r.log"
    path.write_bytes(b"1\n2\n")
    f = FileFollower(str(path))
    f.poll()
    st = StateFile(str(tmp_path / "state.json"))
    st.save({"k": f.checkpoint()})
    append(path, b"3\n")
    g = FileFollower(str(path), saved=st.load()["k"])
    assert lines(g.poll()) == ["3"]


def test_resume_after_truncation_while_down(tmp_path):
    path = tmp_path / "r.log"
    path.write_bytes(b"old 1\nold 2\n")
    f = FileFollower(str(path))
    f.poll()
    saved = f.checkpoint()
    with open(path, "wb") as fh:
        fh.write(b"new 1\nnew 2\nnew 3\n")
    g = FileFollower(str(path), saved=saved)
    assert lines(g.poll()) == ["new 1", "new 2", "new 3"] and g.truncations == 1


def test_resume_after_rotation_while_down_finishes_old_file(tmp_path):
    path = tmp_path / "r.log"
    path.write_bytes(b"1\n2\n")
    f = FileFollower(str(path))
    f.poll()
    saved = f.checkpoint()
    append(path, b"3\n")
    os.rename(path, tmp_path / "r.log.1")
    path.write_bytes(b"4\n")
    g = FileFollower(str(path), saved=saved)
    assert lines(g.poll()) == ["3", "4"] and g.rotations == 1


def test_state_file_is_atomic_and_tolerates_garbage(tmp_path):
    p = tmp_path / "s.json"
    p.write_text("{torn")
    st = StateFile(str(p))
    assert st.load() == {}
    st.save({"a": {"offset": 3}})
    assert st.load() == {"a": {"offset": 3}}
    assert [x.name for x in tmp_path.iterdir()] == ["s.json"]


def test_state_file_on_a_full_disk_keeps_the_last_good_state(tmp_path):
    """A write that fails half-way (here: past RLIMIT_FSIZE, EFBIG, as a full disk fails
    with ENOSPC) keeps the last good state and leaves no temp file behind."""
    import resource
    import signal

    import pytest
    p = tmp_path / "s.json"
    st = StateFile(str(p))
    st.save({"a": {"offset": 3}})
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        with pytest.raises(OSError):
            st.save({"a": {"offset": 4, "pad": "x" * 10_000}})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert st.load() == {"a": {"offset": 3}}
    assert [x.name for x in tmp_path.iterdir()] == ["s.json"]
