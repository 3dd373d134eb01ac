"""Which tagged release of a framework emitted which key (mined from the frameworks' git history).

releases.json is written by tests/data/releases/mine.py: per framework, the release tags mined
(the last patch tag of each minor, oldest first, with their commits) and, per key, the tag
index ranges in which the framework's logging code wrote it. A mined key may be a template
(`timing_s/{name}`) whose `{...}` parts are run-time values.
"""
from __future__ import annotations

import json
import re
from functools import cached_property
from pathlib import Path

PATH = Path(__file__).with_name("releases.json")


def _template_regex(key: str) -> re.Pattern:
    parts = re.split(r"\{\w*\}", key)
    return re.compile("^" + "(.+?)".join(re.escape(p) for p in parts) + "$")


class Releases:
    def __init__(self, data: dict):
        self.data = data

    @classmethod
    def load(cls, path: Path = PATH) -> "Releases":
        return cls(json.loads(path.read_text()) if path.exists() else {})

    def frameworks(self) -> list[str]:
        return sorted(self.data)

    def tags(self, framework: str) -> list[str]:
        return [t for t, _ in self.data.get(framework, {}).get("tags", [])]

    def commits(self, framework: str) -> dict[str, str]:
        return dict(self.data.get(framework, {}).get("tags", []))

    @cached_property
    def _templates(self) -> dict[str, list[tuple[re.Pattern, list]]]:
        out = {}
        for fw, d in self.data.items():
            out[fw] = [(_template_regex(k), r) for k, r in d["keys"].items() if "{" in k]
        return out

    def ranges(self, framework: str, key: str) -> list[tuple[int, int]]:
        """Tag-index ranges in which `framework` emitted `key` (exactly or through a template)."""
        d = self.data.get(framework)
        if d is None:
            return []
        found = [tuple(r) for r in d["keys"].get(key, [])]
        if not found:
            for regex, rs in self._templates.get(framework, ()):
                if regex.match(key):
                    found.extend(tuple(r) for r in rs)
        return _merge(found)

    def ranges_of_pattern(self, framework: str, regex: re.Pattern) -> list[tuple[int, int]]:
        """Ranges of every mined key (or template instance) of `framework` the pattern matches."""
        d = self.data.get(framework)
        if d is None:
            return []
        found = []
        for k, inst, rs in self._instances[framework]:
            if regex.match(inst) or (inst is not k and regex.match(k)):
                found.extend(rs)
        return _merge(found)

    @cached_property
    def _instances(self) -> dict[str, list[tuple[str, str, list]]]:
        return {fw: [(k, instance(k) if "{" in k else k, [tuple(r) for r in rs])
                     for k, rs in d["keys"].items()] for fw, d in self.data.items()}

    def span(self, framework: str, ranges) -> tuple[str, str]:
        """(since, until): first tag, and last tag unless the key is still in the latest one."""
        tags = self.tags(framework)
        if not ranges or not tags:
            return "", ""
        last = ranges[-1][1]
        return tags[ranges[0][0]], ("" if last == len(tags) - 1 else tags[last])

    def describe(self, framework: str, ranges) -> str:
        tags = self.tags(framework)
        return ", ".join(tags[a] if a == b else f"{tags[a]}..{tags[b]}" for a, b in ranges)

    def release_indices(self, framework: str, release: str) -> list[int]:
        """Mined tags that belong to `release` ("0.2" -> v0.2, v0.2.0.post2; "0.2.1" -> v0.2.1)."""
        want = release.lstrip("v").split(".")
        out = []
        for i, tag in enumerate(self.tags(framework)):
            have = re.split(r"\.", tag.lstrip("v"))
            if have[:len(want)] == want or (len(want) == 2 and have[:2] == want):
                out.append(i)
        return out

    def emitted_in(self, framework: str, key: str, release: str) -> bool | None:
        """True/False: did `release` emit `key`; None: that release (or framework) was not mined."""
        idx = self.release_indices(framework, release)
        if not idx:
            return None
        return any(a <= i <= b for i in idx for a, b in self.ranges(framework, key))


EXAMPLES = {"name": "gen", "data_source": "gsm8k", "datasource": "gsm8k", "ds": "gsm8k",
            "role_tag": "actor-", "n_samples_per_prompt": "8", "reward_func_name": "accuracy",
            "split": "chosen", "rollout_id": "3", "var_name": "reward", "metric_name": "mean@4"}


def instance(key: str) -> str:
    """One concrete key of a mined template (`timing_s/{name}` -> `timing_s/gen`)."""
    return re.sub(r"\{(\w*)\}", lambda m: EXAMPLES.get(m.group(1), "x"), key)


def _merge(ranges) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(set(ranges)):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [tuple(r) for r in out]


RELEASES = Releases.load()
