"""veRL's `file` logger: one JSON object per line, `{"step": N, "data": {...}}`, written
by orjson (NaN/Inf as null, no spaces). The trainer opens the file with "wb", so it is
truncated on every (re)start: the follower detects that and reads from the start.
A null value stays None (absent for this step, as the hook treats it).
"""
from __future__ import annotations

import re

from .base import Frame, Parser, Rule, step_of

FORMAT = "verl_jsonl"
FRAMEWORK = "verl"
_SCALARS = frozenset({int, float, str, type(None)})
_DETECT = re.compile(r'^\s*\{\s*"step"\s*:\s*-?\d+\s*,\s*"data"\s*:\s*\{')


def detect(line: str) -> bool:
    return '"data"' in line and _DETECT.match(line) is not None


class VerlJsonlParser(Parser):
    format = FORMAT
    aliases = ("jsonl",)
    framework = FRAMEWORK
    summary = ("veRL `file` logger: `{\"step\":N,\"data\":{...}}`, null for NaN; truncated on "
               "every trainer start")
    # before llamafactory, ms_swift and hf: its data object may hold their keys
    rules = (Rule(400, '"data"', detect, '{"step":1,"data":{"actor/entropy":0.52,"actor/kl":null}}'),)

    def feed(self, line: str) -> list[Frame]:
        obj = self.json_record(line)
        if obj is None:
            return []
        data = obj["data"]
        if not _SCALARS.issuperset(map(type, data.values())):
            self.rejected["schema"] += 1
            return []
        return [Frame(step_of(obj.get("step")), data)]
