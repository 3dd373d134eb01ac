"""Leave-one-out on real runs: each recipe's held-out healthy run against bands learned from
its other healthy runs, and each failed run against bands from all of them, side by side with
the step the fixed-threshold doctor alert fired.

    PYTHONPATH=. python3 scripts/baseline_loo.py [--corpus tests/data/runs/verl] [--json]

Prints a markdown table (docs/baselines.md holds its last output).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from exporter.postmortem import baseline as bl  # noqa: E402
from exporter.postmortem import deviation as dv  # noqa: E402

TRL = os.path.join(REPO, "tests", "data", "trl")
BASE = os.path.join(REPO, "tests", "data", "baselines")
OPD = "jianghoucheng_agent_on_policy_distillation_"
QWEN = "eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-"


def recipes(corpus: str) -> list[dict]:
    c = lambda n: os.path.join(corpus, n)  # noqa: E731
    return [
        {"recipe": "TRL GRPO, tiny Llama (tests/data/trl)", "doctor": ["--clock", "fixed", "--step-seconds", "60"],
         "healthy": [os.path.join(TRL, "healthy.spool"), os.path.join(BASE, "healthy_seed1.spool"),
                     os.path.join(BASE, "healthy_seed2.spool")],
         "failed": [os.path.join(TRL, f"{n}.spool") for n in
                    ("lr_x1000", "entropy_collapse", "constant_reward", "truncation")],
         # the metric each pathology is about
         "watch": {"lr_x1000": "rl_reference_kl", "entropy_collapse": "rl_entropy",
                   "constant_reward": "rl_grad_norm", "truncation": "rl_response_truncated_ratio"}},
        {"recipe": "veRL PPO Qwen2.5-0.5B gsm8k (eric-haibin-lin/verl-data)", "doctor": [],
         "healthy": [c(QWEN + "resp512.log"), c(QWEN + "resp256.log")], "failed": [], "watch": {}},
        {"recipe": "veRL on-policy distillation (jianghoucheng/Agent_On_Policy_Distillation)",
         "doctor": [], "healthy": [c(OPD + "ry3hgbx5.log")],
         "failed": [c(OPD + n + ".log") for n in ("gjvwlq13_collapse", "yeu8r64c", "do7bl4gg",
                                                   "i80f2v90_collapse")],
         "watch": {"gjvwlq13_collapse": "rl_grad_norm", "yeu8r64c": "rl_response_length_tokens",
                   "do7bl4gg": "rl_response_truncated_ratio", "i80f2v90_collapse": "rl_entropy"}},
    ]


def key(findings):
    return [f for f in findings if f["metric"] in bl.KEY_METRICS]


def first(findings) -> str:
    if not findings:
        return "inside"
    f = findings[0]
    lab = dv._label_text(f["labels"])
    return f"{f['metric']}{'{' + lab + '}' if lab else ''} @ {f['step']}"


def watched(findings, metric: str | None) -> str:
    if metric is None:
        return "-"
    hits = [f for f in findings if f["metric"] == metric and not f["labels"]]
    return f"{metric} @ {hits[0]['step']}" if hits else f"{metric} inside"


def doctor_alerts(path: str, extra: list) -> str:
    p = subprocess.run([sys.executable, "-m", "exporter.cli", "doctor", path, "--json", *extra],
                       capture_output=True, text=True, cwd=REPO, timeout=900,
                       env=dict(os.environ, PYTHONPATH=REPO))
    rows = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    fired = [r for r in rows if r.get("alert")]
    if p.returncode:
        return f"doctor failed: {p.stderr.strip()[-200:]}"
    seen: dict = {}
    for f in fired:
        seen.setdefault(f["alert"], f["step"])
    return ", ".join(f"{a} @ {s}" for a, s in seen.items()) if seen else "none fired"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "runs", "verl"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows = []
    for r in recipes(a.corpus):
        runs = {p: bl.read_run(p) for p in r["healthy"] + r["failed"] if os.path.exists(p)}
        healthy = [runs[p] for p in r["healthy"] if p in runs]
        for i, h in enumerate(healthy):
            others = healthy[:i] + healthy[i + 1:]
            if not others:
                continue
            doc = bl.learn(others)
            f = dv.deviations(doc, h)
            rows.append({"recipe": r["recipe"], "run": h.name, "label": "healthy (held out)",
                         "learned_from": len(others), "key_first": first(key(f)),
                         "any_first": first(f), "watch": "-", "doctor": "-",
                         "banded": len(doc["bands"])})
        doc = bl.learn(healthy)
        for p in r["failed"]:
            if p not in runs:
                continue
            f = dv.deviations(doc, runs[p])
            short = os.path.basename(p).split(".")[0]
            pathology = next((m for n, m in r["watch"].items() if short.endswith(n)), None)
            rows.append({"recipe": r["recipe"], "run": runs[p].name, "label": "failed",
                         "learned_from": len(healthy), "key_first": first(key(f)),
                         "any_first": first(f), "watch": watched(f, pathology),
                         "doctor": doctor_alerts(p, r["doctor"]),
                         "banded": len(doc["bands"])})
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| recipe | run | label | healthy runs learned from | first key metric out @ step "
          "| first series out @ step | the pathology's metric out @ step "
          "| fixed-rule doctor alerts @ first step |")
    print("|---|---|---|---|---|---|---|---|")
    for x in rows:
        print(f"| {x['recipe']} | {x['run']} | {x['label']} | {x['learned_from']} | "
              f"{x['key_first']} | {x['any_first']} | {x['watch']} | {x['doctor']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
