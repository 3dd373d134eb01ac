"""/debug/stacks is its owner's only; /status public unless the token is set; a dump costs
what it keeps (the reliability review's S5, S6, S9 and S1)."""
import json
import os
import re
import socket
import threading
import urllib.error
import urllib.request

import pytest

from exporter import Exporter
from exporter import stacks
from exporter.stacks import peer_uid

def url(ex, path, host="127.0.0.1"):
    return f"http://{host}:{ex.endpoint.port}{path}"


@pytest.mark.parametrize("family,host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_the_kernel_names_the_user_of_a_loopback_client(family, host):
    srv = socket.socket(family)
    srv.bind((host, 0))
    srv.listen(1)
    cli = socket.socket(family)
    cli.connect(srv.getsockname()[:2])
    conn, peer = srv.accept()
    try:
        assert peer_uid(peer[:2], conn.getsockname()[:2]) == os.getuid()
        assert peer_uid((host, 1), conn.getsockname()[:2]) is None   # no such client
    finally:
        for s in (cli, conn, srv):
            s.close()


def status_as(uid: int, port: int, path: str) -> int:
    """The HTTP status a GET of `path` gets from a process of user `uid` (a fork child that
    drops to it: nothing to exec, so no interpreter the user may not read)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only sockets from here on
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
            head = s.recv(64).split(b" ")[1]
            os.write(w, head)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    try:
        got = os.read(r, 16)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    return int(got)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_stacks_are_refused_to_another_local_user():
    """The review's S5: user nobody read the trainer's stacks over loopback."""
    with Exporter(run="own", port=0, gpu=False) as ex:
        port = ex.endpoint.port
        assert status_as(0, port, "/debug/stacks") == 200
        assert status_as(65534, port, "/debug/stacks") == 403
        assert status_as(65534, port, "/status") == 200    # /status is public


def test_an_ipv4_client_of_a_dual_stack_listener_is_loopback():
    """The review's S6: bound to "::", 127.0.0.1 arrives as ::ffff:127.0.0.1 and got 403."""
    with Exporter(run="ds", addr="::", port=0, gpu=False) as ex:
        for host in ("127.0.0.1", "[::1]"):
            assert urllib.request.urlopen(url(ex, "/debug/stacks", host), timeout=10).status == 200


def test_status_needs_the_token_once_one_is_set(monkeypatch, capsys):
    """/status is public by default (docs/status.md); RL_EXPORTER_DEBUG_TOKEN covers it with
    /debug/stacks, and `rl-exporter status` sends it."""
    monkeypatch.setenv(stacks.TOKEN_ENV, "s3cret")
    with Exporter(run="tok", port=0, gpu=False) as ex:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url(ex, "/status"), timeout=10)
        assert e.value.code == 401
        req = urllib.request.Request(url(ex, "/status"),
                                     headers={"Authorization": "bearer s3cret"})
        assert json.loads(urllib.request.urlopen(req, timeout=10).read())["run"] == "tok"
        from exporter.commands import status as status_cmd
        args = type("A", (), {"url": f"http://127.0.0.1:{ex.endpoint.port}", "run": None,
                              "timeout": 10, "json": True})()
        assert status_cmd.run(args) == 0
        assert json.loads(capsys.readouterr().out)["run"] == "tok"


def test_a_dump_walks_and_formats_only_the_frames_it_keeps(monkeypatch):
    """The review's S9: 200 threads 900 deep cost 2.6 s a request, every frame formatted
    and then all but the innermost 80 thrown away."""
    import linecache
    stop, deep_enough = threading.Event(), threading.Semaphore(0)

    def deep(n):
        if n:
            return deep(n - 1)
        deep_enough.release()
        stop.wait(30)
    threads = [threading.Thread(target=deep, args=(900,), name=f"deep{i}", daemon=True)
               for i in range(4)]
    for t in threads:
        t.start()
    for _ in threads:
        assert deep_enough.acquire(timeout=30)
    calls = [0]
    real = linecache.getline

    def counting(*a, **kw):
        calls[0] += 1
        return real(*a, **kw)
    monkeypatch.setattr(linecache, "getline", counting)
    try:
        text = stacks.dump_stacks()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert calls[0] <= stacks.MAX_FRAMES * text.count('Thread "'), calls[0]
    for i in range(4):
        part = text.split(f'Thread "deep{i}"')[1].split('Thread "')[0]
        repeated = sum(int(m) for m in re.findall(r"Previous line repeated (\d+) more", part))
        assert part.count("  File ") + repeated == stacks.MAX_FRAMES
        assert "stop.wait(30)" in part and part.rstrip().endswith("timeout)")  # innermost kept


def test_one_dump_serves_the_requests_of_the_same_second(monkeypatch):
    taken = [0]
    real = stacks.dump_stacks

    def counting(*a, **kw):
        taken[0] += 1
        return real(*a, **kw)
    monkeypatch.setattr(stacks, "dump_stacks", counting)
    monkeypatch.setattr(stacks, "ON_DEMAND_S", 3600.0)
    with Exporter(run="cache", port=0, gpu=False) as ex:
        for _ in range(5):
            assert urllib.request.urlopen(url(ex, "/debug/stacks"), timeout=10).status == 200
    assert taken[0] == 1
