"""rl-exporter's own JSONL spool format (version 1), one frame per line:

    {"spool": 1, "ts": 1724312345.12, "run": "grpo-7b", "framework": "verl",
     "step": 12, "data": {"actor/entropy": 0.52, "actor/pg_loss": "NaN", "x": null}}

- `spool` (required) is the format version; `data` (required) maps raw trainer keys to
  a number, a string, or null (absent this step);
- non-finite numbers are the strings "NaN", "Infinity", "-Infinity" so every JSON
  parser reads the file (bare NaN, as Python's json writes it, is accepted too);
  any other string value is kept as a string (state-valued keys);
- `step` (int, float or null), `ts` (Unix seconds), `run`, `framework` are optional;
  `framework` is the vocabulary the keys belong to (default auto);
- written by `rl-exporter serve --spool-out PATH` with two more fields, `src` (the
  file the frame came from) and `off` (byte offset in it after the frame's record,
  and `gen`, its generation): serve uses them to resume exactly once after a crash.
The hook writes it too with `Exporter(spool=PATH)` (without src/off).
`rl-exporter parse` and `serve --source spool:PATH` read it back (replay).
"""
from __future__ import annotations

import json
import math
import re

from .base import Frame, Parser, step_of

FORMAT = "spool"
_DETECT = re.compile(r'^\s*\{.*"spool":\s*1\b')


def detect(line: str) -> bool:
    return '"spool"' in line and _DETECT.match(line) is not None
FRAMEWORK = "auto"
VERSION = 1

_DECODE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode_value(v):
    if v.__class__ is float and v - v != 0.0:
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    return v


def encode(frame_step, data: dict, **extra) -> str:
    rec = {"spool": VERSION}
    rec.update(extra)
    rec["step"] = frame_step
    rec["data"] = {k: encode_value(v) for k, v in data.items()}
    return json.dumps(rec, separators=(",", ":"), allow_nan=False)


def decode_data(data: dict) -> dict | None:
    out = {}
    for k, v in data.items():
        if not isinstance(k, str):
            return None
        if v.__class__ is str:
            v = _DECODE.get(v, v)
        elif v is not None and not isinstance(v, (int, float)):
            return None  # nested containers are not frames
        out[k] = v
    return out


class SpoolParser(Parser):
    format = FORMAT
    framework = FRAMEWORK

    def feed(self, line: str) -> list[Frame]:
        obj = self.json_record(line)
        if obj is None:
            return []
        if obj.get("spool") != VERSION:
            self.rejected["schema"] += 1
            return []
        data = decode_data(obj["data"])
        if data is None:
            self.rejected["schema"] += 1
            return []
        fw = obj.get("framework")
        if isinstance(fw, str) and fw and self.framework == "auto":
            self.framework = fw
        return [Frame(step_of(obj.get("step")), data)]
