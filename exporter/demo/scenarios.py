"""Failure scenarios for the simulated run. Each one edits the healthy frame from
its onset step on; `t` is steps since onset. Scenarios follow the seeds'
troubleshooting tables (seed 001 section 12, seed 004 sections 11-12, seed 000)."""
from __future__ import annotations

import math


def healthy(frame, t, rng):
    return frame


def entropy_collapse(frame, t, rng):
    # Entropy falls within a few steps, clip fraction climbs, then reward collapses.
    frame["actor/entropy"] = max(0.01, frame["actor/entropy"] * math.exp(-0.35 * t))
    frame["actor/pg_clipfrac"] = min(0.7, frame["actor/pg_clipfrac"] + 0.04 * t)
    if t >= 6:
        drop = min(0.85, 0.1 * (t - 5))
        for k in ("critic/score/mean", "critic/rewards/mean"):
            frame[k] = max(0.02, frame[k] * (1 - drop))
    return frame


def kl_spike(frame, t, rng):
    frame["actor/ppo_kl"] = 0.08 + 0.02 * t + rng.uniform(0, 0.01)
    frame["actor/kl_loss"] = frame["actor/kl_loss"] * (5 + t)
    frame["actor/pg_clipfrac"] = min(0.85, 0.45 + 0.02 * t)
    frame["actor/grad_norm"] = frame["actor/grad_norm"] * 4
    return frame


def nan_loss(frame, t, rng):
    frame["actor/pg_loss"] = float("nan")
    frame["actor/grad_norm"] = float("nan")
    frame["optim/update_outcome"] = "skipped"
    frame["optim/skip_reason"] = "nonfinite_loss"
    frame["optim/nonfinite_skips_consecutive"] = t + 1
    frame["optim/nonfinite_skips_total"] = t + 1
    return frame


def grad_explosion(frame, t, rng):
    frame["actor/grad_norm"] = frame["actor/grad_norm"] * (15 * 1.3 ** t)
    frame["actor/pg_loss"] = frame["actor/pg_loss"] * (5 + t)
    return frame


def length_truncation(frame, t, rng):
    limit = frame["_max_response_length"]
    frame["response_length/mean"] = min(limit * 0.97, frame["response_length/mean"] + 60 * (t + 1))
    frame["response_length/max"] = limit
    frame["response_length/clip_ratio"] = min(0.9, 0.25 + 0.05 * t)
    return frame


def no_signal(frame, t, rng):
    # Every group ties: advantages vanish, the gradient is exactly zero, nothing learns.
    groups = frame["train/grpo_group_count"]
    frame["train/grpo_informative_group_count"] = 0
    frame["train/grpo_tied_group_count"] = groups
    frame["train/grpo_all_zero_group_count"] = groups
    frame["critic/score/mean"] = frame["critic/rewards/mean"] = 0.0
    frame["critic/score/max"] = frame["critic/score/min"] = 0.0
    frame["critic/advantages/mean"] = frame["critic/advantages/max"] = 0.0
    frame["critic/advantages/min"] = 0.0
    frame["actor/grad_norm"] = 0.0
    frame["actor/pg_loss"] = 0.0
    frame["optim/zero_grad_skips_total"] = frame["_zero_grad_base"] + t + 1
    return frame


def stall(frame, t, rng):
    return None  # the trainer hangs: no new frames, the exporter keeps serving


SCENARIOS = {
    "healthy": healthy,
    "entropy-collapse": entropy_collapse,
    "kl-spike": kl_spike,
    "nan-loss": nan_loss,
    "grad-explosion": grad_explosion,
    "length-truncation": length_truncation,
    "no-signal": no_signal,
    "stall": stall,
}
