"""LLaMA-Factory's `trainer_log.jsonl`: one JSON object per logging step, written by its
LogCallback from the HF Trainer's last log entry (see catalog/frameworks/llamafactory.py):

    {"current_steps": 1, "total_steps": 5100, "loss": 0.6491, "lr": 9.8e-10, "epoch": 0.0019,
     "percentage": 0.02, "elapsed_time": "0:01:03", "remaining_time": "3 days, 17:51:32"}

The step is `current_steps`. A value that is not a number (the time strings) is dropped;
`null` (a key the step did not log) stays None, absent as the hook treats it.
"""
from __future__ import annotations


from .base import Frame, Parser, Rule, numeric, parse_json, step_of

FORMAT = "llamafactory"
FRAMEWORK = "llamafactory"
ALIASES = ("llama_factory", "llama-factory", "trainer_log")
STEP_KEY = "current_steps"
MARK = '"current_steps"'  # detection: every record holds it, no other trainer writes it


def detect(line: str) -> bool:
    return MARK in line and line.lstrip()[:1] == "{" and '"total_steps"' in line


class LlamaFactoryParser(Parser):
    format = FORMAT
    aliases = ALIASES
    framework = FRAMEWORK
    summary = ("LLaMA-Factory's `trainer_log.jsonl` (`{\"current_steps\": N, \"total_steps\": T, "
               "\"loss\": ..., \"lr\": ...}`); step `current_steps`")
    # before hf: every record holds HF's "loss" and "epoch"
    rules = (Rule(500, MARK, detect, '{"current_steps": 1, "total_steps": 5100, "loss": 0.6491, '
                                    '"lr": 9.8e-10, "epoch": 0.0019}'),)

    def feed(self, line: str) -> list[Frame]:
        s = line.strip()
        if not s.startswith("{") or MARK not in s:
            if s:
                self.skipped += 1
            return []
        try:
            obj = parse_json(s)
        except ValueError:
            self.rejected["bad_json"] += 1
            return []
        if not isinstance(obj, dict):
            self.rejected["schema"] += 1
            return []
        data = {}
        for k, v in obj.items():
            v = numeric(v)
            if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)):
                data[k] = v
            elif isinstance(v, bool):
                data[k] = int(v)
        return [Frame(step_of(obj.get(STEP_KEY)), data)]
