"""The hook's end, in real processes: a trainer that raises, one that closes, one stopped by
SIGTERM. Each is scraped once while it runs; the test then reads its /metrics again during the
final-scrape grace period and finds the final rl_run_state (and the crash) there, and the
process exits once that scrape was served, well before the grace is up. In-process: the
exception hooks are chained, never replaced, put back at close, and pass on in a fork child."""
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error

import pytest

from exporter import Exporter
from exporter.testing import samples, scrape_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRACE = 60.0  # far above what any of these waits: the exit is the scrape's doing, not the clock

CHILD = textwrap.dedent("""
    import os, signal, sys, time
    from exporter import Exporter
    mode, grace = sys.argv[1], float(sys.argv[2])
    ex = Exporter(run="child", framework="verl", port=0, gpu=False, final_scrape_grace=grace)
    for i in range(1, 4):
        ex.log({"actor/entropy": 0.5}, step=i)
    ex.flush()
    print(ex.url, flush=True)
    sys.stdin.readline()               # the parent scraped once: end now
    t_end = time.monotonic()
    if mode == "raise":
        raise RuntimeError("boom at step 3\\nsecond line")
    if mode == "close":
        ex.close()
        print("held %.3f" % (time.monotonic() - t_end), flush=True)
    if mode == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(120)                # never reached: the handler ends the process
""")


def run_states(text: str) -> dict:
    s = samples(text)
    return {k[1][0][1]: v for k, v in s.items() if k[0] == "rl_run_state"}, s


def start_child(mode: str, grace: float = GRACE):
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(grace)], cwd=ROOT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    url = p.stdout.readline().strip()
    assert url.startswith("http://"), p.stderr.read()
    return p, url


def end_and_read_final(mode: str):
    p, url = start_child(mode)
    try:
        states, _ = run_states(scrape_text(url))
        assert states["running"] == 1.0          # a scrape was seen: the end will be held
        t0 = time.monotonic()
        p.stdin.write("go\n")
        p.stdin.flush()
        final = None
        while final is None and time.monotonic() - t0 < 30:
            try:
                text = scrape_text(url)
            except (urllib.error.URLError, OSError):
                break
            states, s = run_states(text)
            if states.get("running") != 1.0:
                final = (states, s)
            else:
                time.sleep(0.05)
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert final is not None, f"no final state read while the process held on; stderr: {err}"
    return final, p.returncode, out, err, took


def test_a_trainer_that_raises_is_crashed_and_says_which_exception():
    (states, s), rc, _, err, took = end_and_read_final("raise")
    assert states["crashed"] == 1.0 and sum(states.values()) == 1.0
    info = {k[1]: v for k, v in s.items() if k[0] == "rl_run_crash_info"}
    assert info == {(("exception", "RuntimeError"), ("message", "boom at step 3")): 1.0}
    # the previous excepthook ran after ours: the traceback is printed, the exit code is 1
    assert rc == 1 and "RuntimeError: boom at step 3" in err
    assert took < GRACE / 2  # it left once our scrape was served, not at the grace's end


def test_a_trainer_that_closes_is_finished():
    (states, s), rc, out, err, took = end_and_read_final("close")
    assert states["finished"] == 1.0 and not any(k[0] == "rl_run_crash_info" for k in s)
    assert s[("rl_training_step", ())] == 3
    assert rc == 0, err
    print(f"close() held the endpoint {out.split()[-1]} s for the final scrape")
    assert took < GRACE / 2


def test_a_trainer_stopped_by_sigterm_is_crashed_by_the_signal():
    (states, s), rc, _, err, took = end_and_read_final("sigterm")
    assert states["crashed"] == 1.0
    info = {k[1]: v for k, v in s.items() if k[0] == "rl_run_crash_info"}
    assert info == {(("exception", "SIGTERM"), ("message", "terminated by SIGTERM (15)")): 1.0}
    assert rc == -signal.SIGTERM, err  # it still dies by the signal
    assert took < GRACE / 2


def test_no_scrape_ever_seen_means_no_wait():
    p, url = start_child("close")
    out, err = p.communicate("go\n", timeout=30)  # never scraped after start-up
    assert p.returncode == 0, err
    assert float(out.split()[-1]) < 1.0, out  # "held 0.00x": close() did not wait


def test_excepthooks_are_chained_and_put_back_at_close():
    # In a process of its own: the hooks are put back when the *last* live exporter closes, so
    # an exporter another test left alive in this process would keep ours installed.
    code = textwrap.dedent("""
        import sys, threading, time
        from exporter import Exporter
        seen = []
        sys.excepthook = lambda *a: seen.append(("sys", a[0].__name__))
        threading.excepthook = lambda args: seen.append(("thread", args.exc_type.__name__))
        prev_sys, prev_thread = sys.excepthook, threading.excepthook
        ex = Exporter(run="hooks", serve=False, gpu=False)
        try:
            assert sys.excepthook is not prev_sys and threading.excepthook is not prev_thread
            ex.process_now({"actor/entropy": 0.5}, 1, time.time())
            t = threading.Thread(target=lambda: 1 / 0, name="reward-worker")
            t.start()
            t.join()
            assert seen == [("thread", "ZeroDivisionError")], seen  # the previous hook ran too
            snap = ex.lifecycle.snapshot()
            assert snap["state"] == "crashed" and snap["crash"] == {
                "exception": "ZeroDivisionError",
                "message": "in thread reward-worker: division by zero"}, snap
            # a thread's crash is not the process's end: a later step says the run goes on
            time.sleep(0.01)
            ex.process_now({"actor/entropy": 0.5}, 2, time.time())
            assert ex.lifecycle.state == "running"
            try:
                raise KeyError("missing")
            except KeyError:
                sys.excepthook(*sys.exc_info())  # what the interpreter calls at an uncaught one
            assert seen[-1] == ("sys", "KeyError"), seen
            assert ex.lifecycle.state == "crashed" and ex.lifecycle.final
            ex.process_now({"actor/entropy": 0.5}, 3, time.time() + 1)
            assert ex.lifecycle.state == "crashed"  # final: nothing after it counts
        finally:
            ex.close()
        assert ex.lifecycle.state == "crashed"      # close() after the crash keeps it
        assert sys.excepthook is prev_sys and threading.excepthook is prev_thread  # put back
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0 and r.stdout.split() == ["ok"], r.stdout + r.stderr


def test_the_hooks_pass_on_in_a_fork_child():
    code = textwrap.dedent("""
        import os, sys
        from exporter import Exporter
        ex = Exporter(run="fk", serve=False, gpu=False)
        ex.process_now({"actor/entropy": 0.5}, 1, 1e9)
        import threading
        held, done = threading.Event(), threading.Event()

        def hold():  # another thread holds the lifecycle's lock at the fork
            with ex.lifecycle._lock:
                held.set()
                done.wait()
        t = threading.Thread(target=hold)
        t.start()
        held.wait()
        pid = os.fork()
        done.set()
        if pid:
            t.join()
        if pid == 0:
            import signal
            signal.alarm(10)  # a lock still held in the child would hang here
            with ex.timer("heat_guard"):  # the child's copy: fresh locks, no deadlock
                pass
            try:
                raise ValueError("in the child")
            except ValueError:
                sys.excepthook(*sys.exc_info())  # ours, with no live exporter here: passes on
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), ex.lifecycle.state)
        ex.close()
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "running"]  # the parent's run did not crash
    assert "ValueError: in the child" in r.stderr  # the default hook printed it


def test_a_with_block_that_raises_is_crashed_and_sys_exit_0_is_finished():
    with pytest.raises(OSError):
        with Exporter(run="w", serve=False, gpu=False) as ex:
            raise OSError("disk full")
    assert ex.lifecycle.snapshot()["crash"] == {"exception": "OSError", "message": "disk full"}
    with pytest.raises(SystemExit):
        with Exporter(run="w0", serve=False, gpu=False) as ok:
            raise SystemExit(0)
    assert ok.lifecycle.state == "finished"
