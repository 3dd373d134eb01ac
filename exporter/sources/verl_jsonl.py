"""veRL's `file` logger: one JSON object per line, `{"step": N, "data": {...}}`, written
by orjson (NaN/Inf as null, no spaces). The trainer opens the file with "wb", so it is
truncated on every (re)start: the follower detects that and reads from the start.
A null value stays None (absent for this step, as the hook treats it).
"""
from __future__ import annotations

import json

from .base import Frame, Parser, step_of

FORMAT = "verl_jsonl"
FRAMEWORK = "verl"
_SCALARS = frozenset({int, float, str, type(None)})


class VerlJsonlParser(Parser):
    format = FORMAT
    framework = FRAMEWORK

    def feed(self, line: str) -> list[Frame]:
        s = line.strip()
        if not s.startswith("{"):
            if s:
                self.skipped += 1
            return []
        try:
            obj = json.loads(s)
        except ValueError:
            self.rejected["bad_json"] += 1
            return []
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
            self.rejected["schema"] += 1
            return []
        data = obj["data"]
        if not _SCALARS.issuperset(map(type, data.values())):
            self.rejected["schema"] += 1
            return []
        return [Frame(step_of(obj.get("step")), data)]
