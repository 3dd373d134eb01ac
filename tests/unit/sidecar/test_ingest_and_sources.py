"""POST /ingest and the sources under the reliability review's smaller attacks: nested
JSON, the bearer scheme's case, a valid but wrong --source format."""
import json
import logging
import urllib.error
import urllib.request

from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec


def post(sc, body: bytes, auth=None):
    req = urllib.request.Request(sc.url.replace("/metrics", "/ingest"), data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    if auth:
        req.add_header("Authorization", auth)
    try:
        r = urllib.request.urlopen(req, timeout=10)
        return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_nested_json_is_bad_json_and_the_bearer_scheme_is_case_insensitive():
    sc = Sidecar([], run="r", port=0, gpu=False, ingest={"token": "s3cret", "framework": "verl"})
    try:
        good = json.dumps({"step": 1, "data": {"actor/entropy": 0.5}}).encode()
        assert post(sc, good, "bearer s3cret") == (200, {"accepted": 1})
        assert post(sc, good, "BEARER  s3cret")[0] == 200
        assert post(sc, good, "Basic s3cret")[0] == 401
        code, body = post(sc, b"[" * 100_000, "Bearer s3cret")  # RecursionError in json
        assert code == 400 and "malformed JSON" in body["error"]
        src = sc.ingest_source
        assert src.rejected["bad_json"] == 1 and src.rejected["unauthorized"] == 1
        # every request read is accepted (one frame each here) or rejected by reason; the
        # unauthorized one is refused before its body is read
        assert src.lines == 3 and src.lines == src.frames + src.rejected["bad_json"]
    finally:
        sc.close()


def test_a_wrong_format_is_said_once_and_counted(tmp_path, caplog):
    """veRL console lines read as verl_jsonl: every line read, 0 frames, and nothing said.
    Start-up noise before a first frame is not reported (see the next test)."""
    noise = b"(WorkerDict pid=1) INFO vllm: loading weights shard 3 of 8\n" * 1000
    log = tmp_path / "train.log"
    log.write_bytes(noise + b"".join(f"step:{i} - actor/entropy:0.5 - actor/pg_loss:0.1\n".encode()
                                     for i in range(2000)))
    sc = Sidecar([SourceSpec(f"verl_jsonl:{log}", "r")], run="r", port=None, gpu=False)
    with caplog.at_level(logging.WARNING, logger="rl_exporter"):
        for _ in range(5):
            sc.poll_once()
    src = sc.sources[0]
    sc.close()
    said = [r.getMessage() for r in caplog.records if "not one verl_jsonl record" in r.getMessage()]
    assert src.lines == 3000 and src.frames == 0
    assert src.errors["no_frames"] == 1 and len(said) == 1
    assert "look like verl_console" in said[0]


def test_startup_noise_is_not_a_wrong_format(tmp_path, caplog):
    log = tmp_path / "train.log"
    log.write_bytes(b"(WorkerDict pid=1) INFO vllm: loading weights shard 3 of 8\n" * 20000
                    + b"step:1 - actor/entropy:0.5\n")
    sc = Sidecar([SourceSpec(f"verl_console:{log}", "r")], run="r", port=None, gpu=False,
                 idle_flush=0.0)
    with caplog.at_level(logging.WARNING, logger="rl_exporter"):
        for _ in range(5):
            sc.poll_once()
    src = sc.sources[0]
    sc.close()
    assert src.frames == 1 and src.errors["no_frames"] == 0
    assert not [r for r in caplog.records if "not one" in r.getMessage()]
