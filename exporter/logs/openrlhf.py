"""OpenRLHF console.

- logged dicts: `INFO 08-13 19:25:45 ppo_trainer.py:547] ✨ Global step 12: {...}` (the
  async trainer omits ✨); eval: `✨ Evaluation completed in 3.1s, global_step 12,
  eval_metrics: {...}`;
- tqdm postfix: `Episode [1/20]:  50%|█████ | 5/10 [01:00<01:00, 12.0s/it, act_loss=-0.0012,
  reward=0.5, gen_len=412]` (the short names of the status dict). Postfix frames take the
  last logged global step (the bar's own count is per episode). A bar quoted without its
  description (`14/2826 [17:16<36:13:38, 46.38s/it, gpt_loss=1.06, lr=tensor(5.38e-07)]`)
  is read too; torch reprs are unwrapped;
- the status dict early releases (2023) printed after each PPO update, with the short
  names of the bar: `{'pg': -0.0078, 'cri': 0.0099, 'vals': 0.28, 'kl': -0.0015, 'rm': 0.38,
  'ret': 0.39, 'glen': 942.7, 'tlen': 1071.2, 'k_coef': 0.01}`. It carries no step either.
"""
from __future__ import annotations

import re

from .base import NOT_A_NUMBER, Frame, Parser, Rule, number, parse_pydict

FORMAT = "openrlhf"
FRAMEWORK = "openrlhf"

_STEP = re.compile(r"Global step (\d+): (\{.*\})\s*$")
_EVAL = re.compile(r"global_step (\d+), eval_metrics: (\{.*\})\s*$")
_POSTFIX = re.compile(r"(?:^|[|#\s])\s*\d+/\d+ \[[^\]]*?, ((?:[\w/.@-]+=[^,\]]*(?:, )?)+)\]\s*$")
# the early status dict: a bare dict holding the bar's short names
_STATUS = re.compile(r"(\{'(?:pg|policy_loss|act_loss)': .*\})\s*$")
STATUS_KEYS = ("'glen': ", "'tlen': ", "'k_coef': ", "'cri': ")
_DETECT_DICT = re.compile(r"Global step \d+: \{|global_step \d+, eval_metrics: \{")
# a tqdm bar with a k=v postfix: "| 5/10 [01:00<01:00, 12.0s/it, act_loss=-0.0012, ...]"
_DETECT_BAR = re.compile(r"\d+/\d+ \[[^\]]*?, [\w/.@-]+=[-+]?(?:\d|nan|inf)")


def detect_dict(line: str) -> bool:
    """`Global step N: {...}` or `global_step N, eval_metrics: {...}`."""
    return _DETECT_DICT.search(line) is not None


def detect_status(line: str) -> bool:
    """The early status dict: the bar's short names (glen, tlen, cri, k_coef)."""
    return "{'" in line and any(k in line for k in STATUS_KEYS)


def detect_bar(line: str) -> bool:
    return "=" in line and "/" in line and _DETECT_BAR.search(line) is not None


class OpenRLHFParser(Parser):
    format = FORMAT
    framework = FRAMEWORK
    context = True  # lines no rule claims reach it too (a bar whose postfix starts `lr=tensor(`)
    summary = ("`Global step N: {...}`, `global_step N, eval_metrics: {...}`, tqdm postfix "
               "`act_loss=..., reward=...` (also a bar quoted without its description; "
               "`lr=tensor(5.4e-07)` unwrapped) and the short names of early releases (`Train "
               "epoch [1/1]: ... pg=..., rm=..., glen=...`, and the 2023 status dict `{'pg': ..., "
               "'cri': ..., 'glen': ..., 'k_coef': ...}`)")
    rules = (
        # before slime: "Global step 12: {" ends like slime's "step 12: {"
        Rule(700, ": {", detect_dict, "ppo_trainer.py:547] ✨ Global step 12: {'policy_loss': 0.1}"),
        # before hf, the generic dict rule: the status dict is a bare Python dict
        Rule(950, "{'", detect_status, "{'pg': -0.0078, 'cri': 0.0099, 'rm': 0.38, 'glen': 942.7}"),
        # before areal's ASCII table rule (tried last); a bar line has none of the other
        # formats' shapes
        Rule(1400, "=", detect_bar,
             "Episode [1/20]:  50%|█████ | 5/10 [01:00<01:00, 12.0s/it, act_loss=-0.001]"),
    )
    hints = ("Global step", "policy_loss", "act_lr", "Episode [", "Train epoch [")

    def __init__(self):
        super().__init__()
        self.last_step = None

    def feed(self, line: str) -> list[Frame]:
        if "{" in line:
            m = _STEP.search(line) or _EVAL.search(line)
            if m:
                data, bad = parse_pydict(m.group(2))
                if data is None:
                    self.rejected["malformed"] += 1
                    return []
                if bad:
                    self.rejected["malformed_value"] += bad
                self.last_step = int(m.group(1))
                return [Frame(self.last_step, data)]
            m = _STATUS.search(line)
            if m and any(k in line for k in STATUS_KEYS):
                data, bad = parse_pydict(m.group(1))
                if data is None:
                    self.rejected["malformed"] += 1
                    return []
                if bad:
                    self.rejected["malformed_value"] += bad
                return [Frame(self.last_step, data)]
        if "=" in line and "/" in line:
            m = _POSTFIX.search(line)
            if m:
                data = {}
                for item in m.group(1).split(", "):
                    k, _, v = item.partition("=")
                    val = number(v)
                    if val is NOT_A_NUMBER:
                        self.rejected["malformed_value"] += 1
                        continue
                    data[k] = val
                if data:
                    return [Frame(self.last_step, data)]
        self.skipped += 1
        return []
