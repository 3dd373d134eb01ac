"""The sidecar serves GET /status for the runs it exports (real HTTP on its port)."""
import json
import time
import urllib.error
import urllib.request

import pytest

from exporter.sidecar.sidecar import Sidecar
from exporter.sidecar.source import SourceSpec


def vline(step):
    return f"step:{step} - actor/entropy:0.{step} - timing_s/save_checkpoint:0.5\n".encode()


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def test_sidecar_status_per_run(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"".join(vline(i) for i in range(1, 4)))
    b.write_bytes(vline(7))
    started = time.time()
    sc = Sidecar([SourceSpec(f"verl_console:{a},run=ra", "r"),
                  SourceSpec(f"verl_console:{b},run=rb", "r")], run="r", port=0, gpu=False)
    try:
        deadline = time.time() + 20
        base = sc.url[: -len("/metrics")]
        while time.time() < deadline:
            sc.poll_once()
            for p in sc.runs.values():
                p.flush()
            runs = get(base + "/status").get("runs", [])
            if sorted(r["step"] or 0 for r in runs) == [3, 7]:
                break
            time.sleep(0.1)
        # the sidecar's pipelines watch for no hang: this process's stacks are not the trainer's
        assert sc.runs and all(p.hang_watch is None for p in sc.runs.values())
        both = get(base + "/status")
        assert both["schema"] == "rl-exporter/status/v1"
        assert sorted((r["run"], r["step"]) for r in both["runs"]) == [("ra", 3), ("rb", 7)]
        one = get(base + "/status?run=ra")
        assert one["run"] == "ra" and one["step"] == 3 and one["open_phases"] == []
        # a backlog read at once is stamped at read time: no more than the time it took
        assert one["goodput"]["accounted_seconds"] <= time.time() - started
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/status?run=nope", timeout=10)
        assert e.value.code == 404
    finally:
        sc.close()
