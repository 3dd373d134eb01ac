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

import re

from .base import Frame, Parser, Rule, dict_end, numeric, parse_json, parse_pydict, step_of

FORMAT = "hf"
STATE_FORMAT = "hf_state"
FRAMEWORK = "trl"

_BAR_STEP = re.compile(r"\|\s*(\d+)/(\d+) \[")
_HF_KEYS = ("epoch", "loss", "learning_rate", "train_runtime", "grad_norm")
_DETECT_KEYS = ("'loss': ", "'epoch': ", "'eval_", "'train_runtime': ", "'learning_rate': ",
                "'grad_norm': ", '"loss": ', '"epoch": ', '"eval_')


def detect(line: str) -> bool:
    """A printed Trainer.log dict: one of the keys it always writes, quoted."""
    return ("{'" in line or '{"' in line) and any(k in line for k in _DETECT_KEYS)


def looks_like_hf(data: dict) -> bool:
    return any(k in data for k in _HF_KEYS) or any(k.startswith("eval_") for k in data)


class HFConsoleParser(Parser):
    format = FORMAT
    aliases = ("trl",)
    framework = FRAMEWORK
    context = True  # the tqdm bars between its dicts say which step each dict was written at
    summary = ("HF Trainer / TRL printed dicts (`{'loss': ..., 'epoch': ...}`, values quoted as "
               "transformers 5.x prints them read as numbers), tqdm bar fused or on its own line; "
               "step from the training bar's `n/total` (a bar history where tqdm.write cleared "
               "the bar dates the dicts printed after it); none when no bar says")
    # the generic dict rule: after every format whose records are dicts holding its keys
    rules = (Rule(1000, "{", detect, "{'loss': 0.6931, 'grad_norm': 1.25, 'epoch': 0.01}"),)
    hints = ("'loss'", "'epoch'", "'learning_rate'", "'grad_norm'", "'reward'", "eval_")

    def __init__(self):
        super().__init__()
        self.last_step = None
        self._dated = None      # last_step when the last train dict took a step
        self._logged: list = []  # steps where a bar redraw history shows a tqdm.write
        self._total = None       # the training bar's total, once a history shows it

    def feed(self, line: str) -> list[Frame]:
        i = line.find("{'")
        if i < 0:
            i = line.find('{"')
        j = dict_end(line, i) if i >= 0 else -1
        if j < 0:
            j = line.rfind("}")
        if i < 0 or j < i:
            self._bar(line)
            self.skipped += 1
            return []
        data, bad = parse_pydict(line[i:j + 1])
        if data is None or not data or not looks_like_hf(data):
            self.skipped += 1
            return []
        if bad:
            self.rejected["malformed_value"] += bad
        m = _training_bar(line[:i]) or _training_bar(line[j + 1:])
        if all(k.startswith("eval_") or k == "epoch" for k in data):
            step = int(m.group(1)) if m else self.last_step
        elif m:
            step = int(m.group(1))
        elif self._logged:  # the bar history said where each dict was written
            step = self._logged.pop(0)
        elif self.last_step is not None and self.last_step != self._dated:
            step = self.last_step  # the bar, on its own line, advanced to this dict's step
        else:
            step = None  # no bar says which step: the exporter counts
        if step is not None and not all(k.startswith("eval_") or k == "epoch" for k in data):
            self.last_step = self._dated = max(step, self.last_step or step)
        return [Frame(step, data)]

    def _bar(self, line: str) -> None:
        """A bar line (or a whole bar history on one line, its redraws run together): the step
        is the last n; a redraw repeated right after itself is where tqdm.write cleared the bar
        to print a dict (ProgressCallback.on_log), so the dicts that follow take those steps.
        Once the training bar is known (the bar of those repeats), other bars (tokenizing,
        saving) are not steps."""
        prev = None
        found: dict = {}  # total -> steps where a dict was written
        last: dict = {}   # total -> last n
        for m in _BAR_STEP.finditer(line):
            n, total = int(m.group(1)), int(m.group(2))
            if total <= 1:
                continue  # a one-item bar (model loading, saving)
            if prev == (n, total) and found.get(total, [None])[-1] != n:
                found.setdefault(total, []).append(n)
            prev = (n, total)
            last[total] = n
        if found and self._total not in found:
            # the bar tqdm.write interrupts is the training bar (a new train() call: a new one)
            self._total = max(found, key=lambda t: len(found[t]))
            self._dated = None
        elif self._total is not None and self.last_step == self._total and \
                any(t != self._total for t in last):
            # the training bar finished; the next bar that runs is the next train() call's
            self._total = next(t for t in last if t != self._total)
            self._dated = None
        if self._total is None or self._total in last:
            total = self._total if self._total in last else prev and prev[1]
            if total:
                self.last_step = last[total]
        if self._total in found and len(found[self._total]) > 1:
            self._logged = [n for n in found[self._total] if self._dated is None or n > self._dated]


def _training_bar(text: str):
    """The bar fused to a dict line, unless it is a one-item bar of another task."""
    for m in _BAR_STEP.finditer(text):
        if int(m.group(2)) > 1:
            return m
    return None


class HFStateParser(Parser):
    """Document parser: feed_document(text) -> frames past the high-water mark."""

    format = STATE_FORMAT
    aliases = ("trainer_state",)
    file_names = ("trainer_state.json",)
    framework = FRAMEWORK
    document = True
    summary = ("`checkpoint-*/trainer_state.json` `log_history` (each new checkpoint's history is "
               "de-duplicated); `auto` knows it by content (a JSON document with `log_history`), "
               "whatever the file is called")

    @staticmethod
    def detect_document(head: str) -> bool:
        """A JSON document with a `log_history` list, whatever the file is called: the head
        of a trainer_state.json is `{`, then the TrainerState fields, log_history among the
        first dozen. Not JSON lines whose later record holds one (ms-swift's logging.jsonl
        ends in a summary record with the whole log_history): there the first line closes
        a record of its own."""
        head = head.lstrip()
        if head[:1] != "{" or '"log_history":' not in head:
            return False
        first = head.split("\n", 1)[0].rstrip()
        return not first.endswith("}") or '"log_history":' in first

    def __init__(self):
        super().__init__()
        self.hw_step = None   # last emitted step
        self.hw_count = 0     # entries emitted at that step

    def feed(self, line: str) -> list[Frame]:  # line-wise use is not supported
        raise TypeError("hf_state is a document format: use feed_document()")

    def feed_document(self, text: str) -> list[Frame]:
        try:
            doc = parse_json(text)
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
            data = {k: numeric(v) for k, v in entry.items() if k != "step"
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
