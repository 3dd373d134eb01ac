"""Reading rl-exporter's own JSONL spool back (`rl-exporter parse`, `serve --source
spool:PATH`, doctor and backfill): the format and its writer are in exporter/spool.py; this is
the parser. A lifecycle event record (finished, crashed, paused, resumed) becomes an event
frame (exporter/core/lifecycle.py `event_frame`), which the worker turns into the state the
live path set. A settings record goes with the next frame, under SETTINGS_KEY, which the worker
turns into the rl_config_value series the live run had."""
from __future__ import annotations

import json
import re

from ..core.lifecycle import event_frame
from ..spool import (SETTINGS_KEY, VERSION, decode_data, encode, encode_value,  # noqa: F401
                     event_record, settings_record)
from .base import Frame, Parser, Rule, parse_json, step_of

FORMAT = "spool"
_DETECT = re.compile(r'^\s*\{.*"spool":\s*1\b')


def detect(line: str) -> bool:
    return '"spool"' in line and _DETECT.match(line) is not None
FRAMEWORK = "auto"


class SpoolParser(Parser):
    format = FORMAT
    framework = FRAMEWORK
    summary = ("rl-exporter's own JSONL (the spool format, docs/sidecar.md); the vocabulary is "
               "each record's `framework`")
    # before verl_jsonl, llamafactory, ms_swift and hf: a spooled frame holds any trainer's keys
    rules = (Rule(300, '"spool"', detect,
                  '{"spool":1,"ts":1724312345.1,"run":"grpo","step":12,"data":{"loss":0.5}}'),)

    _settings: dict | None = None  # a settings record waiting for the next frame

    def feed(self, line: str) -> list[Frame]:
        if '"data"' not in line:
            if '"event"' in line:
                ev = self._event(line)
                if ev is not None:
                    return ev
            elif '"settings"' in line:
                try:
                    values = settings_record(parse_json(line.strip()))
                except ValueError:
                    self.rejected["bad_json"] += 1
                    return []
                if not values:  # not a settings record, or none of its values a number
                    self.rejected["schema"] += 1
                    return []
                self._settings = {**(self._settings or {}), **values}
                return []
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
        if self._settings is not None:
            data[SETTINGS_KEY], self._settings = self._settings, None
        return [Frame(step_of(obj.get("step")), data)]

    def _event(self, line: str) -> list[Frame] | None:
        """A lifecycle event record as its event frame; None when the line is not one."""
        try:
            rec = event_record(json.loads(line))
        except (ValueError, RecursionError):
            return None
        if rec is None:
            return None
        fw = rec.get("framework")
        if isinstance(fw, str) and fw and self.framework == "auto":
            self.framework = fw
        return [Frame(step_of(rec.get("step")),
                      event_frame(rec["event"], rec.get("exception"), rec.get("message")))]
