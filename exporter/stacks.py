"""Hang forensics: every thread's Python stack, captured from our own thread while the
trainer is still alive (the peers' watchdogs abort first and leave nothing to read).

HangWatch (one check per second per exporter, from one daemon thread for the whole process)
captures once per hang:
- a phase open longer than its hang threshold (the RLPhaseHung condition,
  exporter/core/thresholds.py) -- once per occurrence of that phase;
- no step for longer than the stall threshold (RLRunStalled) -- once per last step
  (before the first step: the stall floor since the exporter started).
Neither counts time in a declared pause (exporter/core/lifecycle.py), and a run that finished
or crashed is not watched.
A capture is logged (a warning with the dump), appended to `<spool>.stacks` beside the spool
when one is on, and kept for `GET /debug/stacks`, which also answers on demand with the
stacks of now (taken at most once a second, however many ask). Stacks are the owner's
only: without RL_EXPORTER_DEBUG_TOKEN the route answers a loopback client whose socket
belongs to the exporter's own user (or root), read from the kernel's socket table
(/proc/net/tcp, tcp6; elsewhere than Linux: any loopback client). With the token set it
needs `Authorization: Bearer <token>` from any address (like /ingest), and so does
/status, which is otherwise public (docs/status.md).
"""
from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import sys
import threading
import time
import traceback
import weakref

from .core.thresholds import DEFAULT, HangThresholds

log = logging.getLogger("rl_exporter")

TOKEN_ENV = "RL_EXPORTER_DEBUG_TOKEN"
MAX_DUMP_BYTES = 256 * 1024  # one dump; a deep recursion in 200 threads stays readable
MAX_FRAMES = 80              # innermost frames kept per thread
CHECK_S = 1.0
ON_DEMAND_S = 1.0            # an on-demand dump is reused by every request for this long


def dump_stacks(header: str = "", max_bytes: int = MAX_DUMP_BYTES) -> str:
    """Every thread's Python stack (innermost call last), the calling thread marked. Only
    the innermost MAX_FRAMES frames of each are walked and formatted (a 900-deep stack in
    each of 200 threads took 2.6 s when whole stacks were formatted, then cut)."""
    names = {t.ident: t for t in threading.enumerate()}
    me = threading.get_ident()
    parts = [header] if header else []
    for ident, frame in sorted(sys._current_frames().items()):
        t = names.get(ident)
        name = t.name if t is not None else "?"
        flags = (" daemon" if t is not None and t.daemon else "") + (" (this dump)" if ident == me else "")
        lines = traceback.format_list(traceback.extract_stack(frame, limit=MAX_FRAMES))
        parts.append(f'Thread "{name}" ident={ident}{flags}:\n' + "".join(lines))
    text = "\n".join(parts)
    if len(text.encode("utf-8", "replace")) > max_bytes:
        cut = text.encode("utf-8", "replace")[:max_bytes].decode("utf-8", "ignore")
        text = cut + f"\n... truncated at {max_bytes} bytes\n"
    return text


def _ip(addr: str):
    """An address as an ipaddress object, an IPv4-mapped IPv6 one as the IPv4 it maps
    (a dual-stack listener on "::" sees 127.0.0.1 as ::ffff:127.0.0.1); None if not one."""
    try:
        ip = ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return None
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


def _loopback(addr: str) -> bool:
    ip = _ip(addr)
    return ip.is_loopback if ip is not None else addr in ("localhost",)


def _proc_addr(text: str):
    """`0100007F:1F90` (or tcp6's 32 hex digits) from /proc/net/tcp as (ip, port)."""
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    # each 32-bit word is in the host's byte order (little-endian on the Linux we serve)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)) \
        if sys.byteorder == "little" else raw
    ip = ipaddress.ip_address(raw)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped if mapped is not None else ip), int(port, 16)


def peer_uid(peer: tuple, local: tuple) -> int | None:
    """The user owning the client end of a local TCP connection (the kernel's socket
    table: the client's socket is the one whose local address is our peer and whose remote
    address is us); None where it cannot be told (not Linux, not found)."""
    want_peer, want_local = (_ip(peer[0]), int(peer[1])), (_ip(local[0]), int(local[1]))
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name, encoding="ascii") as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) < 8:
                        continue
                    try:
                        if _proc_addr(fields[1]) == want_peer and \
                                _proc_addr(fields[2]) == want_local:
                            return int(fields[7])
                    except ValueError:
                        continue
        except OSError:
            continue
    return None


def bearer_ok(environ, token: str) -> bool:
    """`Authorization: Bearer <token>` (the scheme case-insensitive, as for /ingest)."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    given = auth[7:].strip().encode() if auth[:7].lower() == "bearer " else b""
    return hmac.compare_digest(given, token.encode())


def _owner(environ) -> bool:
    """The client's socket belongs to this process's user (or root). Where the socket
    table cannot be read (not Linux), any loopback client counts."""
    peer, local = environ.get("rlx.peer"), environ.get("rlx.local")
    if peer is None or local is None or not os.path.exists("/proc/net/tcp"):
        return True
    uid = peer_uid(peer, local)
    return uid is not None and uid in (os.getuid(), 0)


def access(environ, token: str | None) -> tuple[str, str] | None:
    """None when the request may read the stacks, else (HTTP status, reason)."""
    if token:
        if bearer_ok(environ, token):
            return None
        return "401 Unauthorized", "missing or wrong bearer token\n"
    if not _loopback(environ.get("REMOTE_ADDR", "")):
        return ("403 Forbidden", f"/debug/stacks answers loopback clients only; set {TOKEN_ENV} on "
                "the exporter and send it as a bearer token to read it from elsewhere\n")
    if not _owner(environ):
        return ("403 Forbidden", "/debug/stacks answers the exporter's own user only; set "
                f"{TOKEN_ENV} on the exporter and send it as a bearer token to share it\n")
    return None


def token_required(environ, token: str | None) -> tuple[str, str] | None:
    """For /status: public, unless the token is set (then as for /debug/stacks)."""
    if not token or bearer_ok(environ, token):
        return None
    return "401 Unauthorized", "missing or wrong bearer token\n"


_WATCHES: "weakref.WeakSet[HangWatch]" = weakref.WeakSet()
_WATCH_LOCK = threading.Lock()
_watch_thread = None


def _watch_loop() -> None:
    """One thread for every exporter of the process (a fleet demo has hundreds)."""
    while True:
        time.sleep(CHECK_S)
        for w in list(_WATCHES):
            w.tick()


def _start(watch) -> None:
    global _watch_thread
    _WATCHES.add(watch)
    with _WATCH_LOCK:
        if _watch_thread is None or not _watch_thread.is_alive():  # a fork child has none
            _watch_thread = threading.Thread(target=_watch_loop, name="rl-exporter-hangwatch",
                                             daemon=True)
            _watch_thread.start()


class HangWatch:
    """The hang watch of one served run (core/run.py ServedRun: the hook's Exporter, or one of
    serve's runs)."""

    def __init__(self, exporter, thresholds: HangThresholds = DEFAULT, start: bool = True):
        self._ex = weakref.ref(exporter)  # the watch never keeps an exporter alive
        self.run = exporter.run
        self.thresholds = thresholds
        self.started = time.time()
        self.captured: list[dict] = []    # the hangs captured (the last few kept)
        self.dumps = 0
        self._seen: set = set()
        self.stopped = not start
        if start:
            _start(self)

    def stop(self) -> None:
        self.stopped = True
        _WATCHES.discard(self)

    def tick(self) -> None:
        ex = self._ex()
        if ex is None or ex.closed or self.stopped:
            self.stop()
            return
        try:
            self.check(ex)
        except Exception as e:  # ours: counted, the watch goes on
            ex.counts.error("hang_watch", e)

    # ------------------------------------------------------------ the conditions
    def check(self, ex, now: float | None = None) -> list[dict]:
        """Capture what newly qualifies as hung; returns the new captures."""
        now = time.time() if now is None else now
        th = self.thresholds
        found = []
        lc = ex.lifecycle
        if lc.ended or lc.paused:  # over, or a declared pause: no phase or step is late
            return []
        for phase, open_s, median, start in ex.open_phases():
            limit = th.phase_limit(median)
            open_s -= lc.paused_between(now - open_s, now)  # a pause it was held open by
            if open_s > limit:
                found.append((("phase", phase, start), {
                    "reason": "phase_hung", "phase": phase, "open_seconds": round(open_s, 3),
                    "threshold_seconds": round(limit, 3),
                    "recent_median_seconds": median}))
        ts = ex.store.get("rl_training_step_timestamp_seconds")
        expected = ex.goodput.expected_step_seconds()
        since = ts if ts is not None and ts == ts else self.started
        limit = th.stall_limit(expected if ts is not None else None)
        # a step stamped before this watch began was replayed or restored, not lived
        if since >= self.started and lc.active_seconds(since, now) > limit:
            found.append((("stall", since), {
                "reason": "no_step", "seconds_since_last_step": round(now - since, 3),
                "threshold_seconds": round(limit, 3), "last_step": ex.store.get("rl_training_step"),
                "expected_step_seconds": expected}))
        new = []
        for key, info in found:
            if key in self._seen:
                continue
            self._seen.add(key)
            rec = self._capture(ex, info, now)
            if rec is not None:
                new.append(rec)
        return new

    def _capture(self, ex, info: dict, now: float) -> dict | None:
        what = (f"phase {info['phase']!r} open {info['open_seconds']:.1f} s"
                if info["reason"] == "phase_hung" else
                f"no step for {info['seconds_since_last_step']:.1f} s")
        stamp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))

        def header(pid: int, tool: str = "") -> str:  # postmortem/stacks.py reads it back
            return (f"# rl-exporter hang dump: run {ex.run}, pid {pid}, {stamp}: {what} "
                    f"(threshold {info['threshold_seconds']:.1f} s){tool}\n")
        text = self.take(ex, header)
        if text is None:  # none could be taken (the taker counted why)
            return None
        rec = dict(info, captured_at=now, stacks=text)
        self.dumps += 1
        self.captured = (self.captured + [rec])[-4:]
        if ex.spans is not None:  # the dump on the open phase's span (exporter/spans.py)
            ex.spans.hang(rec)
        log.warning("rl-exporter: run %s looks hung (%s); every thread's stack follows, also at "
                    "GET /debug/stacks\n%s", ex.run, what, text)
        path = self.spool_path(ex)
        if path is not None:
            try:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(text + "\n")
                rec["file"] = path
            except OSError as e:
                ex.counts.error("spool", e, f"cannot write the hang dump to {path} ({e})")
        return rec

    # ------------------------------------------------------------ what a subclass changes
    # (the sidecar's watch takes the trainer's stacks with py-spy: exporter/sidecar/pyspy.py)
    def take(self, ex, header) -> str | None:
        """Every thread's stack under header(pid); None when none could be taken."""
        return dump_stacks(header(os.getpid()))

    def spool_path(self, ex) -> str | None:
        """Where captures are appended: `<spool>.stacks` beside the exporter's spool."""
        path = ex.spool_path
        return None if path is None else path + ".stacks"

    def last(self) -> dict | None:
        return self.captured[-1] if self.captured else None


def guarded_text_app(body, max_bytes: int, token: str | None = None):
    """WSGI app answering GET with the text body() returns, cut at max_bytes: loopback-only
    unless the token is set and sent (the /debug/stacks rule of the hook and the sidecar)."""
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None

    def app(environ, start_response):
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET"), ("Content-Type", "text/plain")])
            return [b"GET only\n"]
        denied = access(environ, token)
        if denied is not None:
            start_response(denied[0], [("Content-Type", "text/plain")])
            return [denied[1].encode()]
        data = body().encode("utf-8", "replace")[:max_bytes]
        start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"),
                                  ("Content-Length", str(len(data)))])
        return [data]
    return app


def stacks_app(exporter, token: str | None = None):
    """WSGI app for GET /debug/stacks: the stacks now (one dump serves every request of the
    same second), then the last hang's capture."""
    cache: list = [float("-inf"), ""]
    lock = threading.Lock()

    def now_stacks() -> str:
        with lock:  # concurrent requests wait for the one dump being taken
            t = time.monotonic()
            if t - cache[0] >= ON_DEMAND_S:
                cache[1] = dump_stacks(f"# rl-exporter stacks on demand: run {exporter.run}, "
                                       f"pid {os.getpid()}\n")
                cache[0] = time.monotonic()
            return cache[1]

    def body() -> str:
        text = now_stacks()
        watch = exporter.hang_watch
        last = watch.last() if watch is not None else None
        if last is not None:
            text += "\n\n# last hang capture\n" + last["stacks"]
        return text
    return guarded_text_app(body, 2 * MAX_DUMP_BYTES + 4096, token)
