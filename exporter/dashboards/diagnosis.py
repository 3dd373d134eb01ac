"""Diagnosis: one row per symptom of the troubleshooting tables (the RL metrics dictionary, section 12
"训练出问题了", the veRL metrics guide, sections 11.2 and 12). Each row reads left to right: a reading
guide, the symptom, what to check first, what to check next."""
from __future__ import annotations

from . import names as n
from .common import (ABORTED, ALERTS, CRITIC, ENTROPY_UPDATE, GPU, NEXT_LR, RANKS, RATE, REWARD, REWARD_STD, ZERO_STD, STALL_RED,
                     STALL_YELLOW, mean, q, sel, stall_ratio, text, ts)
from .model import Dashboard, Row

W = 6  # text + three panels per row


def guide(symptom: str, first: str, nxt: str, fix: str, source: str):
    return text("How to read", f"**Symptom:** {symptom}\n\n**Check first:** {first}\n\n"
                f"**Check next:** {nxt}\n\n**Usual fix:** {fix}\n\n_Source: {source}_", width=W)


STEP_SHARE = (f"{sel('rl_phase_duration_seconds')} / ignoring(phase) group_left "
              f"{mean('rl_step_duration_seconds')}")

# Each rank is its own scrape target; its rl_run_info names the rank.
_RANK = f"* on (job, instance) group_left (rank) group by (job, instance, rank) ({sel('rl_run_info')})"
RANK_PHASE = f"{sel('rl_phase_duration_seconds')}\n{_RANK}"
RANK_STEP = f"{mean('rl_step_duration_seconds')}\n{_RANK}"

ROWS = [
    Row("Reward collapses", [
        guide("reward/score drops sharply.", "did entropy fall within a few steps (policy collapse)?",
              "did the clip fraction jump?", "lower the LR, raise the entropy bonus or KL penalty.",
              "the RL metrics dictionary, section 12"),
        ts("Symptom: reward and score", "Mean raw score and training reward (before KL shaping, or "
           "after it where that is what the trainer logs).",
           "rising or flat; a drop of more than half within a few steps is the collapse.",
           q(mean("rl_score"), "{{run}} score"), q(mean("rl_reward"), "{{run}} reward", gate=REWARD),
           q(mean("rl_shaped_reward"), "{{run}} reward after KL shaping"),
           unit="none", decimals=3, width=W),
        ts("Check first: entropy", "Mean token entropy.",
           "decays slowly (the RL metrics dictionary, section 2.3); a fall within a few steps before the reward "
           "drop is collapse.",
           q(mean("rl_entropy", 'phase=""')), unit="none", decimals=3, min=0, width=W),
        ts("Check next: clip fraction", "Fraction of tokens the PPO clip bound.",
           "0.05-0.30 (the veRL metrics guide, section 12, heuristic); a climb past 0.3 with the reward drop "
           "means steps are too large.",
           q(mean("rl_policy_clip_ratio", 'bound=""')), unit="percentunit", min=0, max=1, width=W,
           # 0 is healthy on-policy (the Miles lab ranges: 0 at every step with one mini-batch per step)
           thresholds=[(None, "green"), (0.3, "yellow"), (0.5, "red")]),
    ]),
    Row("KL spikes", [
        guide("the KL jumps (e.g. 0.02 to 0.15).", "the PPO KL's trend: a ramp or a single spike?",
              "is the LR schedule what you configured?", "lower the LR or raise the KL penalty.",
              "the RL metrics dictionary, sections 2.4 and 12; the veRL metrics guide, section 11.4 example 2"),
        ts("Symptom: KL to reference", "KL loss term (and measured KL where logged) to the reference.",
           "grows slowly and steadily (the RL metrics dictionary, section 2.4).",
           q(mean("rl_reference_kl"), "{{run}} kl loss"), unit="none", decimals=4, min=0, width=W),
        ts("Check first: policy KL trend", "PPO KL between the sampling and the updated policy.",
           "0.001-0.01 (the veRL metrics guide, section 12, heuristic); above 0.05 is too large (the veRL metrics guide "
           "section 11.4).",
           q(mean("rl_policy_kl")), unit="none", decimals=4, min=0, width=W,
           thresholds=[(None, "green"), (0.01, "yellow"), (0.05, "red")]),
        ts("Check next: learning rate", "Policy learning rate in use.",
           "follows the configured warmup/decay schedule (the RL metrics dictionary, section 2.6).",
           q(mean("rl_learning_rate"), "{{run}} {{param_group}}"),
           q(mean("rl_next_learning_rate"), "{{run}} next {{role}} {{param_group}}", gate=NEXT_LR),
           unit="sci", min=0, width=W),
    ]),
    Row("Eval flat while reward rises", [
        guide("training reward rises, validation does not.", "is the response length changing?",
              "is the aborted ratio high?", "the reward is being gamed: fix the reward function "
                                           "or add a length penalty.", "the RL metrics dictionary, sections 4 and 12"),
        ts("Symptom: validation vs reward", "Core validation score beside the training reward.",
           "both rise together.",
           q(sel("rl_validation_score", 'tier="core"'), "{{run}} val {{data_source}}"),
           q(mean("rl_score"), "{{run}} score"), q(mean("rl_reward"), "{{run}} reward", gate=REWARD),
           unit="none", decimals=3, width=W),
        ts("Check first: response length", "Mean generated response length.",
           "stable or slowly changing; falling length while reward rises is reward hacking "
           "(the RL metrics dictionary, section 4).",
           q(mean("rl_response_length_tokens", 'subset=""')), unit="short", min=0, width=W),
        ts("Check next: aborted and truncated", "Aborted and truncated response fractions.",
           "a few percent at most (this project's heuristic).",
           q(mean("rl_response_aborted_ratio"), "{{run}} aborted", gate=ABORTED),
           q(mean("rl_response_truncated_ratio", 'subset=""'), "{{run}} truncated"),
           unit="percentunit", min=0, max=1, width=W,
           # the Miles lab ranges: 0.02-0.43 truncated in a healthy run; RLResponseTruncationHigh at 0.5,
           # the veRL metrics guide: 85 % at the limit means raise it
           thresholds=[(None, "green"), (0.5, "yellow"), (0.85, "red")]),
    ]),
    Row("Training is slow", [
        guide("steps take long.", "which phase of the step dominates?",
              "tokens/s per GPU and the load balance across DP ranks.",
              "gen over half the step: tune the rollout engine (max_num_seqs, TP); update_actor "
              "over 0.4: micro-batch size, torch.compile.", "the RL metrics dictionary, section 12; the veRL metrics guide, section 11.2"),
        ts("Symptom: step duration", "Wall time per step.",
           "steady. The blue line: 120 s, slow for a 7B model (the veRL metrics guide, problem 4); "
           "the Miles lab's 0.6B run took 152.6 s a step, so compare with your own baseline.",
           q(mean("rl_step_duration_seconds")), unit="s", min=0, width=W,
           thresholds=[(None, "green"), (120, "blue")]),
        ts("Check first: phase share of the step", "Each phase's share of the step time.",
           "the largest share is the bottleneck to work on; no share is unhealthy by itself (Miles' "
           "train phase, with the scoring, is 0.66 of a healthy step). The veRL metrics guide: gen "
           "30-40 % and update_actor 25-35 % typical, gen above 0.5 (the blue line) = generation is "
           "the bottleneck, update_actor above 0.4 = the update is.",
           q(STEP_SHARE, "{{run}} {{phase}}"), unit="percentunit", min=0, max=1, width=W,
           thresholds=[(None, "green"), (0.5, "blue")]),
        ts("Check next: throughput and balance",
           "Tokens/s per GPU, and max-min tokens across data-parallel ranks.",
           "throughput steady; minmax_diff small relative to the mean (the RL metrics dictionary, section 8).",
           q(mean("rl_gpu_throughput_tokens_per_second"), "{{run}} tokens/s/GPU"),
           q(sel("rl_dp_rank_tokens", 'stat="minmax_diff"'), "{{run}} rank max-min tokens"),
           unit="short", min=0, width=W),
    ]),
    Row("GPU out of memory", [
        guide("CUDA out of memory, or memory near the card's total.", "the heaviest rank's tokens",
              "the longest response and prompt.", "smaller micro-batches, dynamic batch size, "
              "gradient checkpointing.", "the RL metrics dictionary, section 12; the veRL metrics guide, section 11.2 problem 3"),
        ts("Symptom: peak GPU memory", "Peak torch memory per step, and NVML memory per GPU.",
           "clear headroom below the card's total.",
           q(sel("rl_gpu_memory_peak_bytes", 'stat=""'), "{{run}} peak {{kind}}"),
           q(f"max by (run) ({sel(n.GPU_MEMORY_USAGE)})", "{{run}} NVML max", gate=GPU),
           unit="bytes", min=0, width=W),
        ts("Check first: heaviest rank", "Tokens on the most loaded data-parallel rank.",
           "close to the mean; a max far above it is the rank that OOMs first.",
           q(sel("rl_dp_rank_tokens", 'stat="max"'), "{{run}} max"),
           q(mean("rl_dp_rank_tokens"), "{{run}} mean"), unit="short", min=0, width=W),
        ts("Check next: longest response and prompt", "Max response and prompt length in the batch.",
           "below the configured limits.",
           q(sel("rl_response_length_tokens", 'stat="max", subset=""'), "{{run}} response max"),
           q(sel("rl_prompt_length_tokens", 'stat="max"'), "{{run}} prompt max"),
           unit="short", min=0, width=W),
    ]),
    Row("Does not converge", [
        guide("policy loss swings, score does not rise.", "is the gradient norm pinned at grad_clip (LR too high)?",
              "reward variance (std far above 10x the mean: normalise) and the critic's explained "
              "variance (below 0.3: raise the critic LR).", "lower the LR, normalise rewards.",
              "the veRL metrics guide, section 11.2 problem 1"),
        ts("Symptom: policy loss and score", "Policy loss beside the raw score.",
           "pg_loss -0.01..0.01 (the veRL metrics guide, section 12, heuristic) while the score rises.",
           q(mean("rl_policy_loss"), "{{run}} pg loss"), q(mean("rl_score"), "{{run}} score"),
           unit="none", decimals=3, width=W),
        ts("Check first: gradient norm", "Policy gradient norm before clipping.",
           "below grad_clip most steps; constantly at it means the LR is too high.",
           q(mean("rl_grad_norm")), unit="none", decimals=3, width=W),
        ts("Check next: reward spread and critic",
           "Reward standard deviation, and the critic's explained variance (PPO).",
           "reward std not above 10x its mean; explained variance above 0.7 (the veRL metrics guide, heuristic).",
           q(sel("rl_reward", 'stat="std", split=""'), "{{run}} reward std", gate=REWARD_STD),
           q(mean("rl_value_explained_variance"), "{{run}} explained var", gate=CRITIC),
           unit="none", decimals=3, width=W),
    ]),
    Row("Converges too early", [
        guide("entropy (loss) drops to near 0, score stops rising, PPO KL near 0.",
              "entropy and its loss term.", "the PPO KL: near 0 means the policy no longer moves.",
              "raise the entropy coefficient (e.g. 0.001 to 0.01) or the sampling temperature.",
              "the veRL metrics guide, section 11.2 problem 2"),
        ts("Symptom: score", "Raw task score.", "keeps rising.",
           q(mean("rl_score")), unit="none", decimals=3, width=W),
        ts("Check first: entropy", "Mean token entropy, and its update-pass curve where logged.",
           "slowly decaying, 0.1-0.5 late in training (the veRL metrics guide); Miles' update-pass "
           "entropy is 0 when it is not computed (the Miles lab runs).",
           q(mean("rl_entropy", 'phase=""'), "{{run}} entropy"),
           q(mean("rl_entropy", 'phase="update"'), "{{run}} entropy (update pass)", gate=ENTROPY_UPDATE),
           unit="none", decimals=3, min=0, width=W),
        ts("Check next: policy KL", "PPO KL.",
           "0.001-0.01 (the veRL metrics guide); near 0 for long means no movement, except with one "
           "mini-batch per step, where it is 0 by construction (the Miles lab runs: 0).",
           q(mean("rl_policy_kl")), unit="none", decimals=4, min=0, width=W,
           thresholds=[(None, "green"), (0.01, "yellow"), (0.05, "red")]),
    ]),
    Row("Training crashes: gradient explosion or NaN", [
        guide("grad norm explodes or the loss becomes NaN.", "the gradient norm (10x its usual level).",
              "non-finite values and skipped updates.", "lower the LR, tighten grad clipping, check "
              "the data for extreme rewards.", "the veRL metrics guide, section 12; the RL metrics dictionary, section 2.2"),
        ts("Symptom: gradient norm", "Policy gradient norm (log scale).",
           "inside a steady band; 10x its usual level is an explosion (the RL metrics dictionary, section 2.2).",
           q(mean("rl_grad_norm")), unit="none", decimals=3, log_scale=True, width=W),
        ts("Check first: policy loss", "Policy loss.", "noisy around 0 (the veRL metrics guide, section 12).",
           q(mean("rl_policy_loss")), unit="none", decimals=4, width=W),
        ts("Check next: non-finite values and skips",
           "NaN/Inf values received per metric, and updates rejected for them.",
           "0.",
           q(f"increase({sel('rl_exporter_nonfinite_values_total')}[{RATE}])", "{{run}} {{metric}}"),
           q(f"increase({sel('rl_optimizer_nonfinite_skips_total')}[{RATE}])", "{{run}} skipped updates"),
           unit="short", min=0, width=W, thresholds=[(None, "green"), (1, "red")]),
    ]),
    Row("No learning signal (GRPO groups tie)", [
        guide("reward flat, gradient exactly 0.", "the share of informative groups.",
              "zero-gradient skips and advantages.", "the prompts are too easy or too hard for the "
              "sampler: filter the data or change the group size.", "the posttrain metrics reference (posttrain group report)"),
        ts("Symptom: gradient norm at 0", "Policy gradient norm.", "above 0 every step.",
           q(mean("rl_grad_norm")), unit="none", decimals=3, min=0, width=W,
           thresholds=[(None, "red"), (1e-9, "green")]),
        ts("Check first: informative groups", "Informative groups as a share of all groups, and "
           "the tied-group fraction where logged.",
           "well above 0 (this project's heuristic: below 0.2 warns).",
           q(sel("rl_groups", 'outcome="informative"') + " / ignoring(outcome) "
             + sel("rl_groups", 'outcome="total"'), "{{run}} informative"),
           q(mean("rl_group_zero_std_ratio"), "{{run}} tied", gate=ZERO_STD),
           unit="percentunit", min=0, max=1, width=W,
           thresholds=[(None, "red"), (0.2, "yellow"), (0.5, "green")]),
        ts("Check next: zero-gradient skips and advantages",
           "Updates skipped for an exactly-zero gradient, and the advantage range.",
           "some zero-gradient skips are expected in GRPO (a batch whose groups all tie; the posttrain "
           "metrics reference), read them with the informative groups; one per step means no "
           "signal. Advantages spread around 0.",
           q(f"increase({sel('rl_optimizer_zero_grad_skips_total')}[{RATE}])", "{{run}} zero-grad skips"),
           q(sel("rl_advantage", 'stat="max", split=""'), "{{run}} advantage max"),
           unit="none", decimals=3, width=W),
    ]),
    Row("Responses truncated", [
        guide("many responses hit the length limit.", "the truncated fraction.",
              "the mean and max response length against the limit.",
              "raise max_response_length, or penalise length.", "the RL metrics dictionary, section 4"),
        ts("Symptom: truncated fraction", "Fraction of responses cut at the limit.",
           "below half (the Miles lab's healthy lab run: 0.02-0.43; RLResponseTruncationHigh at 0.5).",
           q(mean("rl_response_truncated_ratio", 'subset=""')), unit="percentunit", min=0, max=1,
           width=W, thresholds=[(None, "green"), (0.5, "yellow"), (0.85, "red")]),
        ts("Check first: response length", "Mean and max response length.",
           "the max below the limit most steps.",
           q(sel("rl_response_length_tokens", 'subset="", split="", stat=~"|max"'), "{{run}} {{stat}}"),
           unit="short", min=0, width=W),
        ts("Check next: score", "Raw score, to see whether truncation costs reward.",
           "score unaffected when truncation rises.",
           q(mean("rl_score")), unit="none", decimals=3, width=W),
    ]),
    Row("Run stalled", [
        guide("the step stops advancing.", "the age of the last step.",
              "whether the exporter still receives frames (exporter health).",
              "look at the trainer's logs: a hang in rollout or a collective.", "rl-exporter runbook"),
        ts("Symptom: silence in step lengths", "Seconds since the step advanced, divided by "
           "max(6 min, the run's longest step of the last 5h20m).",
           "below 3; 5 is where RLRunStalled pages (max(30 min, 5 x the longest step)).",
           q(stall_ratio()), unit="none", decimals=1, min=0, width=W,
           thresholds=[(None, "green"), (STALL_YELLOW, "yellow"), (STALL_RED, "red")]),
        ts("Check first: training step", "The latest training step.", "rising.",
           q(mean("rl_training_step")), unit="short", min=0, width=W),
        ts("Check next: frames reaching the exporter", "Frames received per second.",
           "above 0 while the trainer logs.",
           q(f"rate({sel('rl_exporter_frames_received_total')}[{RATE}])"), unit="short", min=0,
           width=W),
    ]),
    Row("One rank is slower than the others", [
        guide("every step waits for one rank: its phase takes far longer than on the other ranks.",
              "which rank and which phase (RLRankStraggler names both).",
              "that rank's GPU clocks and temperature, its host, the tokens it gets.",
              "drain a throttling or faulty node and resume elsewhere; balance sequences across ranks.",
              "the rl-exporter runbook, RLRankStraggler"),
        ts("Symptom: phase duration by rank", "Each rank's duration of each phase in the last "
           "step, beside the median over the run's ranks.",
           "every rank near its phase's median; the ranks that wait for a straggler rise in the "
           "phase holding the next collective (update_actor), the straggler in its own phase.",
           q(RANK_PHASE, "{{run}} rank {{rank}} {{phase}}", gate=RANKS),
           q(f"quantile by (run, phase) (0.5, {sel('rl_phase_duration_seconds')})",
             "{{run}} {{phase}} median of ranks"), unit="s", min=0, width=W),
        ts("Check first: step duration by rank", "Each rank's step wall time.",
           "the same on every rank in a synchronous run (each step waits for the slowest); a rank "
           "apart from the others runs its own loop (async rollout workers).",
           q(RANK_STEP, "{{run}} rank {{rank}}", gate=RANKS), unit="s", min=0, width=W),
        ts("Check next: firing stragglers", "RLRankStraggler while it fires: 1 per straggling rank "
           "and phase.",
           "no series; a line names the rank and phase to look at.",
           q('ALERTS{alertname="RLRankStraggler", alertstate="firing", run=~"$run"}',
             "{{run}} rank {{rank}} {{phase}}", gate=ALERTS), unit="short", min=0, width=W),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-diagnosis", title="RL diagnosis",
    description="One row per symptom of the sources' troubleshooting tables: the symptom, what to "
                "check first and what to check next, side by side.",
    rows=ROWS, tags=["rl-exporter", "rl"])
