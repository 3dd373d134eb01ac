"""A simulated GRPO run (veRL-style keys, plus posttrain's group and optimizer-outcome
keys) whose curves follow the seeds' shapes and ranges: reward rising, entropy
decaying, clip fraction 0.05-0.3, PPO KL 0.001-0.01, response lengths with a little
truncation, per-phase timings, throughput, MFU, validation every N steps."""
from __future__ import annotations

import math
import random

from .frames import FrameView
from .pathologies import MAX_RESPONSE_LENGTH, apply
from .scenarios import SCENARIOS, run_settings, side_series

GROUPS = 64


class SimulatedRun:
    def __init__(self, scenario: str = "healthy", seed: int = 0, onset: int = 20,
                 val_every: int = 10, total_steps: int = 300):
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
        self.scenario = scenario
        self.rng = random.Random(seed)
        self.onset = onset
        self.val_every = val_every
        self.total = max(total_steps, 1)
        self.tokens = 0
        self.zero_grad_skips = 0
        self.counters: dict = {}    # the running totals of counters a pathology advances
        self.exporter = None

    def attach(self, exporter) -> None:
        """Also feed the series a deployment gets from outside the trainer (simulated NVML
        sampler, run configuration) straight into `exporter.store`, once per step."""
        self.exporter = exporter

    def side_series(self, step: int):
        return side_series(self.scenario, step, self.onset)

    def frame(self, step: int) -> dict | None:
        """The metrics a trainer would log at `step` (1-based), or None if it logs nothing."""
        r, p = self.rng, min(step / self.total, 1.0)
        noise = lambda s: r.gauss(0, s)  # noqa: E731
        reward = 0.2 + 0.65 / (1 + math.exp(-10 * (p - 0.3))) + noise(0.02)
        entropy = 0.4 + 0.8 * math.exp(-3 * p) + noise(0.02)
        resp = 300 + 150 * p + noise(10)
        warm = min(1.0, step / 10)
        lr = 1e-6 * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))  # cosine to a 10 % floor (min_lr)
        timings = {"gen": 40 + noise(2), "reward": 2 + noise(0.1), "old_log_prob": 8 + noise(0.4),
                   "ref": 6 + noise(0.3), "adv": 0.1, "update_actor": 20 + noise(1),
                   "update_weights": 1.2 + noise(0.05)}
        step_time = sum(timings.values())
        tokens = int(256 * (120 + resp))
        self.tokens += tokens
        informative = int(GROUPS * (0.7 + 0.2 * p) + noise(2))
        informative = max(0, min(GROUPS, informative))
        f = {
            "training/global_step": step,
            "training/epoch": step // 100,
            "critic/score/mean": reward, "critic/score/max": 1.0, "critic/score/min": 0.0,
            "critic/rewards/mean": reward - 0.01, "critic/rewards/max": 1.0,
            "critic/rewards/min": 0.0,
            "critic/advantages/mean": noise(0.02), "critic/advantages/max": 2.3 + noise(0.1),
            "critic/advantages/min": -2.2 + noise(0.1),
            "critic/returns/mean": reward - 0.01,
            "actor/entropy": entropy,
            "actor/pg_loss": noise(0.005),
            "actor/pg_clipfrac": min(0.3, max(0.05, 0.12 + noise(0.03))),
            "actor/pg_clipfrac_lower": abs(noise(0.005)),
            "actor/ppo_kl": max(0.001, 0.004 + noise(0.001)),
            "actor/kl_loss": 0.001 + 0.02 * p + abs(noise(0.001)),
            "actor/kl_coef": 0.001,
            "actor/grad_norm": 0.6 + abs(noise(0.2)),
            "actor/lr": lr,
            "response_length/mean": resp, "response_length/max": min(MAX_RESPONSE_LENGTH, resp * 2.5),
            "response_length/min": 40.0,
            "response_length/clip_ratio": max(0.0, 0.02 + noise(0.01)),
            "prompt_length/mean": 120 + noise(3), "prompt_length/max": 400.0,
            "prompt_length/min": 30.0, "prompt_length/clip_ratio": 0.0,
            "global_seqlen/mean": tokens / 8, "global_seqlen/max": tokens / 8 * 1.08,
            "global_seqlen/min": tokens / 8 * 0.93, "global_seqlen/minmax_diff": tokens / 8 * 0.15,
            "perf/total_num_tokens": tokens,
            "perf/time_per_step": step_time,
            "perf/throughput": tokens / (step_time * 8),
            "perf/mfu/actor": 0.38 + noise(0.01),
            "perf/mfu/actor_infer": 0.22 + noise(0.01),
            "perf/max_memory_allocated_gb": 52 + noise(0.5),
            "perf/max_memory_reserved_gb": 60.0,
            "timing_s/step": step_time,
            # posttrain-style group and optimizer-outcome keys (veRL logs neither)
            "train/grpo_group_count": GROUPS,
            "train/grpo_informative_group_count": informative,
            "train/grpo_tied_group_count": GROUPS - informative,
            "train/grpo_all_zero_group_count": (GROUPS - informative) // 2,
            "train/grpo_all_one_group_count": (GROUPS - informative) - (GROUPS - informative) // 2,
            "optim/update_outcome": "applied",
            "optim/nonfinite_skips_total": 0,
            "optim/nonfinite_skips_consecutive": 0,
            "optim/zero_grad_skips_total": self.zero_grad_skips,
        }
        for name, secs in timings.items():
            f[f"timing_s/{name}"] = secs
        f["timing_per_token_ms/gen"] = timings["gen"] * 1000 / (256 * resp)
        if step % self.val_every == 0:
            f["val-core/openai/gsm8k/acc/mean@1"] = 0.3 + 0.45 * p + noise(0.01)
            f["val-aux/openai/gsm8k/reward/mean@1"] = 0.3 + 0.45 * p + noise(0.01)
        if step == 1:
            # the settings in the first frame too, as a config print precedes the first step: a
            # spool of the demo holds them, so doctor and backfill classify its time as live
            f.update({f"config/{k}": v for k, v in run_settings(self.scenario).items()})
        if self.exporter is not None:
            for metric, value, labels in self.side_series(step):
                self.exporter.store.set(metric, value, labels)
        pathology = SCENARIOS[self.scenario]
        view = FrameView(f, self.counters)
        apply(pathology.before, view, step, r)
        if step >= self.onset:
            if pathology.stop:
                return None
            apply(pathology.edits, view, step - self.onset, r)
            if pathology.call is not None:
                pathology.call(view, step - self.onset, r)
        self.zero_grad_skips = int(f.get("optim/zero_grad_skips_total", self.zero_grad_skips))
        return f
