"""Doctor's hang forensics: the stack dumps spooled beside a spool (`<spool>.stacks`, written
by the hook's hang watch, exporter/stacks.py, or by the sidecar's py-spy capture,
exporter/sidecar/pyspy.py), read back and put beside the RLPhaseHung / RLRunStalled finding
they explain, trimmed to the innermost frames of each thread."""
from __future__ import annotations

import calendar
import os
import re
import time

HEADER = "# rl-exporter hang dump: "
_HEAD = re.compile(r"^# rl-exporter hang dump: run (?P<run>.*?), pid (?P<pid>\d+), "
                   r"(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ): (?P<what>.*?)"
                   r" \(threshold (?P<threshold>[\d.]+) s\)(?P<tail>.*)$")
_PHASE = re.compile(r"^phase '(?P<phase>[^']*)' open ")
# traceback.format_stack (innermost last): `  File "x.py", line 3, in f` then the code line
_TB = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+), in (?P<func>.*)$')
# py-spy dump (innermost first): `Thread 123 (idle): "MainThread"` then `    f (x.py:3)`
_SPY_THREAD = re.compile(r'^Thread (?P<id>\S+)(?: \((?P<state>[^)]*)\))?: "?(?P<name>[^"]*)"?$')
_SPY_FRAME = re.compile(r"^\s+(?P<func>\S.*?) \((?P<file>[^()]*?):(?P<line>\d+)\)$")
_OURS_THREAD = re.compile(r'^Thread "(?P<name>.*)" ident=(?P<id>\d+)(?P<flags>.*):$')
FRAMES = 6          # innermost frames kept per thread
THREADS = 16        # threads kept per capture (the ones blocked in the trainer's code first)
FINDINGS = {"RLPhaseHung": "phase_hung", "RLRunStalled": "no_step"}


def path_for(log_paths: list[str], given: str | None) -> str | None:
    """--stacks FILE, else `<spool>.stacks` beside the first log that has one."""
    if given:
        return given
    for p in log_paths:
        if os.path.isfile(p + ".stacks"):
            return p + ".stacks"
    return None


def read(path: str) -> list[dict]:
    """Every capture in the file, in order: run, pid, captured_at (Unix s), reason, phase,
    what, tool (python or py-spy), threads [{name, frames: innermost first}]."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    out = []
    for chunk in text.split("\n" + HEADER):
        chunk = chunk if chunk.startswith(HEADER) else HEADER + chunk
        first, _, body = chunk.partition("\n")
        m = _HEAD.match(first)
        if m is None:
            continue
        what = m["what"]
        ph = _PHASE.match(what)
        out.append({"run": m["run"], "pid": int(m["pid"]),
                    "captured_at": float(calendar.timegm(time.strptime(m["time"],
                                                                       "%Y-%m-%dT%H:%M:%SZ"))),
                    "reason": "phase_hung" if ph else "no_step",
                    "phase": ph["phase"] if ph else None, "what": what,
                    "threshold_seconds": float(m["threshold"]),
                    "tool": "py-spy" if "py-spy" in m["tail"] else "python",
                    "threads": _threads(body), "file": path})
    return out


def _threads(body: str) -> list[dict]:
    threads: list[dict] = []
    cur = None
    for line in body.splitlines():
        m = _OURS_THREAD.match(line)
        if m is not None:
            cur = {"name": m["name"], "frames": [], "_order": "outer_first",
                   "ours": "(this dump)" in m["flags"]}
            threads.append(cur)
            continue
        m = _SPY_THREAD.match(line)
        if m is not None:
            cur = {"name": m["name"], "frames": [], "_order": "inner_first", "ours": False}
            if m["state"]:
                cur["state"] = m["state"]
            threads.append(cur)
            continue
        if cur is None:
            continue
        m = _TB.match(line) if cur["_order"] == "outer_first" else _SPY_FRAME.match(line)
        if m is not None:
            cur["frames"].append(f"{m['func']} ({os.path.basename(m['file'])}:{m['line']})")
    out = []
    for t in threads:
        if t.pop("ours"):
            continue  # the thread that took the dump (the hang watch itself)
        frames = t["frames"][::-1] if t.pop("_order") == "outer_first" else t["frames"]
        t["frames"] = frames[:FRAMES]
        t["depth"] = len(frames)
        out.append(t)
    # the exporter's own threads (its worker, endpoint, watch) last: the trainer's come first
    out.sort(key=lambda t: t["name"].startswith("rl-exporter"))
    return out[:THREADS]


def attach(findings, captures: list[dict], run: str) -> int:
    """Put on each RLPhaseHung / RLRunStalled finding (`.stacks`) the capture of its kind
    (its phase, for RLPhaseHung) nearest its firing time, else the nearest of any kind (a
    hung phase also stalls the run). Captures of this run only, when any name it.
    Returns how many findings got one."""
    mine = [c for c in captures if c["run"] == run or c["run"].split("#")[0] == run]
    pool = mine or captures
    n = 0
    for f in findings:
        want = FINDINGS.get(f.alert)
        if want is None or not pool:
            continue
        phase = f.labels.get("phase")
        same = [c for c in pool if c["reason"] == want and (phase is None or c["phase"] == phase)]
        best = min(same or pool, key=lambda c: abs(c["captured_at"] - f.start))
        f.stacks = best
        n += 1
    return n


def as_json(c: dict) -> dict:
    from .backfill import iso
    return {"captured_at": iso(c["captured_at"]), "reason": c["reason"], "phase": c["phase"],
            "what": c["what"], "pid": c["pid"], "tool": c["tool"], "file": c["file"],
            "threads": c["threads"]}


def text(c: dict, indent: str = " " * 8) -> list[str]:
    from .backfill import iso
    lines = [f"{indent}stack dump ({c['tool']}, pid {c['pid']}) at {iso(c['captured_at'])}: "
             f"{c['what']}; innermost frames first, from {c['file']}"]
    shown = [t for t in c["threads"] if not t["name"].startswith("rl-exporter")] or c["threads"]
    for t in shown:
        state = f" ({t['state']})" if t.get("state") else ""
        more = f" ... {t['depth'] - len(t['frames'])} more" if t["depth"] > len(t["frames"]) else ""
        lines.append(f"{indent}  thread {t['name']}{state}: " + " <- ".join(t["frames"]) + more)
    if len(shown) < len(c["threads"]):
        lines.append(f"{indent}  ({len(c['threads']) - len(shown)} rl-exporter threads: --json has "
                     "them)")
    return lines
