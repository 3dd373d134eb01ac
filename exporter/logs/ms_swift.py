"""ms-swift (a TRL/HF-Trainer based framework; `swift sft|rlhf|pt`).

Every logging step it prints, and appends to `<output_dir>/logging.jsonl`, one dict of the
trainer's logs plus its own progress fields:

    {'loss': 1.47, 'grad_norm': 10.5, 'epoch': 0.01, 'global_step/max_steps': '1/94',
     'percentage': '1.06%', 'elapsed_time': '2s', 'remaining_time': '4m 28s',
     'memory(GiB)': 4.87, 'train_speed(iter/s)': 0.345807}
    {"loss": 0.0, "reward": 0.0, "frac_reward_zero_std": 1.0, ..., "global_step/max_steps": "1/10000"}

- as a Python dict repr (console) or JSON (logging.jsonl); recent releases print every
  value as a string ('loss': '1.461'), read back as numbers;
- the step is the N of `global_step/max_steps` (`global_step` in 2.x releases, which also
  had `acc` where 3.x has `token_acc`); the other progress strings (percentage,
  elapsed/remaining time) are dropped: they are derived, not metrics;
- a dict copied without its braces (`'loss': -0.0, ..., 'global_step/max_steps': '5/3766'`)
  is read the same way.
"""
from __future__ import annotations

import re

from .base import NOT_A_NUMBER, Frame, Parser, Rule, number, parse_json, parse_pydict, step_of

FORMAT = "ms_swift"
# ms-swift's keys are TRL's plus its own progress keys: the catalog's "swift" vocabulary
# (the format name "ms_swift" is one of that vocabulary's aliases, a separate namespace)
FRAMEWORK = "swift"
STEP_KEY = "global_step/max_steps"
_PROGRESS = frozenset({"percentage", "elapsed_time", "remaining_time"})
_STEP = re.compile(r"^\s*(\d+)\s*/\s*\d+\s*$")


def detect(line: str) -> bool:
    """HF's own log dicts never hold global_step; ms-swift 2.x added it (3.x: .../max_steps),
    also in a dict pasted without its braces."""
    return STEP_KEY in line or ("{" in line and ("'global_step': " in line
                                                 or '"global_step": ' in line))


class MsSwiftParser(Parser):
    format = FORMAT
    aliases = ("swift", "ms-swift")
    framework = FRAMEWORK
    summary = ("ms-swift printed dicts and `logging.jsonl` lines (`'global_step/max_steps': "
               "'2/4389'`, 2.x `'global_step': N`), values printed as strings read as numbers; "
               "step from `global_step`")
    # before openrlhf, slime and hf: its dicts are HF's plus global_step (also pasted
    # without their braces)
    rules = (Rule(600, "global_step", detect,
                  "{'loss': 1.47, 'epoch': 0.01, 'global_step/max_steps': '1/94'}"),)
    hints = ("global_step", "max_steps", "'memory(GiB)'", "train_speed", "frac_reward_zero_std")

    def feed(self, line: str) -> list[Frame]:
        if STEP_KEY not in line and "'global_step': " not in line \
                and '"global_step": ' not in line:
            self.skipped += 1
            return []
        raw = self._dict(line)
        if raw is None:
            self.rejected["malformed"] += 1
            return []
        step = None
        data = {}
        for k, v in raw.items():
            if k == STEP_KEY:
                m = _STEP.match(str(v))
                step = int(m.group(1)) if m else None
                continue
            if k == "global_step" and step_of(v) is not None:
                step = step_of(v)  # kept in data too: the catalog knows it as a step key
            if k in _PROGRESS:
                continue
            if isinstance(v, str):
                val = number(v)
                if val is NOT_A_NUMBER:
                    continue  # a string-valued log entry (a status), not a number
                v = val
            elif not (v is None or isinstance(v, (int, float))):
                self.rejected["malformed_value"] += 1
                continue
            data[k] = v
        if not data:
            self.skipped += 1
            return []
        return [Frame(step, data)]

    def _dict(self, line: str) -> dict | None:
        i = line.find("{")
        j = line.rfind("}")
        if i >= 0 and j > i and line[i + 1:i + 2] == '"':
            try:
                obj = parse_json(line[i:j + 1])
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                return obj
        if i < 0:  # pasted without braces: rebuild them around the pairs
            k = line.find("'")
            if k < 0:
                return None
            text = "{" + line[k:].rstrip().rstrip("}") + "}"
        else:
            text = line[i:j + 1] if j > i else line[i:] + "}"
        data, bad = parse_pydict(text)
        if bad:
            self.rejected["malformed_value"] += bad
        return data
