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
    # One bad update moves the policy (ppo_kl) far more than its distance to the reference:
    # kl_loss (veRL's reference KL) rises too, but nowhere near a runaway.
    frame["actor/kl_loss"] = frame["actor/kl_loss"] * 1.5
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


# ---------------------------------------------------------------- scenarios added for the alerts
# Keys are the real ones of the framework that logs them (veRL first; posttrain, TRL and AReaL
# keys where veRL has none): the run goes through the catalog exactly like a trainer's would.
# PREPARE edits every frame of a scenario (also before onset), so baselines exist.

def _prepare_kl(frame, step, rng):
    frame["train/kl_mean"] = 0.002 + abs(rng.gauss(0, 0.0002))        # posttrain k3 to reference
    frame["train/kl_max"] = 0.05 + abs(rng.gauss(0, 0.005))
    return frame


def kl_token_spike(frame, t, rng):
    # seed 000: kl_max orders of magnitude above kl_mean with a grad-norm jump
    frame["train/kl_max"] = 0.6 + rng.uniform(0, 0.1)
    frame["actor/grad_norm"] = frame["actor/grad_norm"] * 5
    return frame


def _prepare_reference_kl(frame, step, rng):
    # an established KL to the reference inside seed 001's healthy 0.01-0.1
    frame["train/kl_mean"] = 0.03 + abs(rng.gauss(0, 0.002))
    frame["train/kl_max"] = 0.9 + abs(rng.gauss(0, 0.05))
    return frame


def reference_kl_runaway(frame, t, rng):
    grow = min(40.0, 1 + 1.5 * t)   # the policy drifts from the reference, every token a bit
    frame["train/kl_mean"] *= grow
    frame["train/kl_max"] *= grow
    return frame


def _prepare_on_policy(frame, step, rng):
    frame["actor/pg_clipfrac"] = 0.0     # one mini-batch per step: ratio == 1, nothing clips
    frame["actor/pg_clipfrac_lower"] = 0.0
    return frame


def on_policy_clip(frame, t, rng):
    frame["actor/pg_clipfrac"] = 0.02 + abs(rng.gauss(0, 0.003))  # a pi_old bug
    return frame


def _prepare_critic(frame, step, rng):
    frame["critic/vf_explained_var"] = min(0.8, -0.2 + 0.02 * step) + rng.gauss(0, 0.02)
    frame["critic/vf_loss"] = 0.5 + rng.gauss(0, 0.02)
    frame["critic/values/mean"] = frame["critic/rewards/mean"] + rng.gauss(0, 0.02)
    return frame


def critic_not_learning(frame, t, rng):
    frame["critic/vf_explained_var"] = -0.4 + rng.gauss(0, 0.03)
    frame["critic/vf_loss"] = 2.0 + rng.gauss(0, 0.1)
    return frame


def _prepare_dpo(frame, step, rng):
    frame["rewards/accuracies"] = min(0.9, 0.6 + 0.01 * step)   # TRL DPO
    frame["rewards/margins"] = 0.5 + 0.02 * step
    frame["eval_loss"] = 0.9 - 0.005 * step                       # HF/TRL held-out loss
    return frame


def dpo_overfit(frame, t, rng):
    frame["rewards/accuracies"] = 0.995
    frame["rewards/margins"] = 3.0 + 0.1 * t
    frame["eval_loss"] = 0.8 + rng.uniform(0, 0.002)              # validation flat
    return frame


def _prepare_rm(frame, step, rng):
    frame["rm/accuracy"] = 0.8 + rng.gauss(0, 0.01)
    frame["rm/reward_margin"] = 1.5 + rng.gauss(0, 0.05)
    return frame


def rm_margin_collapse(frame, t, rng):
    frame["rm/accuracy"] = 0.55 + rng.gauss(0, 0.01)
    frame["rm/reward_margin"] = max(0.02, 1.5 * math.exp(-0.3 * t))
    return frame


def _prepare_mismatch(frame, step, rng):
    frame["rollout_corr/kl"] = 0.0007 + rng.gauss(0, 0.00003)                # veRL
    frame["train/logprob_gap_mean"] = 0.015 + rng.gauss(0, 0.0005)          # posttrain
    frame["train/logprob_gap_token_count"] = 256 * 400
    return frame


def train_infer_mismatch(frame, t, rng):
    grow = min(12.0, 1 + 0.4 * t)  # MoE routing flips: the gap keeps rising
    frame["rollout_corr/kl"] *= grow
    frame["train/logprob_gap_mean"] *= grow
    return frame


def _prepare_async(frame, step, rng):
    frame["training/off_policy/trajectory_staleness"] = 1.0 + rng.uniform(0, 0.5)
    return frame


def async_staleness(frame, t, rng):
    frame["training/off_policy/trajectory_staleness"] = min(12.0, 2 + 0.5 * t)
    return frame


def load_imbalance(frame, t, rng):
    mean = frame["global_seqlen/mean"]
    frame["global_seqlen/max"] = mean * 2.2
    frame["global_seqlen/minmax_diff"] = mean * 1.6
    # even after veRL's balancing one rank keeps far more tokens (one very long sample)
    frame["global_seqlen/balanced_max"] = mean * 1.9
    frame["global_seqlen/balanced_min"] = mean * 0.8
    return frame


def _prepare_moe(frame, step, rng):
    for layer in (0, 12, 23):
        frame[f"moe_balance/layer_{layer}/max_over_ideal"] = 1.2 + rng.uniform(0, 0.1)  # AReaL
    return frame


def moe_imbalance(frame, t, rng):
    frame["moe_balance/layer_12/max_over_ideal"] = min(4.0, 1.5 + 0.2 * t)
    return frame


def mfu_low(frame, t, rng):
    frame["perf/mfu/actor"] = 0.15 + rng.gauss(0, 0.005)
    return frame


def throughput_drop(frame, t, rng):
    # generation got 10x slower (the rollout engine fell back to eager generation): step time
    # up, tokens/s down to about a fifth
    extra = 9 * frame["timing_s/gen"]
    frame["timing_s/gen"] += extra
    frame["timing_s/step"] += extra
    frame["perf/time_per_step"] += extra
    frame["perf/throughput"] = frame["perf/total_num_tokens"] / (frame["timing_s/step"] * 8)
    return frame


def gpu_memory_full(frame, t, rng):
    frame["perf/max_memory_allocated_gb"] = 76.5
    frame["perf/max_memory_reserved_gb"] = 78.0
    return frame


def gpu_throttle(frame, t, rng):
    # thermal throttling: clocks held down make steps ~20 % slower (not a heat-guard pause,
    # which stops the whole run: report that as a phase, exporter.timer("heat_guard"))
    frame["perf/throughput"] *= 0.8
    return frame


def _prepare_turns(frame, step, rng):
    frame["num_turns/mean"] = 3.0 + rng.gauss(0, 0.1)
    frame["num_turns/max"] = float(6 + rng.randint(0, 2))
    frame["num_turns/min"] = 1.0
    return frame


def multi_turn_runaway(frame, t, rng):
    frame["num_turns/max"] = float(min(64, 20 + 4 * t))
    frame["num_turns/mean"] = 5.0
    return frame


def reward_hacking(frame, t, rng):
    shrink = max(0.35, 1 - 0.06 * t)
    for k in ("response_length/mean", "response_length/max"):
        frame[k] *= shrink
    for k in ("critic/score/mean", "critic/rewards/mean"):
        frame[k] = min(0.98, frame[k] + 0.015 * t)
    return frame


def validation_regression(frame, t, rng):
    for k in list(frame):
        if k.startswith("val-core/") or k.startswith("val-aux/"):
            frame[k] = max(0.0, frame[k] - 0.02 * t)
    return frame


SCENARIOS.update({
    "kl-token-spike": kl_token_spike,
    "reference-kl-runaway": reference_kl_runaway,
    "on-policy-clip": on_policy_clip,
    "critic-not-learning": critic_not_learning,
    "dpo-overfit": dpo_overfit,
    "rm-margin-collapse": rm_margin_collapse,
    "train-infer-mismatch": train_infer_mismatch,
    "async-staleness": async_staleness,
    "load-imbalance": load_imbalance,
    "moe-imbalance": moe_imbalance,
    "mfu-low": mfu_low,
    "throughput-drop": throughput_drop,
    "gpu-memory-full": gpu_memory_full,
    "gpu-throttle": gpu_throttle,
    "multi-turn-runaway": multi_turn_runaway,
    "reward-hacking": reward_hacking,
    "validation-regression": validation_regression,
})

def reward_decline(frame, t, rng):
    # A slow slide (under 1 % a step): each step is close to the one before, so the
    # step-to-step baseline follows it down; only the level held earlier shows the decline.
    level = max(0.1, 0.4 * math.exp(-0.008 * t)) + rng.uniform(-0.01, 0.01)
    frame["critic/score/mean"], frame["critic/rewards/mean"] = level, level - 0.01
    return frame


def length_runaway(frame, t, rng):
    # Answers grow 5 % a step into the limit, a growing share is cut, and the reward stays
    # flat: the cap binds and the extra tokens buy nothing.
    limit = frame["_max_response_length"]
    frame["response_length/mean"] = min(limit * 0.97, frame["response_length/mean"] * (1 + 0.05 * t))
    frame["response_length/max"] = limit
    frame["response_length/clip_ratio"] = min(0.45, 0.02 + 0.01 * t)
    level = 0.4 + rng.uniform(-0.01, 0.01)
    frame["critic/score/mean"], frame["critic/rewards/mean"] = level, level - 0.01
    return frame


def grad_vanishing(frame, t, rng):
    # the veRL metrics guide, section 1.7: below 0.01 the gradient vanishes and learning stalls
    frame["actor/grad_norm"] = 0.002 + abs(rng.gauss(0, 0.001))
    return frame


def dual_clip(frame, t, rng):
    # the dual-clip lower bound (veRL pg_clipfrac_lower) binds far more than its usual < 0.1
    frame["actor/pg_clipfrac_lower"] = 0.3 + abs(rng.gauss(0, 0.02))
    return frame


def _prepare_value_clip(frame, step, rng):
    frame = _prepare_critic(frame, step, rng)
    frame["critic/vf_clipfrac"] = 0.1 + abs(rng.gauss(0, 0.02))
    return frame


def value_clip(frame, t, rng):
    frame["critic/vf_clipfrac"] = 0.7 + abs(rng.gauss(0, 0.02))   # above 0.5: value update restricted
    return frame


def _prepare_optimizer_steps(frame, step, rng):
    # posttrain PPO: policy and critic optimizers each take 4 minibatch steps per iteration
    frame["optim/policy_optimizer_step"] = 4 * step
    frame["optim/critic_optimizer_step"] = 4 * step
    return frame


def optimizer_diverge(frame, t, rng):
    frame["optim/critic_optimizer_step"] -= 4 * (t + 1)            # the critic stopped stepping
    return frame


def _prepare_nonfinite_logp(frame, step, rng):
    frame["ppo_actor/train_infer/nonfinite_logp_fraction"] = 0.0  # AReaL train_infer
    return frame


def nonfinite_logp(frame, t, rng):
    frame["ppo_actor/train_infer/nonfinite_logp_fraction"] = 0.004 + abs(rng.gauss(0, 0.001))
    return frame


def lr_zero(frame, t, rng):
    frame["actor/lr"] = 0.0    # a schedule or config bug zeroes the learning rate mid-run
    return frame


SCENARIOS.update({
    "reward-decline": reward_decline,
    "length-runaway": length_runaway,
    "lr-zero": lr_zero,
    "grad-vanishing": grad_vanishing,
    "dual-clip": dual_clip,
    "value-clip": value_clip,
    "optimizer-diverge": optimizer_diverge,
    "nonfinite-logprob": nonfinite_logp,
})

PREPARE = {
    "value-clip": _prepare_value_clip,
    "optimizer-diverge": _prepare_optimizer_steps,
    "nonfinite-logprob": _prepare_nonfinite_logp,
    "kl-token-spike": _prepare_kl,
    "reference-kl-runaway": _prepare_reference_kl,
    "on-policy-clip": _prepare_on_policy,
    "critic-not-learning": _prepare_critic,
    "dpo-overfit": _prepare_dpo,
    "rm-margin-collapse": _prepare_rm,
    "train-infer-mismatch": _prepare_mismatch,
    "async-staleness": _prepare_async,
    "moe-imbalance": _prepare_moe,
    "multi-turn-runaway": _prepare_turns,
}

GIB = 2.0 ** 30


def side_series(scenario: str, step: int, onset: int) -> list[tuple[str, float, dict]]:
    """Series a real deployment gets from outside the trainer's dict: the NVML sampler (GPU
    memory, clock-event reasons; exporter/gpu.py names) and the run configuration (posttrain's
    n_mini, mini-batches per step). (metric, value, labels) triples written straight into the
    exporter's store."""
    on = step >= onset
    out = [("rl_config_value", 1.0 if scenario == "on-policy-clip" else 4.0, {"parameter": "n_mini"}),
           ("rl_config_value", 5.0, {"parameter": "max_grad_norm"})]
    for gpu in ("0", "1"):
        ident = {"gpu": gpu, "uuid": f"GPU-demo-{gpu}", "gpu_model": "NVIDIA H100 80GB HBM3"}
        used = 54.0 if not (on and scenario == "gpu-memory-full") else 78.6
        out.append(("hw_gpu_memory_usage_bytes", used * GIB, ident))
        out.append(("hw_gpu_memory_limit_bytes", 80.0 * GIB, ident))
        hot = on and scenario == "gpu-throttle" and gpu == "1"
        out.append(("hw_gpu_clock_event_active", 1.0 if hot else 0.0,
                    {**ident, "reason": "hardware_thermal_slowdown"}))
        # at its power limit under full load: normal, not throttling
        out.append(("hw_gpu_clock_event_active", 1.0, {**ident, "reason": "software_power_cap"}))
    return out


# ------------------------------------------------------------------ phases in progress and GPU time
# by phase. The NVML sampler charges each sample to the phase a timer has open (exporter/gpu.py),
# and open timers publish their start (exporter/timers.py LivePhases); the demo writes the same
# series from a simulated schedule: each step's wall time goes 50 % to gen (85 % busy), 30 % to
# update_actor (97 % busy), 20 % outside any timer (5 % busy).
def gen_hang(frame, t, rng):
    # Multi-node GRPO hanging inside generation: no step completes, no log line, GPUs at 0 %.
    return None


def rollout_long_tail(frame, t, rng):
    # A few very long generations hold every step: gen takes 60 % longer and the GPUs sit
    # mostly idle while the batch shrinks to the stragglers.
    extra = 0.6 * frame["timing_s/gen"]
    frame["timing_s/gen"] += extra
    frame["timing_s/step"] += extra
    frame["response_length/max"] = frame["_max_response_length"]
    return frame


SCENARIOS.update({"gen-hang": gen_hang, "rollout-long-tail": rollout_long_tail})

_PHASE_SPLIT = {  # scenario state -> [(phase, share of wall time, busy fraction)]
    "normal": [("gen", 0.5, 0.85), ("update_actor", 0.3, 0.97), ("none", 0.2, 0.05)],
    "hang": [("gen", 1.0, 0.0)],
    "long-tail": [("gen", 0.6, 0.15), ("update_actor", 0.25, 0.97), ("none", 0.15, 0.05)],
}
_phase_state: dict[str, dict] = {}
_side_series_before_phases = side_series


def phase_series(scenario: str, step: int, onset: int, now: float | None = None) -> list:
    """Per-phase GPU seconds, phase medians and (gen-hang) the open gen phase, in wall time."""
    import time as _time
    now = _time.time() if now is None else now
    st = _phase_state.get(scenario)
    if st is None or step <= st["step"]:
        st = _phase_state[scenario] = {"step": step, "last": now, "dts": [], "acc": {},
                                       "hang_start": None}
    dt = max(0.0, now - st["last"])
    st["step"], st["last"] = step, now
    if dt:
        st["dts"] = (st["dts"] + [dt])[-20:]
    on = step >= onset
    mode = "normal"
    if on and scenario == "gen-hang":
        mode = "hang"
        if st["hang_start"] is None:
            st["hang_start"] = now
    elif on and scenario == "rollout-long-tail":
        mode = "long-tail"
    out = []
    step_s = sorted(st["dts"])[len(st["dts"]) // 2] if st["dts"] else 0.0
    if mode != "hang":
        for phase, share, _ in _PHASE_SPLIT[mode][:2]:
            out.append(("rl_phase_recent_median_duration_seconds", share * step_s, {"phase": phase}))
    if st["hang_start"] is not None:
        out.append(("rl_phase_in_progress_start_timestamp_seconds", st["hang_start"], {"phase": "gen"}))
    util = 0.0 if mode == "hang" else sum(sh * b for _, sh, b in _PHASE_SPLIT[mode])
    for gpu in ("0", "1"):
        ident = {"gpu": gpu, "uuid": f"GPU-demo-{gpu}", "gpu_model": "NVIDIA H100 80GB HBM3"}
        out.append(("hw_gpu_utilization_ratio", util, {**ident, "task": "general"}))
        for phase, share, busy in _PHASE_SPLIT[mode]:
            acc = st["acc"].setdefault((gpu, phase), [0.0, 0.0])
            acc[0] += dt * share * busy
            acc[1] += dt * share * (1 - busy)
        for (g, phase), (b, i) in st["acc"].items():
            if g == gpu:
                out.append(("hw_gpu_phase_busy_seconds_total", b, {**ident, "phase": phase}))
                out.append(("hw_gpu_phase_idle_seconds_total", i, {**ident, "phase": phase}))
    return out


def side_series(scenario: str, step: int, onset: int) -> list[tuple[str, float, dict]]:  # noqa: F811
    return _side_series_before_phases(scenario, step, onset) + phase_series(scenario, step, onset)


# ------------------------------------------------------------------ hang forensics and restarts
# (exporter/stacks.py, exporter/core/goodput.py). `hang`: from the onset the trainer is stuck inside
# timer("update_actor") in a collective that never completes; the exporter's hang watch
# captures every thread's stack (GET /debug/stacks). `crash-loop`: the run saves a checkpoint
# at the onset step, then crashes every CRASH_EVERY steps and resumes from that checkpoint, so
# it never gets past it; the goodput's restart bucket grows while every step looks healthy.
CRASH_EVERY = 4


def hang(frame, t, rng):
    return None  # the demo loop blocks in hang_block() instead of logging


def crash_loop(frame, t, rng):
    saved = frame["training/global_step"] - t  # the checkpoint is the onset step's
    if t == 0:
        frame["timing_s/save_checkpoint"] = 30.0 + rng.gauss(0, 1)
        return frame
    frame["training/global_step"] = saved + 1 + (t - 1) % CRASH_EVERY
    return frame


def all_reduce_that_one_rank_never_joins(event):
    event.wait()  # stands in for a collective a dead peer never enters


def hang_block(exporter, interval: float) -> None:
    """The hang scenario's trainer from its onset: stuck in update_actor for good. The hang
    watch's thresholds are scaled to the demo's step interval so the stacks come in seconds."""
    import threading

    from ..core.thresholds import HangThresholds
    wait = max(10 * interval, 5.0)
    exporter.hang_watch.thresholds = HangThresholds(phase_floor_s=wait, phase_no_history_s=wait,
                                                    stall_floor_s=2 * wait)
    if exporter.url:
        print(f"stuck inside update_actor: stacks in about {wait:.0f} s at "
              f"{exporter.url[:-len('/metrics')]}/debug/stacks", flush=True)
    with exporter.timer("update_actor"):
        all_reduce_that_one_rank_never_joins(threading.Event())


SCENARIOS.update({"hang": hang, "crash-loop": crash_loop})
BLOCKING = {"hang": hang_block}  # scenario -> what the demo loop runs instead of a frame
