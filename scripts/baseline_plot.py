"""docs/img/baseline-trl-entropy.png: a run leaving its band (matplotlib).

    PYTHONPATH=. python3 scripts/baseline_plot.py

Left: the TRL GRPO recipe's rl_entropy band, learned from three healthy seeds, with the
entropy_collapse recording leaving it. Right: the veRL Qwen2.5-0.5B PPO gsm8k recipe's rl_score
band from its 512-token run, with the 256-token run held out inside it.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from exporter.postmortem import baseline as bl  # noqa: E402
from exporter.postmortem import deviation as dv  # noqa: E402

DATA = os.path.join(REPO, "tests", "data")
OUT = os.path.join(REPO, "docs", "img", "baseline-trl-entropy.png")
QWEN = os.path.join(DATA, "runs", "verl", "eric-haibin-lin_verl-data_qwen25-05b-ppo-gsm8k-")


def panel(ax, doc, key, healthy, run, title):
    for h in healthy:
        xs, ys = zip(*h.series(key))
        ax.plot(xs, ys, color="0.6", lw=0.8)
    for a, b, lo, hi in doc["bands"][key]:
        ax.fill_between([a, b], [lo, lo], [hi, hi], color="tab:green", alpha=0.25, lw=0)
    xs, ys = zip(*run.series(key))
    ax.plot(xs, ys, color="tab:red", lw=1.2, label=run.name)
    for f in dv.deviations(doc, run):
        if f["metric"] == bl.parse_key(key)[0] and f["labels"] == bl.parse_key(key)[1]:
            ax.axvline(f["step"], color="tab:red", ls="--", lw=0.8)
            ax.annotate(f"left its band at step {f['step']}", (f["step"], f["value"]),
                        xytext=(10, 10), textcoords="offset points", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("training step")
    ax.set_ylabel(key)
    ax.legend(fontsize=7, loc="best")


def main() -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    seeds = [bl.read_run(os.path.join(DATA, "trl", "healthy.spool"))] + [
        bl.read_run(os.path.join(DATA, "baselines", f"healthy_seed{i}.spool")) for i in (1, 2)]
    doc = bl.learn(seeds)
    bad = bl.read_run(os.path.join(DATA, "trl", "entropy_collapse.spool"))
    q512, q256 = bl.read_run(QWEN + "resp512.log"), bl.read_run(QWEN + "resp256.log")
    qdoc = bl.learn([q512])
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), dpi=110)
    panel(axes[0], doc, "rl_entropy", seeds, bad,
          "TRL GRPO: band from 3 healthy seeds (grey), entropy_collapse (red)")
    panel(axes[1], qdoc, "rl_score", [q512], q256,
          "veRL PPO Qwen2.5-0.5B gsm8k: 256-token run (red) in the 512-token run's band")
    fig.tight_layout()
    fig.savefig(OUT)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
