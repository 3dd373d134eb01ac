"""RL run overview: the sources' order of attention (the RL metrics dictionary, sections 1-12, the veRL metrics guide
section 11.3): firing alerts, validation, reward/score, policy health, critic, lengths,
GRPO groups, optimizer outcome, timing, throughput, MFU, GPU summary."""
from __future__ import annotations

from . import names as n
from .common import (ABORTED, ALERTS, CRITIC, ENTROPY_UPDATE, EVAL_LOSS, FLOPS, GPU, NEXT_LR, RATE,
                     REFERENCE_KL, REWARD, RUN_THROUGHPUT, SKIP_REASON, STALL_RED, STALL_YELLOW, TIMER, TOTAL_LOSS,
                     ZERO_STD, bars, hist_heatmap, mean, q, qi, sel, stall_ratio, stat, steps_per_minute, table,
                     timeline, ts)
from .model import Dashboard, Row

RATIO = dict(unit="percentunit", min=0, max=1)
GOODPUT = "rl_goodput_seconds_total"

OUTCOME_CODES = [("accumulating", 1, "blue"), ("applied", 2, "green"), ("skipped", 3, "orange"),
                 ("discarded", 4, "red")]
SKIP_CODES = [("nonfinite_loss", 1, "red"), ("nonfinite_gradient", 2, "dark-red")]


def state_code(metric: str, codes) -> str:
    """One numeric series per run from a state metric (one 0/1 series per state)."""
    parts = [sel(metric, 'state="%s"' % s) + f" * {code}" for s, code, _ in codes]
    return "max by (run) (" + " or ".join(parts) + ")"


def state_mappings(codes) -> list[dict]:
    return [{"type": "value", "options": {str(code): {"text": s, "color": color, "index": i}}}
            for i, (s, code, color) in enumerate(codes)]


ALERT_TABLE_TRANSFORMS = [
    {"id": "organize", "options": {
        "excludeByName": {"Time": True, "Value": True, "__name__": True, "alertstate": True},
        "indexByName": {"severity": 0, "alertname": 1, "run": 2},
        "renameByName": {}}},
]

ALLOCATED_PEAK = sel("rl_gpu_memory_peak_bytes", 'kind="allocated"')

ROWS = [
    Row("Firing alerts", [
        table("Firing alerts for the selected runs",
              "Every alert from the rl-exporter rules that is firing now for the selected runs, "
              "most severe first. Each alert's runbook names the panel to open next.",
              "empty. A critical alert is a symptom (reward collapsed, run stalled, NaN loss); a "
              "warning is a cause to check (entropy collapse, clip fraction high).",
              qi('ALERTS{alertstate="firing", run=~"$run"}', "{{alertname}}", format="table",
                 gate=ALERTS),
              width=16, height=6, transformations=ALERT_TABLE_TRANSFORMS, sort_by="severity", sort_desc=False),
        stat("Firing alerts",
             "Number of alerts firing now for the selected runs.",
             "0.",
             qi('count(ALERTS{alertstate="firing", run=~"$run"}) or vector(0)', "firing"),
             unit="short", min=0, thresholds=[(None, "green"), (1, "red")], width=4, height=6),
        stat("Last step age (in step lengths)",
             "Seconds since the training step last advanced, divided by max(6 min, the run's "
             "longest step of the last 5h20m) (worst run shown).",
             "below 3; 5 is where RLRunStalled pages, whether a step takes 15 s or 30 min.",
             qi(f"max({stall_ratio()})", "age"),
             unit="none", decimals=1, min=0,
             thresholds=[(None, "green"), (STALL_YELLOW, "yellow"), (STALL_RED, "red")],
             width=4, height=6),
    ]),
    Row("1. Validation: did the model get better?", [
        ts("Validation score (core)",
           "Held-out score per data source, e.g. veRL val-core/<source>/acc/mean@1: the number to "
           "watch first (the RL metrics dictionary, section 1).",
           "rises steadily with the step; flat for long or falling means go back through the rows "
           "below (training process first, then data).",
           q(sel("rl_validation_score", 'tier="core"'),
             "{{run}} {{data_source}} {{var}}/{{estimator}}@{{n}}"),
           unit="none", decimals=3, width=12),
        ts("Validation score (aux) and loss",
           "Auxiliary held-out numbers: val-aux reward/turns and, where the trainer computes one, "
           "the held-out loss.",
           "aux reward tracks core accuracy for rule rewards (the RL metrics dictionary, section 1); held-out loss "
           "falls. Aux rising while core is flat means the reward is being gamed.",
           q(sel("rl_validation_score", 'tier!="core"'),
             "{{run}} {{data_source}} {{var}}/{{estimator}}@{{n}}"),
           q(mean("rl_validation_loss"), "{{run}} held-out loss", gate=EVAL_LOSS),
           unit="none", decimals=3, width=12),
    ]),
    Row("2. Reward and score: is training improving?", [
        ts("Reward and raw score",
           "Raw task score, the trainer's reward before KL shaping (TRL, OpenRLHF, AReaL, posttrain) "
           "and, where a framework logs it, the reward after the in-reward KL (veRL critic/rewards, "
           "TRL PPO objective/rlhf_reward) per step (the veRL metrics guide section 11.3 panel 1).",
           "rises with the step (critic/score/mean up, the veRL metrics guide, section 11.1); a sharp drop is the "
           "reward-collapse symptom: check entropy and clip fraction next (the RL metrics dictionary, section 12).",
           q(mean("rl_score"), "{{run}} score"), q(mean("rl_reward"), "{{run}} reward", gate=REWARD),
           q(mean("rl_shaped_reward"), "{{run}} reward after KL shaping"),
           unit="none", decimals=3, band=("rl_score", "rl_reward", "rl_shaped_reward")),
        ts("Reward range (min/max)",
           "Best and worst sequence score (and reward, where the trainer logs one before KL shaping) in "
           "the batch.",
           "max reaches the top score early (the veRL metrics guide, section 11.4: score/max 1.0 means some "
           "samples succeed); max stuck at the floor means no sample ever succeeds.",
           q(sel("rl_score", 'stat=~"min|max", split=""'), "{{run}} score {{stat}}"),
           q(sel("rl_reward", 'stat=~"min|max", split=""'), "{{run}} reward {{stat}}", gate=REWARD),
           unit="none", decimals=3),
        ts("Advantages and returns",
           "Mean advantage (GAE or group-normalised) with its min/max, and mean return.",
           "advantage mean near 0 with a symmetric min/max for group-normalised estimators; "
           "min = max = 0 means every group tied and nothing is learned.",
           q(sel("rl_advantage", 'split=""'), "{{run}} advantage {{stat}}"),
           q(mean("rl_return"), "{{run}} return"),
           unit="none", decimals=3),
    ]),
    Row("3. Policy health: loss, gradient, entropy, KL, clipping, LR", [
        ts("Policy loss",
           "The policy-gradient (clipped surrogate) loss and, where logged, the total optimised loss.",
           "pg_loss noisy around 0, roughly -0.01..0.01 (the veRL metrics guide, section 12, heuristic); it need "
           "not fall monotonically (the RL metrics dictionary, section 2.1) but a sustained climb is a problem.",
           q(mean("rl_policy_loss"), "{{run}} policy"),
           q(mean("rl_loss"), "{{run}} total", gate=TOTAL_LOSS),
           unit="none", decimals=4, band=("rl_policy_loss",)),
        ts("Gradient norm",
           "Policy gradient L2 norm before clipping.",
           "fluctuates inside a steady band; a jump to more than 10x its usual level is "
           "an explosion (the RL metrics dictionary, section 2.2); sitting exactly at grad_clip means the LR is too "
           "high (the veRL metrics guide, section 11.2). 0 means no gradient.",
           q(mean("rl_grad_norm")), unit="none", decimals=3, log_scale=True, band=("rl_grad_norm",)),
        ts("Entropy",
           "Mean token entropy of the policy; where a framework also logs it inside the update "
           "(veRL actor/entropy_loss, slime/Miles train/entropy_loss: the entropy itself, not a "
           "loss term), that curve too.",
           "high early, slowly decaying (the RL metrics dictionary, section 2.3; 0.1-0.5 late in "
           "training, the veRL metrics guide). A fall within a few steps is policy collapse; never "
           "falling means nothing is learned. Miles writes 0 for the update-pass entropy when "
           "neither an entropy coefficient nor --observe-training-entropy is set (the Miles lab "
           "runs: 0): not computed, not collapsed.",
           q(mean("rl_entropy", 'phase=""'), "{{run}} entropy"),
           q(mean("rl_entropy", 'phase="update"'), "{{run}} entropy (update pass)", gate=ENTROPY_UPDATE),
           unit="none", decimals=3, min=0, band=("rl_entropy",)),
        ts("Policy KL (old vs new)",
           "Approximate KL between the sampling policy and the updated policy inside the PPO ratio "
           "(veRL actor/ppo_kl).",
           "0.001-0.01 and stable or falling (the veRL metrics guide, sections 11.1 and 12, heuristic); above "
           "0.05 is too large (the veRL metrics guide, section 11.4): lower the LR. Thresholds: yellow 0.01, red 0.05.",
           q(mean("rl_policy_kl")), unit="none", decimals=4, min=0,
           thresholds=[(None, "green"), (0.01, "yellow"), (0.05, "red")], band=("rl_policy_kl",)),
        ts("KL to reference",
           "KL of the policy to the frozen reference: the KL loss term and the measured KL.",
           "grows slowly and steadily; a jump (e.g. 0.02 to 0.15, the RL metrics dictionary, section 2.4) means the "
           "policy is turning sharply; PPO runs usually hold it around 0.01-0.1 (the RL metrics dictionary, heuristic).",
           q(mean("rl_reference_kl"), "{{run}} kl", gate=REFERENCE_KL),
           q(mean("rl_reward_kl_penalty"), "{{run}} in-reward kl",
             gate="the KL is folded into the reward (veRL use_kl_in_reward, slime --kl-coef)"),
           # AReaL logs the term -kl_ctl x KL (kl_rewards): divided by -kl_ctl, the KL itself
           q("-1 * " + mean("rl_reward_kl_term") + " / on (run) group_left () max by (run) ("
             + sel("rl_config_value", 'parameter="kl_reward_coef"') + " > 0)",
             "{{run}} in-reward kl (from -coef x kl)",
             gate="the reward carries -coef x KL and the coefficient is known (AReaL kl_rewards "
                  "with actor.kl_ctl)"),
           unit="none", decimals=4, min=0,
           thresholds=[(None, "green"), (0.1, "yellow"), (0.15, "red")], band=("rl_reference_kl",)),
        ts("Clip fraction",
           "Fraction of tokens where the PPO ratio clip bound the update: either bound, and per "
           "bound where the framework splits it (veRL pg_clipfrac_lower is the dual clip).",
           "0.05-0.30 (the veRL metrics guide; the RL metrics dictionary says 0.1-0.3). Above "
           "0.3 for long: steps too large, lower the LR; above 0.5 severe. Near 0 for long: converged "
           "or LR too small, but exactly 0 is expected with one mini-batch per step (the Miles lab "
           "runs: 0 at every step). The dual clip (pg_clipfrac_lower) is usually below 0.1. Under "
           "GSPO the sequence rate is the one the objective acts on.",
           q(mean("rl_policy_clip_ratio", 'bound=""'), "{{run}} clip"),
           q(mean("rl_policy_clip_ratio", 'bound!=""'), "{{run}} {{bound}}"),
           q(mean("rl_policy_sequence_clip_ratio"), "{{run}} sequences (GSPO)",
             gate="the run clips per sequence (GSPO, posttrain train/seq_clip_frac)"),
           unit="percentunit", min=0, max=1,
           thresholds=[(None, "green"), (0.3, "yellow"), (0.5, "red")], band=("rl_policy_clip_ratio",)),
        ts("Learning rate",
           "Policy learning rate in use, per parameter group where logged.",
           "follows the configured schedule (e.g. warmup then cosine decay, the RL metrics dictionary, section 2.6); "
           "flat when it should move, or suddenly 0, is a configuration bug.",
           q(mean("rl_learning_rate"), "{{run}} {{param_group}}"),
           q(mean("rl_next_learning_rate"), "{{run}} next {{role}} {{param_group}}", gate=NEXT_LR),
           unit="sci", min=0, width=8),
        ts("KL coefficient",
           "The KL coefficient (beta) in use, per target: the loss's KL term or the KL folded "
           "into the reward.",
           "constant unless an adaptive KL controller is configured.",
           q(mean("rl_kl_coefficient"), "{{run}} {{target}}"), unit="sci", min=0, width=8),
        ts("Importance ratio deviation",
           "Mean importance ratio pi/pi_old and mean |ratio - 1| over valid tokens.",
           "ratio near 1; |ratio - 1| small. Both are exactly 1 / 0 with one mini-batch per step.",
           q(mean("rl_importance_ratio"), "{{run}} ratio",
             gate="the framework logs the importance ratio (posttrain, AReaL)"),
           q(mean("rl_importance_ratio_abs_deviation"), "{{run}} |ratio-1|",
             gate="the framework logs the importance ratio (posttrain, AReaL)"),
           unit="none", decimals=4, width=8),
    ]),
    Row("4. Critic (PPO; empty for GRPO)", [
        ts("Value loss",
           "Critic (value function) loss.",
           "falling: 10-100 early, 0.1-10 later, below 1 once converged (the veRL metrics guide; the "
           "blue line marks 1). Rewards rising while the value "
           "loss does not fall: the critic lags the actor, raise its LR (the RL metrics dictionary, section 3).",
           q(mean("rl_value_loss")), unit="none", decimals=3, gate=CRITIC,
           thresholds=[(None, "green"), (1, "blue")]),
        ts("Explained variance",
           "1 - Var(returns - values)/Var(returns).",
           "-1.0 to 0.2 early, 0.2-0.8 later, above 0.7 once converged (the veRL metrics guide); "
           "below 0 after warm-up the critic is worse than a constant (RLCriticNotLearning, after "
           "step 50). Lines at 0 and 0.7.",
           q(mean("rl_value_explained_variance")), unit="none", decimals=3, max=1, gate=CRITIC,
           thresholds=[(None, "blue"), (0, "blue"), (0.7, "green")]),
        ts("Value prediction vs return",
           "Mean critic value prediction beside the mean return (the veRL metrics guide, section 11.3 panel 3).",
           "the two curves track each other; a wide, persistent gap means the critic is not "
           "learning (the veRL metrics guide, section 11.4, example 3).",
           q(mean("rl_value"), "{{run}} value"), q(mean("rl_return"), "{{run}} return"),
           unit="none", decimals=3, gate=CRITIC),
    ]),
    Row("5. Lengths and truncation", [
        ts("Response length",
           "Generated response length: mean, and min/max over the batch.",
           "stable or slowly changing. Falling length while reward rises can be reward hacking "
           "(the RL metrics dictionary, section 4); max pinned at the limit means truncation (next panel).",
           q(sel("rl_response_length_tokens", 'subset="", split=""'), "{{run}} {{stat}}"),
           unit="short", min=0, band=("rl_response_length_tokens",)),
        ts("Response truncation",
           "Fraction of responses cut at the length limit.",
           "below 0.5 (the Miles lab runs saw 0.02-0.43 healthy; the veRL metrics guide: < 0.1 "
           "ideal, 0.1-0.3 acceptable, > 0.5 raise max_response_length; 0.85 its example of far "
           "too many).",
           q(mean("rl_response_truncated_ratio", 'subset=""'), "{{run}} response truncated"),
           unit="percentunit", min=0, max=1, width=8,
           thresholds=[(None, "green"), (0.5, "yellow"), (0.85, "red")], band=("rl_response_truncated_ratio",)),
        ts("Prompt truncation",
           "Fraction of prompts cut at the prompt limit.",
           "below 0.05 is reasonable, above 0.1 raise max_prompt_length (the veRL metrics guide; "
           "the yellow line is its 0.1). High prompt truncation: check the data.",
           q(mean("rl_prompt_truncated_ratio"), "{{run}} prompt truncated"),
           unit="percentunit", min=0, max=1, width=8,
           thresholds=[(None, "green"), (0.1, "yellow")]),
        ts("Aborted samples",
           "Fraction of samples the engine aborted (veRL response/aborted_ratio).",
           "low and flat; high aborts: check the sampling parameters (the RL metrics dictionary, "
           "which gives no number, so nothing is coloured).",
           q(mean("rl_response_aborted_ratio"), "{{run}} aborted"),
           unit="percentunit", min=0, max=1, width=8, gate=ABORTED),
        ts("Prompt length",
           "Prompt length: mean and min/max over the batch.",
           "stable; it is data, so it changes only when the data mix changes.",
           q(sel("rl_prompt_length_tokens", 'split=""'), "{{run}} {{stat}}"),
           unit="short", min=0, width=8),
    ]),
    Row("6. GRPO group informativeness", [
        ts("Groups by outcome",
           "Prompt groups scored this step, stacked by outcome: informative (rewards differ), "
           "all_zero and all_one (every answer tied, zero advantage).",
           "mostly informative. All groups tied means no learning signal at all.",
           q(sel("rl_groups", 'outcome=~"informative|all_zero|all_one"'), "{{run}} {{outcome}}"),
           unit="short", min=0, stack=True),
        ts("Informative group fraction",
           "Share of groups whose rewards differ, and the tied-group fraction where the framework "
           "logs it.",
           "well above 0 (this project's heuristic: below 0.2 warns); 0 with grad norm 0 is the "
           "no-signal failure: the task is too easy or too hard for the sampler.",
           q(sel("rl_groups", 'outcome="informative"') + " / ignoring(outcome) "
             + sel("rl_groups", 'outcome="total"'), "{{run}} informative"),
           q(mean("rl_group_zero_std_ratio"), "{{run}} tied (zero std)", gate=ZERO_STD),
           unit="percentunit", min=0, max=1,
           thresholds=[(None, "red"), (0.2, "yellow"), (0.5, "green")]),
    ]),
    Row("7. Optimizer outcome", [
        timeline("Update outcome",
                 "What each update attempt did: accumulating, applied, skipped or discarded.",
                 "applied (green) every step; skipped (orange) means a non-finite loss or gradient "
                 "was rejected, see the skip reason.",
                 q(state_code("rl_optimizer_update_outcome", OUTCOME_CODES)),
                 unit="none", mappings=state_mappings(OUTCOME_CODES), width=8,
                 thresholds=[(None, "green")]),
        timeline("Skip reason",
                 "Why the last attempt was skipped.",
                 "empty: a healthy run never skips.",
                 q(state_code("rl_optimizer_skip_reason", SKIP_CODES), gate=SKIP_REASON),
                 unit="none", mappings=state_mappings(SKIP_CODES), width=8,
                 thresholds=[(None, "red")]),
        ts("Skipped updates",
           "Updates rejected for a non-finite loss or gradient (per interval and in a row), and "
           "updates skipped for an exactly-zero gradient.",
           "0 non-finite skips. Zero-gradient skips happen in GRPO when every group ties; "
           "a run of them is the no-signal failure.",
           q(f"increase({sel('rl_optimizer_nonfinite_skips_total')}[{RATE}])", "{{run}} non-finite"),
           q(f"increase({sel('rl_optimizer_zero_grad_skips_total')}[{RATE}])", "{{run}} zero grad"),
           q(mean("rl_optimizer_consecutive_nonfinite_skips"), "{{run}} non-finite in a row"),
           # no red threshold: zero-gradient skips are expected in GRPO (the posttrain metrics reference)
           unit="short", min=0, width=8),
    ]),
    Row("8. Timing: where does the step go?", [
        ts("Step time by phase (stacked)",
           "Seconds per phase of the last step, stacked (veRL timing_s/*): the stack's height is "
           "the step. Select one run to read the stack.",
           "generation is usually the largest share (the RL metrics dictionary, section 9); if gen exceeds half the "
           "step it is the bottleneck, update_actor above 0.4 of it likewise (the veRL metrics guide, section 11.2).",
           q(sel("rl_phase_duration_seconds"), "{{run}} {{phase}}"),
           unit="s", min=0, stack=True, width=12),
        ts("Step duration",
           "Wall time of a whole training step.",
           "steady; lower is better (the veRL metrics guide, section 11.1). Above 120 s per step for a 7B model "
           "is slow (the veRL metrics guide, section 11.2, heuristic).",
           q(mean("rl_step_duration_seconds")), unit="s", min=0, width=6),
        hist_heatmap("Phase duration distribution",
                     "Distribution of phase durations measured by timer() (one observation per "
                     "phase per step), over all selected phases.",
                     "a tight band per phase; a long upper tail is rollout stragglers.",
                     "rl_phase_timing_seconds_bucket", query_gate=TIMER, width=6),
    ]),
    Row("Where the time went (goodput)", [
        ts("Wall time by bucket (stacked)",
           "Share of each run's wall time per goodput bucket (rl_goodput_seconds_total, "
           "docs/goodput.md): step is productive; logprob_recompute and reference_logprob (the "
           "pi_old and reference passes), weight_sync, offload, checkpoint, validation, startup "
           "and rollout_tail are required overhead; rollout_wait (an async trainer idle), stalled "
           "and restart are waste; rollout_unclassified is the rollout call of a run that did not "
           "say whether it is synchronous. An interval is accounted when the next step arrives. "
           "Select one run to read the stack.",
           "mostly step, with the overhead its algorithm needs (the pi_old pass at n_mini > 1, the "
           "reference pass with a KL coefficient above 0) as steady slices. A band of restart is "
           "steps redone after a resume (growing for good: a crash loop, RLRestartWithoutProgress); "
           "stalled means no step for longer than the stall threshold.",
           q(f"max by (run, bucket) (rate({sel(GOODPUT)}[{RATE}]))", "{{run}} {{bucket}}"),
           **RATIO, stack=True, width=12),
        bars("Seconds per bucket",
             "Wall-clock seconds per goodput bucket over the dashboard's time range, for the "
             "selected runs (each run's largest rank; summed over runs).",
             "step far ahead of every other bucket.",
             qi(f"sort_desc(sum by (bucket) (max by (run, bucket) (increase({sel(GOODPUT)}[$__range]))))",
                "{{bucket}}"), unit="s", min=0, width=6),
        stat("Goodput ratio (last hour)",
             "Productive step time over all accounted time in the last hour "
             "(run:rl_goodput:ratio_1h; worst selected run). Not coloured: the required overhead "
             "(pi_old and reference passes, weight sync) differs by algorithm and framework.",
             "as high as the algorithm allows: the Miles lab ranges' synchronous run is 83 % step "
             "and 17 % required overhead.",
             qi('min(run:rl_goodput:ratio_1h{run=~"$run"})', "goodput"), **RATIO, decimals=1,
             thresholds=[(None, "blue")], width=3, height=8),
        stat("Time not wasted (last hour)",
             "1 - the waste share (an async trainer idle, stalls, redone steps) of the last hour, "
             "for runs whose time is fully classified (run:rl_goodput:not_wasted_ratio_1h; worst "
             "selected run). No value: the run did not say whether it is synchronous, so its "
             "rollout calls are unclassified and it is not compared.",
             "close to 1 (the Miles lab ranges' run: 1).",
             qi('min(run:rl_goodput:not_wasted_ratio_1h{run=~"$run"})', "not wasted"), **RATIO,
             decimals=1, thresholds=[(None, "red"), (0.5, "orange"), (0.8, "green")], width=3, height=8),
    ]),
    Row("9. Throughput", [
        ts("Tokens/s per GPU",
           "Tokens processed per second per GPU (veRL perf/throughput): the core efficiency number "
           "(the RL metrics dictionary, section 10).",
           "higher is better and steady; below 50 tokens/s/GPU for a 7B model is slow (the veRL metrics guide "
           "section 11.2, heuristic).",
           q(mean("rl_gpu_throughput_tokens_per_second")), unit="short", min=0),
        ts("Steps per minute and tokens per step",
           "Training steps completed per minute (from the step gauge), and tokens processed per step.",
           "steady; a drop to 0 steps/min is a stall.",
           q(steps_per_minute(), "{{run}} steps/min"),
           q(mean("rl_step_tokens"), "{{run}} tokens/step"),
           unit="short", min=0),
        ts("Run throughput",
           "Whole-run tokens per second, as logged or from the trainer's token counter.",
           "steady; compare runs with it rather than with phase times.",
           q(mean("rl_throughput_tokens_per_second"), "{{run}} logged", gate=RUN_THROUGHPUT),
           q(f"rate({sel('rl_tokens_total')}[{RATE}])", "{{run}} counter", gate=RUN_THROUGHPUT),
           unit="short", min=0),
    ]),
    Row("10. MFU", [
        ts("MFU: train vs rollout",
           "Model FLOPs utilisation per role and phase: train (update) and inference (rollout), "
           "as the framework reports it or as the exporter computes it.",
           "train MFU above 0.3 (the veRL metrics guide, section 11.1, heuristic); 0.5-0.6 is typical and below "
           "0.3 means GPUs wait on communication, data or imbalance (the RL metrics dictionary, section 10). Rollout "
           "MFU is normally lower (decode is memory-bound).",
           q(sel("rl_mfu_ratio"), "{{run}} {{role}} {{phase}} ({{source}})"),
           unit="percentunit", min=0, max=1, width=12,
           thresholds=[(None, "red"), (0.3, "green")]),
        ts("Achieved FLOP/s",
           "Achieved model FLOP/s per phase.",
           "steady; it is MFU's numerator.",
           q(mean("rl_achieved_flops_per_second"), "{{run}} {{phase}}", gate=FLOPS),
           unit="flops", min=0, width=12),
    ]),
    Row("11. GPU summary", [
        ts("GPU utilization (mean over GPUs)",
           "Mean NVML utilization over the run's GPUs.",
           "high during generation and update; dips at phase boundaries (weight sync, reward). "
           "Long dips are GPUs idle in the rollout tail.",
           q(f"avg by (run) ({sel(n.GPU_UTILIZATION)})"),
           unit="percentunit", min=0, max=1, gate=GPU,
           thresholds=[(None, "red"), (0.3, "yellow"), (0.6, "green")]),
        ts("GPU memory",
           "Peak torch memory per step (allocated/reserved) as the trainer reports it.",
           "below the card's memory with headroom; peak close to the total precedes OOM (the veRL metrics guide "
           "section 11.2, problem 3).",
           q(sel("rl_gpu_memory_peak_bytes", 'stat=""'), "{{run}} peak {{kind}} {{role}}"),
           unit="bytes", min=0),
        ts("GPU power",
           "Total power draw over the run's GPUs.",
           "steady near the power limit under load; a drop with steady step time means GPUs wait.",
           q(f"sum by (run) ({sel(n.GPU_POWER)})"), unit="watt", min=0, gate=GPU),
        bars("GPU memory: the trainer's peak allocated (share of the device)",
             "Per run: the trainer's own peak allocated memory (veRL perf/max_memory_allocated_gb) "
             "as a share of the smallest GPU's memory. NVML usage is no OOM signal: a rollout "
             "engine pre-allocates its KV cache, so a healthy job sits at about 95 % (GPU dashboard).",
             "below 0.95 (RLGPUMemoryNearFull); close to the device total the next long batch OOMs "
             "(the veRL metrics guide, problem 3).",
             qi(f"max by (run) ({ALLOCATED_PEAK}) / on (run) min by (run) ({sel(n.GPU_MEMORY_LIMIT)})",
                "{{run}} allocated peak"),
             unit="percentunit", min=0, max=1, gate=GPU, width=24, height=6,
             thresholds=[(None, "green"), (0.9, "yellow"), (0.95, "red")]),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-overview", title="RL run overview",
    description="One RL run (or a few) in the order of attention of the RL metrics dictionary and the veRL metrics guide "
                "section 11.3: alerts, validation, reward, policy health, critic, lengths, "
                "groups, optimizer, timing, throughput, MFU, GPUs.",
    rows=ROWS, tags=["rl-exporter", "rl"])
