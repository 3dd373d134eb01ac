"""`rl-exporter serve` as a real subprocess following real files (and a real Prometheus)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.helpers import free_port, scrape_text, series

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLL = ["--poll-interval", "0.01", "--checkpoint-interval", "0.05"]


class Serve:
    def __init__(self, *args, env=None):
        e = dict(os.environ, PYTHONPATH=ROOT)
        e.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-m", "exporter.cli", "--log-level", "WARNING",
                                      "serve", "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
        line = self.proc.stdout.readline()
        if "scrape " not in line:
            self.proc.kill()
            raise AssertionError(f"serve did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line.split("scrape ")[1].split()[0]
        self.base = self.url.rsplit("/metrics", 1)[0]

    def metrics(self):
        text = scrape_text(self.url)
        return series(text, with_run=True), text

    def value(self, name, **labels):
        m, _ = self.metrics()
        for (n, lab), v in m.items():
            if n == name and all(dict(lab).get(k) == val for k, val in labels.items()):
                return v
        return None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def wait_for(cond, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def spool_steps(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            if line.endswith("\n"):
                out.append(json.loads(line)["step"])
    return out


def vline(step):
    return (f"(main_task pid=7) step:{step} - actor/entropy:{step}.5 - "
            f"actor/pg_loss:np.float64(-{step}e-3) - training/global_step:{step}\n").encode()


def test_follow_faults_every_byte_split_rotation_truncation_garbage(tmp_path):
    """Missing directory, partial writes split at every byte, a 10 MB line, binary garbage,
    rotation, deletion + recreation: every complete record becomes exactly one frame."""
    log = tmp_path / "logs" / "train.log"
    spool = tmp_path / "out.spool.jsonl"
    sv = Serve("--source", f"verl_console:{log}", "--run", "faults", "--spool-out", str(spool),
               "--idle-flush", "0.05", "--max-line-bytes", "65536", *POLL)
    try:
        h = json.loads(urllib.request.urlopen(sv.base + "/healthz").read())
        assert h["sources"][0]["state"] == "waiting"
        log.parent.mkdir()
        written = []
        line = vline(1)
        with open(log, "ab", buffering=0) as f:
            for cut in range(len(line) + 1):  # split record `cut` at byte `cut`
                step = cut + 1
                rec = vline(step)
                f.write(rec[:cut])
                time.sleep(0.012)
                f.write(rec[cut:])
                written.append(step)
            f.write(b"x" * (10 * 1024 * 1024) + b"\n")          # a 10 MB line
            f.write(os.urandom(4096).replace(b"\n", b"") + b"\n")  # binary garbage
            f.write(vline(1000))
            written.append(1000)
        wait_for(lambda: spool_steps(spool) == written, what="frames after partial writes")
        wait_for(lambda: sv.value("rl_entropy", run="faults") == 1000.5, what="exported value")
        assert sv.value("rl_exporter_source_lines_rejected_total", reason="line_too_long") == 1
        os.rename(log, str(log) + ".1")                          # rotation
        log.write_bytes(vline(2000))
        written.append(2000)
        wait_for(lambda: spool_steps(spool) == written, what="frames after rotation")
        wait_for(lambda: sv.value("rl_exporter_source_rotations_total") == 1, what="rotation count")
        os.unlink(log)                                           # deleted, then recreated
        time.sleep(0.1)
        log.write_bytes(vline(3000))
        written.append(3000)
        wait_for(lambda: spool_steps(spool) == written, what="frames after re-creation")
        wait_for(lambda: sv.value("rl_training_step", run="faults") == 3000, what="step 3000")
        _, text = sv.metrics()
        helps = [l for l in text.splitlines() if l.startswith("# HELP ")]
        assert len(helps) == len(set(helps)), "a family rendered twice"
    finally:
        sv.stop()


def test_kill9_restart_exactly_once_with_truncation(tmp_path):
    """veRL JSONL written while serve is killed with SIGKILL and restarted, and while the
    trainer restarts (truncating the file): the spool holds every written frame once."""
    path = tmp_path / "m.jsonl"
    spool = tmp_path / "spool.jsonl"
    state = tmp_path / "state.json"
    args = ["--source", f"verl_jsonl:{path}", "--run", "k9", "--state-file", str(state),
            "--spool-out", str(spool), *POLL]
    written = []
    stop = threading.Event()

    def writer(first, n, mode):
        with open(path, mode, buffering=0) as f:
            for s in range(first, first + n):
                rec = json.dumps({"step": s, "data": {"actor/entropy": s / 10, "x": None}},
                                 separators=(",", ":")).encode() + b"\n"
                f.write(rec[:7])  # torn writes on purpose
                f.write(rec[7:])
                written.append(s)
                time.sleep(0.002)
                if stop.is_set():
                    return

    sv = Serve(*args)
    try:
        t = threading.Thread(target=writer, args=(1, 400, "wb"))
        t.start()
        for _ in range(3):  # kill -9 three times while the writer runs
            wait_for(lambda: len(spool_steps(spool)) > len(written) // 2, what="progress")
            sv.kill9()
            time.sleep(0.05)
            sv = Serve(*args)
        t.join()
        wait_for(lambda: spool_steps(spool) == written, what="catch-up after kills")
        writer(5000, 50, "wb")  # the trainer restarts: FileLogger truncates its file
        wait_for(lambda: spool_steps(spool) == written, what="frames after truncation")
        assert sv.value("rl_exporter_source_truncations_total") >= 1
        sv.kill9()
        sv = Serve(*args)
        time.sleep(0.3)
        assert spool_steps(spool) == written  # nothing replayed after the last restart
        assert sv.value("rl_exporter_source_frames_total") == 0
    finally:
        stop.set()
        sv.stop()


def test_restart_restores_the_last_frame_without_counting_it(tmp_path):
    """kill -9 and restart with no new line written: the last frame's values, its step and
    the step's original timestamp are on /metrics at once (no dashboard hole, and a run
    that hung before the restart still ages toward RLRunStalled); nothing is counted or
    spooled twice, and the next line carries on from there."""
    path = tmp_path / "train.log"
    spool = tmp_path / "spool.jsonl"
    state = tmp_path / "state.json"
    args = ["--source", f"verl_console:{path}", "--run", "rs", "--state-file", str(state),
            "--spool-out", str(spool), "--idle-flush", "0.05", *POLL]
    with open(path, "wb") as f:
        for s in (1, 2, 3):
            f.write(vline(s))
    sv = Serve(*args)
    try:
        wait_for(lambda: spool_steps(spool) == [1, 2, 3], what="three frames")
        wait_for(lambda: (json.loads(state.read_text())["sources"].popitem()[1]
                          .get("last") or {}).get("step") == 3, what="last frame checkpointed")
        ts_before = sv.value("rl_training_step_timestamp_seconds", run="rs")
        time.sleep(1.1)  # a restart later than the frame, so a re-stamped time would show
        sv.kill9()
        sv = Serve(*args)
        restarted = time.time()
        wait_for(lambda: sv.value("rl_training_step", run="rs") == 3, what="restored step")
        assert sv.value("rl_training_step_timestamp_seconds", run="rs") == \
            pytest.approx(ts_before, abs=0.5)
        assert sv.value("rl_training_step_timestamp_seconds", run="rs") < restarted - 0.5
        assert sv.value("rl_entropy", run="rs") == 3.5
        assert sv.value("rl_exporter_frames_processed_total", run="rs") == 0
        assert sv.value("rl_exporter_source_frames_total") == 0
        assert sv.value("rl_exporter_source_last_frame_timestamp_seconds") == \
            pytest.approx(ts_before, abs=0.5)
        with open(path, "ab") as f:
            f.write(vline(4))
        wait_for(lambda: sv.value("rl_training_step", run="rs") == 4, what="next frame")
        assert sv.value("rl_exporter_frames_processed_total", run="rs") == 1
        wait_for(lambda: spool_steps(spool) == [1, 2, 3, 4], what="step 4 spooled once")
        sv.kill9()  # and again: the restored frame is now step 4
        sv = Serve(*args)
        wait_for(lambda: sv.value("rl_training_step", run="rs") == 4, what="restored again")
        assert spool_steps(spool) == [1, 2, 3, 4]
    finally:
        sv.stop()


def _post(base, body, token=None, ctype="application/json"):
    req = urllib.request.Request(base + "/ingest", data=body, method="POST",
                                 headers={"Content-Type": ctype})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        r = urllib.request.urlopen(req, timeout=5)
        return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_ingest_refuses_off_loopback_without_token(tmp_path):
    p = subprocess.run([sys.executable, "-m", "exporter.cli", "serve", "--ingest", "--listen",
                        "0.0.0.0", "--port", "0"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, PYTHONPATH=ROOT, RL_EXPORTER_INGEST_TOKEN=""))
    assert p.returncode == 2 and "without a bearer token" in p.stderr


def test_ingest_auth_size_json_and_all_or_nothing(tmp_path):
    tok = tmp_path / "token"
    tok.write_text("s3cret\n")
    sv = Serve("--ingest", "--ingest-token-file", str(tok), "--ingest-max-bytes", "4096",
               "--ingest-framework", "verl", "--run", "ing", *POLL)
    try:
        good = json.dumps({"step": 3, "data": {"actor/entropy": 0.25, "actor/pg_loss": "NaN"}}).encode()
        assert _post(sv.base, good)[0] == 401
        assert _post(sv.base, good, token="wrong")[0] == 401
        assert _post(sv.base, b"[" + b"1," * 4000 + b"1]", token="s3cret")[0] == 413
        code, body = _post(sv.base, b"{not json", token="s3cret")
        assert code == 400 and "malformed JSON" in body["error"]
        mixed = json.dumps([{"step": 1, "data": {"actor/entropy": 0.9}},
                            {"step": 2, "data": {"actor/entropy": [1, 2]}}]).encode()
        code, body = _post(sv.base, mixed, token="s3cret")
        assert code == 400 and "frame 1" in body["error"]
        assert sv.value("rl_entropy", run="ing") is None  # nothing of the batch applied
        assert _post(sv.base, good, token="s3cret") == (200, {"accepted": 1})
        wait_for(lambda: sv.value("rl_entropy", run="ing") == 0.25, what="ingested value")
        assert sv.value("rl_training_step", run="ing") == 3
        import math
        assert math.isnan(sv.value("rl_policy_loss", run="ing"))
        assert sv.value("rl_exporter_source_lines_rejected_total", source="ingest",
                        reason="unauthorized") == 2
        req = urllib.request.Request(sv.url, data=b"x", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 405  # /metrics stays read-only
    finally:
        sv.stop()


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed")
def test_prometheus_scrapes_serve_following_a_growing_log(tmp_path):
    log = tmp_path / "train.log"
    sv = Serve("--source", f"auto:{log}", "--run", "promrun", "--idle-flush", "0.05", *POLL)
    port = free_port()
    target = sv.url.split("//")[1].split("/")[0]
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"scrape_configs:\n  - job_name: sidecar\n    static_configs: [{{targets: ['{target}']}}]\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()

    def grow():
        step = 0
        with open(log, "ab", buffering=0) as f:
            while not stop.is_set():
                step += 1
                f.write(vline(step))
                time.sleep(0.1)

    t = threading.Thread(target=grow, daemon=True)
    t.start()

    def query(q):
        u = f"http://127.0.0.1:{port}/api/v1/query?query=" + urllib.parse.quote(q)
        try:
            r = json.loads(urllib.request.urlopen(u, timeout=3).read())
        except (urllib.error.URLError, ConnectionError):
            return []
        return r["data"]["result"] if r.get("status") == "success" else []

    import urllib.parse
    try:
        res = wait_for(lambda: query('rl_training_step{run="promrun",job="sidecar"}'),
                       timeout=40, what="series in Prometheus")
        first = float(res[0]["value"][1])
        wait_for(lambda: (r := query('rl_training_step{run="promrun"}')) and
                 float(r[0]["value"][1]) > first, timeout=20, what="step advancing in Prometheus")
        assert query('rl_entropy{run="promrun"}')
        assert query('rl_exporter_source_frames_total{source="%s"}' % log)
    finally:
        stop.set()
        prom.terminate()
        try:
            prom.wait(10)
        except subprocess.TimeoutExpired:
            prom.kill()
        sv.stop()
