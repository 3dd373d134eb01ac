"""Mine the metric keys each framework's logging code emitted at each tagged release.

    python tests/data/releases/mine.py [--mirrors /work/.mirror] [FRAMEWORK ...]

Reads full git mirrors (<mirrors>/<owner>+<name>/repo, e.g. from the `fetch` tool), takes the
last patch tag of every minor release since the first with RL training, reads that tag's
logging files with `git show <tag>:<path>` and pulls out key literals in metric-writing
contexts (`metrics["actor/pg_loss"]`, `self._metrics[mode][f"rewards/{name}"]`, dict literals
assigned to a metrics/status dict, slash keys under the framework's own prefixes). f-string
parts become `{name}` placeholders. Writes <framework>.json next to this file (tags, commits,
keys per tag) and the catalog's compact range file exporter/catalog/releases.json.

The extraction is lexical, so it over-collects a little (a key string in a dead branch) and
misses keys built by string arithmetic across statements; tests/unit/catalog/test_releases.py
holds every collected key to "resolves, or is ignored/left on the fallback with a reason".
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

# keys transformers.Trainer.log / train() add to every log of a TRL or ms-swift trainer: emitted
# by every release of those frameworks, whatever their own files write
HF_TRAINER = ("loss", "grad_norm", "learning_rate", "epoch", "eval_loss", "eval_runtime",
              "eval_samples_per_second", "eval_steps_per_second", "train_runtime",
              "train_samples_per_second", "train_steps_per_second", "train_loss", "total_flos")

# framework -> repository, first minor with RL training, logging files, key prefixes (slash keys),
# prefix added to bare keys found in a given context
SPECS = {
    "verl": dict(
        repo="volcengine/verl", since="0.1",
        files=["verl/trainer/ppo/*.py", "verl/workers/actor/*.py", "verl/workers/critic/*.py",
               "verl/workers/fsdp_workers.py", "verl/workers/megatron_workers.py",
               "verl/utils/metric/*.py", "verl/trainer/ppo/metric_utils.py"],
        prefixes=("actor", "critic", "perf", "timing", "timing_s", "timing_per_token_ms", "mfu",
                  "response_length", "prompt_length", "val", "val-core", "val-aux", "training",
                  "global_seqlen", "rollout_corr", "response"),
        # f"{metric_sec}/{data_source}/{var_name}/{metric_name}" in process_validation_metrics
        expand={"metric_sec": ("val-core", "val-aux")},
        bare=()),
    "trl": dict(
        repo="huggingface/trl", since="0.9",
        files=["trl/trainer/grpo_trainer.py", "trl/trainer/rloo_trainer.py",
               "trl/trainer/dpo_trainer.py", "trl/trainer/kto_trainer.py",
               "trl/trainer/ppo_trainer.py", "trl/trainer/online_dpo_trainer.py",
               "trl/experimental/ppo/ppo_trainer.py", "trl/experimental/kto/kto_trainer.py",
               "trl/experimental/online_dpo/online_dpo_trainer.py"],
        prefixes=("completions", "rewards", "clip_ratio", "sampling", "tools", "logps", "logits",
                  "objective", "policy", "loss", "val", "entropy", "num_tokens"),
        bare=("metrics", "_metrics", "stats", "logs"), inherited=HF_TRAINER),
    "openrlhf": dict(
        repo="OpenRLHF/OpenRLHF", since="0.1",
        files=["openrlhf/trainer/ppo_trainer.py", "openrlhf/trainer/ray/ppo_actor.py",
               "openrlhf/trainer/ray/ppo_critic.py", "openrlhf/trainer/ppo_utils/*.py",
               "openrlhf/trainer/dpo_trainer.py", "openrlhf/trainer/rm_trainer.py",
               "openrlhf/trainer/ppo_trainer_async.py", "openrlhf/trainer/ray/*.py"],
        prefixes=("timing", "rollout"),
        bare=("status", "logs_dict", "short_status", "logs", "metrics")),
    "slime": dict(
        repo="THUDM/slime", since="0.1",
        files=["slime/backends/megatron_utils/*.py", "slime/ray/rollout.py",
               "slime/ray/*.py", "slime/utils/*metric*.py", "slime/observability/*.py",
               "slime/rollout/*.py"],
        prefixes=("train", "rollout", "perf", "eval", "passrate", "multi_turn"),
        bare=("reported_loss",), bare_prefix="train/"),
    "miles": dict(
        repo="radixark/miles", since="0.1",
        files=["miles/backends/megatron_utils/*.py", "miles/backends/training_utils/**/*.py",
               "miles/ray/*.py", "miles/utils/*metric*.py", "miles/observability/*.py",
               "miles/rollout/*.py"],
        prefixes=("train", "rollout", "perf", "eval", "passrate", "multi_turn"),
        bare=("reported_loss",), bare_prefix="train/"),
    "swift": dict(
        repo="modelscope/ms-swift", since="3.0",
        files=["swift/trainers/rlhf_trainer/*.py", "swift/rlhf_trainers/*.py",
               "swift/trainers/patcher.py", "swift/trainers/mixin.py", "swift/trainers/trainers.py",
               "swift/trainers/callback.py"],
        prefixes=("completions", "rewards", "clip_ratio", "entropy", "reward", "kl", "logps",
                  "logits", "frac_reward_zero_std", "num_turns", "tools"),
        bare=("metrics", "_metrics", "logs"), inherited=HF_TRAINER),
}

_STRING = r"""(?P<f>[fFrRbB]{0,2})(?P<q>["'])(?P<s>[^"'\n]{1,120}?)(?P=q)"""
_KEYISH = re.compile(r"^[A-Za-z_{][\w@.\-{}/()]*$")
_MODES = {"train", "eval", "test"}  # metrics["train"][key]: the mode index, not a key
_FIELD = re.compile(r"\{[^{}]*\}")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def _release_tags(repo: Path, since: str) -> list[str]:
    """The last patch tag of every minor release from `since` on, oldest first."""
    best: dict[tuple, tuple] = {}
    for tag in _git(repo, "tag").split():
        m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.post(\d+))?", tag)
        if not m:
            continue
        major, minor, patch = int(m[1]), int(m[2]), (int(m[3] or 0), int(m[4] or -1))
        if (major, minor) < tuple(int(x) for x in since.split(".")):
            continue
        if best.get((major, minor), ((-1, -1),))[0] < patch:
            best[(major, minor)] = (patch, tag)
    return [best[k][1] for k in sorted(best)]


def _normalise(raw: str, is_f: bool) -> str:
    s = _FIELD.sub(lambda m: "{" + re.sub(r"\W+", "_", m.group(0)[1:-1]).strip("_") + "}", raw) \
        if is_f else raw
    return s


def _keys_in(text: str, spec: dict) -> set[str]:
    out: set[str] = set()
    prefixes = spec["prefixes"]
    # 1. slash keys under the framework's prefixes, in any string literal
    for m in re.finditer(_STRING, text):
        s = _normalise(m["s"], "f" in m["f"].lower())
        head = re.match(r"^\{(\w+)\}/", s)
        if head and head[1] in spec.get("expand", {}):
            out.update(v + s[len(head[0]) - 1:] for v in spec["expand"][head[1]])
            continue
        if "/" in s and _KEYISH.match(s) and s.split("/")[0] in prefixes and not s.endswith("/"):
            out.add(s)
        elif s.endswith("/") and s[:-1] in prefixes and "{" not in s:
            # "timing/" + name: a family whose member names are run-time values
            out.add(s + "{name}")
    # 2. bare keys written into the framework's metric dicts
    for name in spec["bare"]:
        sub = re.escape(name)
        for m in re.finditer(r"(?<!\w)" + sub + r"(?:\[[^\]\n]{1,40}\])*\[\s*" + _STRING + r"\s*\]",
                             text):
            s = _normalise(m["s"], "f" in m["f"].lower())
            if _KEYISH.match(s) and s not in _MODES:
                out.add(spec.get("bare_prefix", "") + s)
        for m in re.finditer(r"\b" + sub + r"\s*(?::[^=\n]*)?=\s*\{(?P<body>[^{}]*)\}", text):
            for k in re.finditer(_STRING + r"\s*:", m["body"]):
                s = _normalise(k["s"], "f" in k["f"].lower())
                if _KEYISH.match(s) and s not in _MODES:
                    out.add(spec.get("bare_prefix", "") + s)
    # HF-style eval copies: f"{prefix}key" with prefix "eval_" or ""
    out = {k for k in out if not re.search(r"\.(?:pt|json|jsonl|pkl|safetensors)$", k)}
    return {re.sub(r"^\{(?:prefix|metric_key_prefix|mode_prefix)\}_?", "", k) for k in out}


def mine(framework: str, mirrors: Path) -> dict:
    spec = SPECS[framework]
    repo = mirrors / spec["repo"].replace("/", "+") / "repo"
    tags = []
    for tag in _release_tags(repo, spec["since"]):
        commit = _git(repo, "rev-list", "-n1", tag).strip()
        date = _git(repo, "log", "-1", "--format=%cs", commit).strip()
        paths = _git(repo, "ls-tree", "-r", "--name-only", commit).split()
        files = sorted({p for p in paths for g in spec["files"] if fnmatch.fnmatch(p, g)})
        keys: set[str] = set()
        for path in files:
            keys |= _keys_in(_git(repo, "show", f"{commit}:{path}"), spec)
        keys |= set(spec.get("inherited", ()))
        tags.append({"tag": tag, "commit": commit, "date": date, "files": files,
                     "keys": sorted(keys)})
    return {"framework": framework, "repository": spec["repo"], "spec": {
        k: list(v) if isinstance(v, tuple) else v for k, v in spec.items()}, "tags": tags}


def ranges(data: dict) -> dict:
    """key -> [[first tag index, last tag index], ...] over contiguous presence."""
    out: dict[str, list] = {}
    for i, t in enumerate(data["tags"]):
        for k in t["keys"]:
            r = out.setdefault(k, [])
            if r and r[-1][1] == i - 1:
                r[-1][1] = i
            else:
                r.append([i, i])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("frameworks", nargs="*", default=list(SPECS))
    args = ap.parse_args()
    compact_path = ROOT / "exporter" / "catalog" / "releases.json"
    compact = json.loads(compact_path.read_text()) if compact_path.exists() else {}
    for fw in args.frameworks:
        data = mine(fw, Path(args.mirrors))
        (HERE / f"{fw}.json").write_text(json.dumps(data, indent=1) + "\n")
        compact[fw] = {"repository": data["repository"],
                       "tags": [[t["tag"], t["commit"][:12]] for t in data["tags"]],
                       "keys": ranges(data)}
        print(f"{fw}: {len(data['tags'])} releases, {len(compact[fw]['keys'])} distinct keys")
    compact_path.write_text(json.dumps(compact, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
