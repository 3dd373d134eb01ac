"""HF Trainer / TRL.

`hf`: the dicts ProgressCallback prints (`tqdm.write(str(logs))`) or PrinterCallback
(`print(logs)`): a Python dict repr with `nan`, `-0.0`, string values, `eval_` keys,
sometimes with a tqdm bar fused onto the same line (` 5%|▌  | 5/100 [00:30<..]{'loss': ..}`).
HF prints no step: the bar's `n/total` is the global step when present; otherwise an
eval dict takes the last step seen and a train dict has none (the exporter counts).
A dict is only taken as metrics when it has a key HF's Trainer.log always writes
(`epoch`, `loss`, `eval_*`, `train_runtime`, `learning_rate`); other printed dicts
(configs) are skipped.

`hf_state`: `checkpoint-N/trainer_state.json`, a JSON document (not lines) whose
`log_history` entries are `{**logs, "step": global_step}`; NaN written bare. Each new
checkpoint repeats the whole history, so entries are emitted past a high-water mark
(step, entries seen at that step) that is kept in serve's state file.
"""
from __future__ import annotations

import json
import re

from .base import Frame, Parser, parse_pydict, step_of

FORMAT = "hf"
STATE_FORMAT = "hf_state"
FRAMEWORK = "trl"

_BAR_STEP = re.compile(r"\|\s*(\d+)/(\d+) \[")
_HF_KEYS = ("epoch", "loss", "learning_rate", "train_runtime", "grad_norm")


def looks_like_hf(data: dict) -> bool:
    return any(k in data for k in _HF_KEYS) or any(k.startswith("eval_") for k in data)


class HFConsoleParser(Parser):
    format = FORMAT
    framework = FRAMEWORK

    def __init__(self):
        super().__init__()
        self.last_step = None

    def feed(self, line: str) -> list[Frame]:
        i = line.find("{'")
        if i < 0:
            i = line.find('{"')
        j = line.rfind("}")
        if i < 0 or j < i:
            m = _BAR_STEP.search(line)
            if m:
                self.last_step = int(m.group(1))
            self.skipped += 1
            return []
        data, bad = parse_pydict(line[i:j + 1])
        if data is None or not data or not looks_like_hf(data):
            self.skipped += 1
            return []
        if bad:
            self.rejected["malformed_value"] += bad
        m = _BAR_STEP.search(line[:i]) or _BAR_STEP.search(line[j + 1:])
        if m:
            step = int(m.group(1))
            self.last_step = step
        elif all(k.startswith("eval_") or k == "epoch" for k in data):
            step = self.last_step
        else:
            step = None
        return [Frame(step, data)]


class HFStateParser(Parser):
    """Document parser: feed_document(text) -> frames past the high-water mark."""

    format = STATE_FORMAT
    framework = FRAMEWORK
    document = True

    def __init__(self):
        super().__init__()
        self.hw_step = None   # last emitted step
        self.hw_count = 0     # entries emitted at that step

    def feed(self, line: str) -> list[Frame]:  # line-wise use is not supported
        raise TypeError("hf_state is a document format: use feed_document()")

    def feed_document(self, text: str) -> list[Frame]:
        try:
            doc = json.loads(text)
        except ValueError:
            self.rejected["bad_json"] += 1
            return []
        hist = doc.get("log_history") if isinstance(doc, dict) else None
        if not isinstance(hist, list):
            self.rejected["schema"] += 1
            return []
        out = []
        seen_at: dict = {}
        for entry in hist:
            if not isinstance(entry, dict):
                self.rejected["schema"] += 1
                continue
            step = step_of(entry.get("step"))
            n = seen_at.get(step, 0)
            seen_at[step] = n + 1
            if self.hw_step is not None and step is not None:
                if step < self.hw_step or (step == self.hw_step and n < self.hw_count):
                    continue
            data = {k: v for k, v in entry.items() if k != "step"
                    and (v is None or isinstance(v, (int, float, str)))}
            if step is not None:
                if step != self.hw_step:
                    self.hw_step, self.hw_count = step, 0
                self.hw_count += 1
            out.append(Frame(step, data))
        return out

    def checkpoint(self) -> dict:
        return {"hw_step": self.hw_step, "hw_count": self.hw_count}

    def restore(self, state: dict) -> None:
        self.hw_step = state.get("hw_step")
        self.hw_count = int(state.get("hw_count") or 0)
