"""The sidecar's resume offset (exporter/sidecar/track.py): one invariant, checked event by
event, and the state written before a new file's first frame can be spooled."""
import json

from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec
from exporter.sidecar.track import FileTrack

NOISE = b"(TaskRunner pid=1) INFO vllm: model loaded\n"


def vline(step, wrap_at=None):
    text = f"step:{step} - actor/entropy:0.{step} - actor/pg_loss:-0.00{step}\n".encode()
    return text if wrap_at is None else (text[:wrap_at] + b"\n", text[wrap_at:])


def feed(track: FileTrack):
    frames = []
    for kind, text, start, end in track.follower.poll():
        if kind == "line":
            frames += track.on_line(text, start, end)
        elif kind == "start":
            track.on_start(start)
    return frames


def test_noise_before_detection_is_skipped_past(tmp_path):
    p = tmp_path / "t.log"
    p.write_bytes(NOISE * 3)
    t = FileTrack(str(p), "auto", None, 1 << 20)
    assert feed(t) == [] and t.parser is None
    assert t.resume == 3 * len(NOISE)


def test_resume_stays_at_the_first_line_of_the_open_record(tmp_path):
    p = tmp_path / "t.log"
    head, tail = vline(2, wrap_at=20)
    p.write_bytes(vline(1) + head)
    t = FileTrack(str(p), "verl_console", None, 1 << 20)
    frames = feed(t)
    # step 1 is complete only once the next record starts; the resume point is then the
    # start of that record (the wrapped step 2), not its end
    assert [r.frame.step for r in frames] == [1]
    assert t.open and t.resume == len(vline(1))
    with open(p, "ab") as f:
        f.write(tail)  # a continuation line: the record is still open, resume unchanged
    assert feed(t) == [] and t.resume == len(vline(1))
    with open(p, "ab") as f:
        f.write(vline(3))
    frames = feed(t)
    assert [r.frame.step for r in frames] == [2]
    assert frames[0].frame.data["actor/pg_loss"] == -0.002  # rejoined across the wrap
    assert t.resume == len(vline(1)) + len(head) + len(tail)
    frames = t.on_idle()  # nothing more came: the open record is complete
    assert [r.frame.step for r in frames] == [3] and not t.open
    assert t.resume == p.stat().st_size


def test_reset_goes_back_to_zero(tmp_path):
    p = tmp_path / "t.log"
    p.write_bytes(vline(1) + vline(2))
    t = FileTrack(str(p), "verl_console", None, 1 << 20)
    feed(t)
    t.on_reset()
    assert t.resume == 0 and not t.open


def test_a_new_file_is_checkpointed_before_its_first_frame(tmp_path):
    """A crash right after the first spool write must find the file's identity in the
    state file, or the spool's offsets cannot be applied and the file is replayed."""
    p = tmp_path / "t.log"
    p.write_bytes(vline(1) + vline(2))
    state = tmp_path / "state.json"
    sc = Sidecar([SourceSpec(f"verl_console:{p}", "r")], run="r", port=None,
                 state_path=str(state), spool_out=str(tmp_path / "spool.jsonl"), gpu=False)
    try:
        src = sc.sources[0]
        src.poll(0.0)  # one poll of the source alone, no checkpoint of poll_once after it
        saved = json.loads(state.read_text())["sources"]
        files = saved[f"verl_console:{p}"]["files"]
        assert files[str(p)]["file"]["ino"] == p.stat().st_ino
    finally:
        sc.close()
