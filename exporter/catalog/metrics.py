"""Canonical metrics: the only place a metric name is written.

Names follow Prometheus conventions: `rl_` prefix, snake_case, base units
(`_seconds`, `_bytes`), `_ratio` for 0..1 fractions, `_total` only on counters,
no suffix on dimensionless values. Every per-run series also carries `run`.
Help texts say which frameworks feed a metric and where they differ.
"""
from __future__ import annotations

from .model import (COUNTER, GAUGE, HISTOGRAM, INFO, LAST, MAX, MEAN, STATE, SUM,
                    WMEAN, Metric)

# Labels that any gauge may carry (see model.py for the conventions).
STAT = "stat"
SPLIT = "split"

# Buckets for phase timers: 10 ms .. 1 h (seconds-to-minutes phases).
PHASE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
TOKEN_BUCKETS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
UNIT_BUCKETS = (-5, -2, -1, -0.5, -0.25, -0.1, 0, 0.1, 0.25, 0.5, 0.75, 1, 2, 5)
LOGPROB_GAP_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5)


def g(name, unit, help, *labels, agg=MEAN, weight=None, group=""):
    return Metric(name, GAUGE, unit, help, (STAT, SPLIT) + labels, agg, weight, group=group)


def c(name, unit, help, *labels, group=""):
    # Counters hold the trainer's cumulative totals: chunks and ranks report the same
    # running total, so they compose by max (a sum would multiply it by the world size).
    return Metric(name, COUNTER, unit, help, labels, MAX, group=group)


def s(name, help, states, *labels, group=""):
    return Metric(name, STATE, "1", help, labels, LAST, states=tuple(states), group=group)


def h(name, unit, help, buckets, *labels, group=""):
    return Metric(name, HISTOGRAM, unit, help, labels, SUM, buckets=tuple(buckets), group=group)


TOK = "rl_valid_tokens"      # default weight of token-level means
SEQ = "rl_responses"         # default weight of sequence-level means

METRICS: list[Metric] = [
    # ---------------------------------------------------------------- run
    Metric("rl_run_info", INFO, "1",
           "Run identity, always 1: framework, algorithm, model, host, rank, exporter version. "
           "Join with group_left instead of repeating these labels on every series.",
           ("framework", "algorithm", "model", "host", "rank", "version"), LAST, group="run"),
    g("rl_training_step", "{step}",
      "Latest training step reported by the trainer (veRL training/global_step, TRL global_step, "
      "slime/Miles train/step, or the step passed to log()).", agg=MAX, group="run"),
    g("rl_training_step_timestamp_seconds", "s",
      "Unix time at which rl_training_step last advanced. time() minus this is the stall age.",
      agg=MAX, group="run"),
    g("rl_run_segment_start_timestamp_seconds", "s",
      "Unix time at which the run's current segment began: its step counter went back (a restart "
      "from a checkpoint, a second run in the same log) or, in `serve`, a start-up banner followed "
      "training. Absent until the first such seam. Relative alerts wait until their windows begin "
      "after it.", agg=MAX, group="run"),
    g("rl_epoch", "{epoch}", "Training epoch (may be fractional in HF/TRL).", agg=MAX, group="run"),
    # the run's lifecycle (exporter/core/lifecycle.py): the hook's close(), exit, uncaught
    # exception or fatal signal; in `serve`, the framework's end-of-training line or a crash at
    # the end of the log (exporter/logs/ending.py); a pause phase; a restart's redone steps
    s("rl_run_state",
      "Where the run is in its life, one state 1 and the others 0: starting (no step yet), "
      "running, paused (a pause phase is open: pause, heat_guard, thermal_pause), finished "
      "(close() or a normal exit of the trainer; in `serve` the framework's own end-of-training "
      "line, or the last step reaching total_training_steps), crashed (an uncaught exception, a "
      "fatal signal, or a traceback / CUDA out of memory / NCCL error / Killed at the end of the "
      "log; rl_run_crash_info says which), restarting (a new segment redoing steps the run had "
      "reached before). The hook holds its endpoint at exit until a scrape has read the final "
      "state; `serve` keeps serving it.",
      ("starting", "running", "paused", "finished", "crashed", "restarting"), group="run"),
    g("rl_run_state_change_timestamp_seconds", "s",
      "Unix time at which the current rl_run_state began.", agg=MAX, group="run"),
    Metric("rl_run_crash_info", INFO, "1",
           "1 while rl_run_state is crashed: `exception` the type (torch.OutOfMemoryError, "
           "NCCLError, SIGKILL, SIGTERM, ...), `message` its first line, both cut to the label "
           "limit. At most one series per run: a later crash replaces it.",
           ("exception", "message"), LAST, group="run"),
    # ---------------------------------------------------------------- validation
    g("rl_validation_score", "1",
      "Held-out score per data source: veRL val-core/val-aux `{data_source}/{var}/{estimator}@{n}` "
      "(tier core|aux), slime/Miles eval/{dataset}, posttrain val/reward_avg, OpenRLHF "
      "eval_{ds}_pass{n}. `var` says its scale: acc|accuracy a 0..1 share; reward the reward's "
      "own scale (veRL falls back to it where a dataset has no acc, slime/Miles, posttrain and "
      "OpenRLHF always log it; an RM's can run -5..5). Look here first.",
      "data_source", "var", "estimator", "n", "tier", group="validation"),
    g("rl_validation_loss", "1", "Held-out objective loss (HF/TRL eval_loss, posttrain val/loss_avg).",
      group="validation"),
    g("rl_validation_pass_at_k_ratio", "1", "Held-out pass@k per data source.", "data_source", "k",
      group="validation"),
    # ---------------------------------------------------------------- reward
    g("rl_reward", "1",
      "The trainer's reward per sequence before any KL shaping (TRL reward = weighted sum of "
      "reward functions; OpenRLHF reward; AReaL rollout/reward; posttrain train/reward_*). "
      "The reward after in-reward KL shaping is rl_shaped_reward. subset=generated: every generated "
      "sample before dynamic filtering (OpenRLHF rollout/reward_mean).", "subset",
      agg=WMEAN, weight=SEQ, group="reward"),
    g("rl_normalized_reward", "1",
      "Reward after per-group normalisation ((r - group mean) / group std), the value slime/Miles "
      "log as rollout/rewards. Near 0 by construction: read rl_reward for the task reward.",
      agg=WMEAN, weight=SEQ, group="reward"),
    g("rl_shaped_reward", "1",
      "Reward per sequence after the in-reward KL shaping, score - beta x KL (veRL critic/rewards: "
      "token_level_scores - beta * kld summed, verl/trainer/ppo/ray_trainer.py:106, equal to "
      "critic/score without algorithm.use_kl_in_reward; TRL objective/rlhf_reward = score + "
      "non_score_reward).", agg=WMEAN, weight=SEQ, group="reward"),
    g("rl_score", "1",
      "Raw task score per sequence before any KL shaping or normalisation (veRL critic/score, "
      "slime/Miles rollout/raw_reward, OpenRLHF score, AReaL task_reward).", agg=WMEAN, weight=SEQ, group="reward"),
    g("rl_reward_function", "1",
      "Reward of one named reward function (TRL rewards/{function}[/mean|std], ms-swift "
      "rewards/{function}/mean|std, veRL critic/{function}_score/*, gdpo/{function}/*). `function` "
      "is the user's own name; distinct names per run are capped.",
      "function", group="reward"),
    g("rl_advantage", "1", "Advantage estimates over valid tokens (GAE or group-normalised).",
      agg=WMEAN, weight=TOK, group="reward"),
    g("rl_return", "1", "Returns (advantages plus values) over valid tokens.", agg=WMEAN, weight=TOK,
      group="reward"),
    g("rl_reward_kl_penalty", "1",
      "The KL to the reference that is folded into the reward, before the coefficient: a KL "
      "estimate, not negative for k3 (veRL actor/reward_kl_penalty and critic/kl, per "
      "algorithm.kl_penalty; slime/Miles rollout/kl, 0 when --kl-coef is 0 because it is not "
      "computed then). The coefficient-scaled, signed term is rl_reward_kl_term.", group="reward"),
    g("rl_reward_kl_term", "1",
      "The KL term as it enters the reward, coefficient and sign included: -coef x KL (AReaL "
      "ppo_actor/kl_rewards = -kl_ctl x KL per valid token, areal/trainer/ppo/actor.py:202; TRL "
      "objective/non_score_reward and the legacy ppo/mean_non_score_reward, summed per sequence: "
      "stat=sum). Divided by -rl_config_value{parameter=\"kl_reward_coef\"} it is the KL "
      "(run:rl_reference_kl:* read AReaL's that way); its stat=max is the smallest KL.",
      agg=WMEAN, weight=TOK, group="reward"),
    g("rl_pass_at_k_ratio", "1", "Training-rollout pass@k (slime/Miles passrate/pass@k).", "k",
      group="reward"),
    # ---------------------------------------------------------------- GRPO groups
    g("rl_group_zero_std_ratio", "1",
      "Fraction of prompt groups whose rewards all tie, so their advantage is exactly zero "
      "(TRL frac_reward_zero_std; posttrain tied/groups). Near 1 means no learning signal.",
      group="groups"),
    g("rl_groups", "{group}",
      "GRPO groups scored this step by outcome: total, informative, tied, all_zero, all_one "
      "(posttrain train/grpo_*_group_count).", "outcome", agg=SUM, group="groups"),
    g("rl_group_reward_std", "1", "Mean within-group reward standard deviation (OpenRLHF group_reward_std).",
      agg=WMEAN, weight=SEQ, group="groups"),
    # ---------------------------------------------------------------- policy
    g("rl_loss", "1",
      "The optimised total loss (veRL actor/loss, HF/TRL loss, slime train/loss, posttrain "
      "train/loss_avg). TRL's is the HF Trainer mean since the last log. component=kl: the KL "
      "term of the loss as logged (generic KTO loss/kl).", "component", agg=WMEAN, weight=TOK,
      group="policy"),
    g("rl_policy_loss", "1",
      "Clipped-surrogate policy-gradient loss (veRL actor/pg_loss, OpenRLHF/TRL policy_loss, "
      "AReaL actor_loss, slime/Miles train/pg_loss, posttrain train/policy_loss).",
      agg=WMEAN, weight=TOK, group="policy"),
    g("rl_policy_clip_ratio", "1",
      "Fraction of tokens where the PPO ratio clip bound the update. Unlabelled: either bound "
      "(veRL actor/pg_clipfrac, posttrain train/clip_frac, slime/Miles train/pg_clipfrac, OpenRLHF "
      "ppo_clip_ratio, TRL clip_ratio/region_mean, AReaL clip_ratio); bound=low|high|dual for "
      "one bound (TRL clip_ratio/low_mean|high_mean, veRL pg_clipfrac_lower = dual-clip). "
      "Exactly 0 at one mini-batch per step (posttrain n_mini=1).", "bound",
      agg=WMEAN, weight=TOK, group="policy"),
    g("rl_policy_sequence_clip_ratio", "1",
      "Fraction of responses the clip touched (GSPO sequence level; posttrain train/seq_clip_frac).",
      agg=WMEAN, weight=SEQ, group="policy"),
    g("rl_policy_kl", "1",
      "Approximate KL between the sampling (old) and current policy inside the PPO ratio, "
      "mean(log pi_old - log pi) (veRL/slime actor|train/ppo_kl, OpenRLHF ppo_kl; AReaL approx_kl "
      "is new - old, functional.py:548, and is negated). estimator=k2: TRL PPO "
      "policy/approxkl_avg and ppo/policy/approxkl, 0.5 x mean(log ratio^2); estimator=k1 where a "
      "trainer logs the plain mean log ratio next to that (TRL legacy ppo/policy/policykl).",
      "estimator", agg=WMEAN, weight=TOK, group="policy"),
    g("rl_reference_kl", "1",
      "KL of the policy to the frozen reference, before the coefficient: TRL kl, OpenRLHF kl, "
      "veRL actor/kl_loss, slime/Miles train/kl_loss, posttrain train/kl_mean (k3; "
      "stat=max for train/kl_max), TRL PPO objective/kl, generic KTO loss/kl. `estimator` (k1|k2|k3) "
      "where the key fixes it.", "estimator", agg=WMEAN, weight=TOK, group="policy"),
    g("rl_kl_coefficient", "1",
      "KL coefficient / beta in use, per target: target=loss, the KL term of the loss (veRL "
      "actor/kl_coef = actor.kl_loss_coef, verl/workers/utils/losses.py:142; posttrain kl_beta; "
      "TRL online-DPO beta); target=reward, the KL folded into the reward (veRL "
      "actor/reward_kl_penalty_coeff and critic/kl_coeff, OpenRLHF k_coef, TRL PPO "
      "objective/kl_coef).", "target", agg=LAST, group="policy"),
    g("rl_entropy", "1",
      "Mean token entropy of the policy, before any coefficient (veRL actor/entropy, TRL "
      "entropy, AReaL entropy, OpenRLHF entropy_loss, posttrain train/entropy, slime/Miles "
      "rollout/entropy). phase=update: the entropy of the policy being updated, averaged over "
      "the update's micro-batches (the term an entropy coefficient multiplies), from a framework "
      "that also logs its rollout/old-policy entropy in the same step: veRL actor/entropy_loss, "
      "slime/Miles train/entropy_loss. Every one of these keys is the entropy itself, never "
      "coefficient x entropy (docs/vocabulary.md, conformance). A fast drop is policy collapse.",
      "phase", agg=WMEAN, weight=TOK, group="policy"),
    g("rl_entropy_coefficient", "1", "Entropy bonus coefficient (TRL entropy_coef).", agg=LAST,
      group="policy"),
    g("rl_grad_norm", "1",
      "Policy gradient L2 norm before clipping (veRL actor/grad_norm = mean over mini-batches; "
      "HF/TRL grad_norm and posttrain train/grad_norm = the applied update's).", agg=LAST,
      group="policy"),
    g("rl_learning_rate", "1",
      "Policy learning rate the last update applied (per param group where logged; posttrain "
      "train/learning_rate, HF/TRL learning_rate (transformers reads it before the scheduler "
      "steps), veRL actor/lr, AReaL update/lr). Trainers that log the LR after the scheduler "
      "stepped feed rl_next_learning_rate.",
      "param_group", agg=LAST, group="policy"),
    g("rl_next_learning_rate", "1",
      "Learning rate left for the NEXT optimizer update, read after the scheduler stepped "
      "(posttrain PPO train/policy_lr, train/critic_lr; OpenRLHF actor_lr, critic_lr, lr; "
      "slime/Miles train/lr-pg_N), per role=policy|critic and param_group. Shifted one step "
      "against rl_learning_rate.", "role", "param_group", agg=LAST, group="policy"),
    g("rl_importance_ratio", "1", "Importance ratio pi/pi_old over valid tokens.",
      agg=WMEAN, weight=TOK, group="policy"),
    g("rl_importance_ratio_abs_deviation", "1",
      "Mean |ratio - 1| (posttrain train/ratio_absdev); 0 at one mini-batch per step.",
      agg=WMEAN, weight=TOK, group="policy"),
    g("rl_aux_loss", "1", "MoE router auxiliary loss (TRL aux_loss).", group="policy"),
    # ---------------------------------------------------------------- critic
    g("rl_value_loss", "1", "Value-function loss (veRL critic/vf_loss, OpenRLHF critic_loss, AReaL "
      "critic_loss, slime train/critic-value_loss, posttrain train/value_loss).",
      agg=WMEAN, weight=TOK, group="critic"),
    g("rl_value_clip_ratio", "1", "Fraction of value predictions clipped (veRL critic/vf_clipfrac).",
      agg=WMEAN, weight=TOK, group="critic"),
    g("rl_value_explained_variance", "1",
      "1 - Var(returns - values)/Var(returns) (veRL critic/vf_explained_var). Below 0: the critic "
      "predicts worse than a constant.", group="critic"),
    g("rl_value", "1", "Critic value predictions over valid tokens (veRL critic/values, vpred_mean).",
      agg=WMEAN, weight=TOK, group="critic"),
    g("rl_critic_grad_norm", "1", "Critic gradient norm.", agg=LAST, group="critic"),
    g("rl_critic_learning_rate", "1", "Critic learning rate.", agg=LAST, group="critic"),
    # ---------------------------------------------------------------- lengths
    g("rl_response_length_tokens", "{token}",
      "Generated response length. subset=non_aborted|terminated|correct|incorrect narrows the "
      "samples (veRL response_length*, TRL completions/*_length, slime/Miles rollout/response_len, "
      "posttrain response_len_*). AReaL logs prompt+response: see rl_sequence_length_tokens.",
      "subset", agg=WMEAN, weight=SEQ, group="length"),
    g("rl_prompt_length_tokens", "{token}", "Prompt length (veRL prompt_length, AReaL prompt_len).", agg=WMEAN, weight=SEQ, group="length"),
    g("rl_sequence_length_tokens", "{token}", "Prompt plus response length.", agg=WMEAN, weight=SEQ,
      group="length"),
    g("rl_response_truncated_ratio", "1",
      "Fraction of responses cut at the length limit (veRL response_length/clip_ratio, TRL "
      "completions/clipped_ratio, slime rollout/truncated_ratio, posttrain rollout_truncated_frac, "
      "AReaL no_eos_ratios, OpenRLHF truncated).", "subset", agg=WMEAN, weight=SEQ, group="length"),
    g("rl_prompt_truncated_ratio", "1", "Fraction of prompts cut at the prompt limit.",
      agg=WMEAN, weight=SEQ, group="length"),
    g("rl_response_aborted_ratio", "1", "Fraction of samples aborted (empty response).",
      agg=WMEAN, weight=SEQ, group="length"),
    g("rl_turns", "{turn}", "Turns per multi-turn sample (veRL num_turns, AReaL rollout/num_turns).",
      agg=WMEAN, weight=SEQ, group="agentic"),
    g("rl_tool_calls", "{call}", "Tool calls per sample.", agg=WMEAN, weight=SEQ, group="agentic"),
    g("rl_tool_call_failure_ratio", "1", "Fraction of tool calls that failed (TRL tools/failure_frequency).",
      group="agentic"),
    # ---------------------------------------------------------------- counts (weights)
    g(TOK, "{token}", "Tokens that carried learning signal this step (loss-masked completion tokens).",
      agg=SUM, group="counts"),
    g(SEQ, "{response}", "Responses (completions) handed to the objective this step; "
      "subset=generated counts every generated sample before filtering (OpenRLHF "
      "rollout/num_samples); subset=rollout counts the training samples of the whole rollout "
      "step, which may feed several optimizer steps (Miles rollout/num_training_samples).",
      "subset", agg=SUM, group="counts"),
    g("rl_valid_sequences", "{sequence}", "Sequences that carried learning signal this step.", agg=SUM,
      group="counts"),
    g("rl_step_tokens", "{token}", "Tokens processed in this step (prompt+response).", agg=SUM,
      group="throughput"),
    c("rl_tokens_total", "{token}",
      "Tokens processed since the trainer started, as the trainer counts them (TRL num_tokens, HF "
      "num_input_tokens_seen, AReaL train_perf/total_tokens). Resets when the trainer restarts.",
      group="throughput"),
    # ---------------------------------------------------------------- optimizer outcome
    s("rl_optimizer_update_outcome",
      "What the last update attempt did (posttrain optim/update_outcome): accumulating, applied, "
      "skipped (see skip reason), discarded.", ("accumulating", "applied", "skipped", "discarded"),
      group="optimizer"),
    s("rl_optimizer_skip_reason", "Why the last attempt was skipped (posttrain optim/skip_reason).",
      ("nonfinite_loss", "nonfinite_gradient"), group="optimizer"),
    g("rl_optimizer_step_skipped", "1", "1 when this attempt skipped the update.", agg=MAX,
      group="optimizer"),
    c("rl_optimizer_steps_total", "{step}", "Optimizer steps committed so far.", "role",
      group="optimizer"),
    c("rl_optimizer_nonfinite_skips_total", "{skip}", "Updates rejected for a non-finite loss or gradient.",
      group="optimizer"),
    c("rl_optimizer_zero_grad_skips_total", "{skip}",
      "Updates skipped because the gradient was exactly zero (expected in GRPO when groups tie).",
      group="optimizer"),
    g("rl_optimizer_consecutive_nonfinite_skips", "{skip}", "Non-finite rejections in a row.", agg=MAX,
      group="optimizer"),
    g("rl_optimizer_update_success_ratio", "1", "Fraction of update attempts that succeeded (AReaL "
      "update_successful).", group="optimizer"),
    # ---------------------------------------------------------------- timing and throughput
    g("rl_step_duration_seconds", "s",
      "Wall time of one training step (veRL timing_s/step, slime perf/step_time, TRL step_time, "
      "OpenRLHF timing/step_total, posttrain timer/e2e_step_s).", agg=MAX, group="timing"),
    g("rl_phase_duration_seconds", "s",
      "Seconds spent in one phase of the last step (veRL timing_s/{phase}, AReaL timeperf/{phase}, "
      "slime/Miles perf/{phase}_time, OpenRLHF timing/{phase}, timer()). Phase names are the "
      "framework's own.", "phase", agg=MAX, group="timing"),
    g("rl_phase_time_per_token_seconds", "s", "Phase time per token (veRL timing_per_token_ms).",
      "phase", group="timing"),
    h("rl_phase_timing_seconds", "s",
      "Distribution of phase durations measured by timer(): one observation per phase per step.",
      PHASE_BUCKETS, "phase", group="timing"),
    g("rl_throughput_tokens_per_second", "{token}/s",
      "Tokens per second for the whole run (AReaL train_perf/tokens_per_second).", "phase",
      group="throughput"),
    g("rl_gpu_throughput_tokens_per_second", "{token}/s",
      "Tokens per second per GPU (veRL perf/throughput, slime perf/tokens_per_gpu_per_sec).", "phase",
      group="throughput"),
    g("rl_mfu_ratio", "1",
      "Model FLOPs utilisation: achieved model FLOPs / peak dense FLOPs. phase=train|inference; "
      "source=framework for the trainer's own number (veRL perf/mfu/*, Miles perf/actor_train_mfu), "
      "source=exporter for ours.", "role", "phase", "source", group="throughput"),
    g("rl_achieved_flops_per_second", "FLOP/s", "Achieved model FLOP/s (AReaL estimated_flops_per_second, "
      "slime perf/*_tflops).", "phase", group="throughput"),
    g("rl_gpu_memory_peak_bytes", "By", "Peak torch GPU memory in the step (veRL perf/max_memory_*_gb).",
      "kind", "role", agg=MAX, group="memory"),
    g("rl_host_memory_used_bytes", "By", "Host memory used by the trainer.", "role", agg=MAX,
      group="memory"),
    # ---------------------------------------------------------------- balance
    g("rl_dp_rank_tokens", "{token}",
      "Tokens assigned per data-parallel rank (veRL global_seqlen/*: stat=min|max|minmax_diff|"
      "balanced_min|balanced_max). max far above mean: stragglers.", agg=MAX, group="balance"),
    g("rl_moe_load_imbalance_ratio", "1",
      "MoE expert load max/ideal per layer (AReaL moe_balance max_over_ideal; 1 is perfect).",
      "layer", agg=MAX, group="balance"),
    # ---------------------------------------------------------------- train/infer consistency
    g("rl_train_inference_logprob_abs_diff", "1",
      "Mean |log pi_train - log pi_rollout| per token (slime/Miles train_rollout_logprob_abs_diff, "
      "posttrain logprob_gap_mean, AReaL logp_abs_diff, TRL sampling_logp_difference). Rising on MoE: "
      "routing-flip signature.", agg=WMEAN, weight="rl_train_inference_tokens", group="consistency"),
    g("rl_train_inference_tokens", "{token}", "Tokens the train/inference log-prob gap was measured "
      "over (posttrain logprob_gap_token_count, AReaL train_infer/n_valid_tokens); 0 means no data, "
      "not no gap.", agg=SUM, group="consistency"),
    g("rl_train_inference_kl", "1",
      "KL(rollout engine || trainer) at the sampled tokens, by estimator: estimator=k1 (mean log "
      "ratio, signed: veRL rollout_corr/kl, OpenRLHF vllm_kl, AReaL kl_k1), k2 (AReaL kl_k2), k3 "
      "(exp(z)-z-1: Miles train_rollout_kl, veRL rollout_corr/k3_kl, AReaL kl_k3). Compare one "
      "estimator at a time.", "estimator", agg=WMEAN, weight=TOK, group="consistency"),
    g("rl_train_inference_logprob_tail_ratio", "1",
      "Fraction of compared tokens whose |log pi_train - log pi_rollout| exceeds `threshold` nats "
      "(posttrain train/logprob_gap_gt0p5_frac: 0.5; AReaL train_infer/ratio_outside_{t}: ln t).",
      "threshold", agg=WMEAN, weight="rl_train_inference_tokens", group="consistency"),
    g("rl_train_inference_logprob_diff", "1",
      "Signed mean log pi_train - log pi_rollout per token (AReaL train_infer/logp_diff).",
      agg=WMEAN, weight="rl_train_inference_tokens", group="consistency"),
    g("rl_train_inference_logprob_squared_diff", "1",
      "Mean (log pi_train - log pi_rollout)^2 per token (AReaL train_infer/logp_diff_squared).",
      agg=WMEAN, weight="rl_train_inference_tokens", group="consistency"),
    g("rl_train_inference_nll", "1",
      "Mean negative log-likelihood of the sampled tokens, engine=trainer|rollout (AReaL "
      "train_infer/trainer_nll, rollout_nll).", "engine", agg=WMEAN,
      weight="rl_train_inference_tokens", group="consistency"),
    g("rl_train_inference_nonfinite_ratio", "1",
      "Fraction of compared tokens whose log-prob was not finite (AReaL "
      "train_infer/nonfinite_logp_fraction).", agg=WMEAN, weight="rl_train_inference_tokens",
      group="consistency"),
    g("rl_train_inference_prob_abs_diff", "1",
      "|p_rollout - p_trainer| of the sampled tokens (veRL training/rollout_probs_diff_*).",
      group="consistency"),
    g("rl_train_inference_prob_correlation", "1",
      "Pearson correlation of rollout and trainer token probabilities (veRL "
      "training/rollout_actor_probs_pearson_corr). Below ~0.99: the engines disagree.",
      group="consistency"),
    g("rl_rollout_importance_weight", "1",
      "Importance weights pi_train/pi_rollout correcting the mismatch (TRL "
      "sampling/importance_sampling_ratio, veRL rollout_corr/rollout_is_*, slime/Miles train/tis). "
      "level=sequence for sequence-level weights; truncated=false for the untruncated weight "
      "(slime/Miles train/ois).", "level", "truncated", group="consistency"),
    g("rl_rollout_importance_weight_abs_deviation", "1",
      "Mean |w - 1| of the importance weights (slime/Miles train/tis_abs).", group="consistency"),
    g("rl_rollout_importance_weight_clamped_ratio", "1",
      "Fraction of importance weights that hit the truncation bound (slime/Miles "
      "train/tis_clipfrac, veRL rollout_is_ratio_fraction_high|low with bound=high|low, "
      "posttrain-carbonteq importance_sampling_ratio_clamped_fraction).", "bound", "level",
      group="consistency"),
    g("rl_rollout_rejected_ratio", "1",
      "Fraction of tokens (level=token) or sequences (level=sequence) masked out by "
      "train/inference rejection sampling (veRL rollout_corr/rollout_rs_*masked_fraction, "
      "slime/Miles train/opsm_clipfrac = off-policy sequence masking).", "level", "option",
      group="consistency"),
    g("rl_importance_ess_ratio", "1",
      "Effective sample size of the importance weights over the token count (Miles "
      "train/ess_ratio, veRL rollout_corr/rollout_is_eff_sample_size); 1 means uniform weights.",
      group="consistency"),
    g("rl_token_logprob", "1",
      "Mean log-probability of the sampled tokens under one policy: policy=current (slime/Miles "
      "rollout/log_probs, AReaL update/new_logp), old (AReaL update/old_logp), proximal (AReaL "
      "compute_logp/prox_logp_gt, recomputed by the trainer), reference (rollout/ref_log_probs), "
      "rollout (the engine: rollout/rollout_log_probs), teacher (rollout/teacher_log_probs). "
      "subset=clipped: only the tokens whose PPO ratio the clip bound (AReaL clipped_new_logp, "
      "clipped_old_logp).", "policy", "subset", agg=WMEAN, weight=TOK, group="consistency"),
    # ---------------------------------------------------------------- async
    # added for AReaL/slime/Miles/posttrain
    g("rl_config_value", "1",
      "A configuration value the trainer echoes into its metrics, so a curve says which setting "
      "produced it (AReaL ppo_actor|ppo_critic/eps_clip, c_clip, use_dual_clip, rs_upper|rs_lower, "
      "mask_no_eos_with_zero; posttrain optim/finite_gradient_check_enabled). Booleans are 0/1. "
      "`parameter` is the framework's own name, except for the settings the rules read, which "
      "the integrations and the sidecar's config reader export under one name each "
      "(exporter/catalog/config_echo.py: n_mini, max_grad_norm, max_response_length, "
      "rollout_gpu_memory_fraction, total_training_steps, pi_old_from_rollout, kl_loss_coef, "
      "kl_reward_coef, async_training, colocated, update_weights_interval).",
      "parameter", "role", agg=LAST, group="run"),
    g("rl_distillation_divergence", "1",
      "Policy-to-teacher divergence in on-policy distillation (slime/Miles train/opd_reverse_kl = "
      "sampled-token reverse KL; posttrain train/opd_divergence, token-weighted).",
      agg=WMEAN, weight=TOK, group="policy"),
    g("rl_sample_staleness_steps", "{version}",
      "Policy versions between the sample's behaviour policy and the trained one (AReaL "
      "sample_staleness, veRL trajectory_staleness); reference=proximal counts against AReaL's proximal "
      "policy instead of the trained one. Miles logs absolute weight versions instead.", "reference",
      agg=WMEAN, weight=TOK,
      group="async"),
    # ---------------------------------------------------------------- preference (DPO/KTO/SimPO/RM)
    g("rl_preference_reward", "1", "Implicit reward per side (TRL rewards/chosen|rejected, OpenRLHF "
      "chosen_reward, posttrain dpo_reward_winner|loser, RM rm/reward_chosen).", "side",
      group="preference"),
    g("rl_preference_reward_margin", "1", "Chosen minus rejected reward (rewards/margins). Towards 0 "
      "for a reward model: it no longer discriminates.", group="preference"),
    g("rl_preference_accuracy_ratio", "1", "Fraction of pairs ranked correctly (rewards/accuracies, "
      "OpenRLHF acc, posttrain dpo_accuracy, rm/accuracy). Near 1.0 with flat validation: overfit.",
      group="preference"),
    g("rl_preference_logprob", "1", "Policy log-probability per side (TRL logps/chosen|rejected).",
      "side", group="preference"),
    # added for TRL/OpenRLHF
    g("rl_validation_response_length_tokens", "{token}",
      "Held-out response length per data source (OpenRLHF eval_{datasource}_response_length_mean; "
      "slime eval/{dataset}/response_len has the same shape). The all-sources value is "
      "rl_response_length_tokens{split=\"eval\"}.", "data_source", agg=WMEAN, weight=SEQ,
      group="validation"),
    g("rl_validation_response_truncated_ratio", "1",
      "Fraction of held-out responses cut at the length limit, per data source (OpenRLHF "
      "eval_{datasource}_truncated_rate; slime eval/{dataset}-truncated_ratio). The all-sources value "
      "is rl_response_truncated_ratio{split=\"eval\"}.", "data_source", agg=WMEAN, weight=SEQ,
      group="validation"),
    g("rl_dynamic_filter_pass_ratio", "1",
      "Fraction of generated samples kept by dynamic-sampling filters (OpenRLHF "
      "dynamic_filtering_pass_rate; veRL/slime keep finer filter counters in their own metrics). "
      "Near 0: most groups tie and are dropped, so generation is wasted.", group="groups"),
    # ---------------------------------------------------------------- unknown keys
    g("rl_unmapped_value", "1",
      "Any numeric key the catalog does not know, under its sanitised original key. Bounded: past "
      "the cap new keys are counted in rl_exporter_fallback_keys_dropped_total.", "key",
      group="fallback"),
    # added for distributions (exporter.observe(); exporter/distributions.py)
    h("rl_sample_response_length_tokens", "{token}",
      "Per-response generated length, one observation per response (observe('response_length', "
      "lengths)). histogram_quantile over rate(_bucket) gives length percentiles over time; a "
      "pile-up in the top bucket is truncation.",
      (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072),
      SPLIT, group="length"),
    h("rl_sample_reward", "1",
      "Per-response reward used for training, one observation per response "
      "(observe('reward', rewards)). Binary verifiable rewards fill the le=0 and le=1 buckets. "
      "Signed buckets: the Prometheus exposition carries no _sum/_count (OpenMetrics rule); the "
      "count is the le=\"+Inf\" bucket, the mean is rl_reward.",
      (-10, -5, -2, -1, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1, 2, 5, 10), SPLIT, group="reward"),
    h("rl_sample_advantage", "1",
      "Per-sample (or per-token) advantage (observe('advantage', advantages)). Mass piled in "
      "the (-0.1, 0] bucket with GRPO: tied groups, no learning signal. Signed buckets: no "
      "_sum/_count in the Prometheus exposition; the count is the le=\"+Inf\" bucket.",
      (-5, -3, -2, -1, -0.5, -0.25, -0.1, 0, 0.1, 0.25, 0.5, 1, 2, 3, 5), SPLIT, group="reward"),
    h("rl_token_logprob_gap", "1",
      "Per-token |log pi_train - log pi_rollout| in nats (observe('logprob_gap', gaps)): the "
      "distribution behind rl_train_inference_logprob_abs_diff; a growing tail on MoE is the "
      "routing-flip signature.",
      (1e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10), SPLIT, group="consistency"),
]

# ------------------------------------------------------------------ self-metrics
SELF_METRICS: list[Metric] = [
    c("rl_exporter_frames_received_total", "{frame}", "Frames handed to log().", group="exporter"),
    c("rl_exporter_frames_processed_total", "{frame}", "Frames turned into series.", group="exporter"),
    c("rl_exporter_frames_dropped_total", "{frame}",
      "Frames dropped: reason=queue_full (oldest dropped), closed (log after close), not_a_mapping.",
      "reason", group="exporter"),
    c("rl_exporter_values_rejected_total", "{value}",
      "Values not exported: reason=type|string|overflow|negative_counter|unknown_state|series_limit"
      "|bad_step (a step that is not a finite number)|implausible_step (a step absurdly far past "
      "the last one: a unix time or 1e30 passed as the step).",
      "reason", group="exporter"),
    c("rl_exporter_nonfinite_values_total", "{value}", "NaN or infinite values received, per metric.",
      "metric", group="exporter"),
    c("rl_exporter_unknown_keys_total", "{key}",
      "Values of keys no vocabulary knows (exported under rl_unmapped_value while under the cap).",
      group="exporter"),
    c("rl_exporter_ignored_keys_total", "{key}", "Values of keys the catalog ignores on purpose.",
      group="exporter"),
    c("rl_exporter_fallback_keys_dropped_total", "{value}",
      "Values of unknown keys dropped because the distinct-key cap was reached.", group="exporter"),
    c("rl_exporter_errors_total", "{error}", "Internal errors, by kind (each logged once).", "kind",
      group="exporter"),
    g("rl_exporter_queue_frames", "{frame}", "Frames waiting for the worker.", group="exporter"),
    g("rl_exporter_last_frame_timestamp_seconds", "s", "Unix time the worker last processed a frame.",
      agg=MAX, group="exporter"),
    # half-decades where frames land (a 150-key frame takes ~25 us), decades past 1 ms, which
    # only a pathological frame reaches: every bucket is a series of every rank's budget
    h("rl_exporter_frame_processing_seconds", "s", "Worker time per frame.",
      (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 1e-2, 0.1), group="exporter"),
    # added for the sidecar: `rl-exporter serve` sources (a followed file/glob or ingest)
    c("rl_exporter_source_lines_total", "{line}", "Lines read from a source's files.", "source",
      group="sidecar"),
    c("rl_exporter_source_bytes_total", "By", "Bytes read from a source's files.", "source",
      group="sidecar"),
    c("rl_exporter_source_frames_total", "{frame}",
      "Frames parsed from a source (or accepted by POST /ingest) and handed to the exporter.",
      "source", group="sidecar"),
    c("rl_exporter_source_lines_rejected_total", "{line}",
      "Lines (or ingest requests) rejected: reason=line_too_long|malformed|no_value|fragment|"
      "duplicate_key|bad_json|schema|malformed_value|unauthorized|too_large|invalid_frame|"
      "run_conflict. Lines that are simply not metrics are not counted.",
      "source", "reason", group="sidecar"),
    g("rl_exporter_source_lag_bytes", "By",
      "Bytes written to a source's files but not yet parsed (0 when caught up).", "source",
      agg=SUM, group="sidecar"),
    g("rl_exporter_source_last_frame_timestamp_seconds", "s",
      "Unix time a source last produced a frame.", "source", agg=MAX, group="sidecar"),
    c("rl_exporter_source_rotations_total", "{event}",
      "Files of a source rotated or replaced (a new file at the path; the old one read to its end).",
      "source", group="sidecar"),
    c("rl_exporter_source_truncations_total", "{event}",
      "Files of a source truncated or rewritten in place and re-read from the start "
      "(veRL truncates its JSONL on every trainer restart).", "source", group="sidecar"),
    g("rl_exporter_source_files", "{file}",
      "Files of a source by state: following, waiting (not there yet), deleted (old descriptor "
      "still read).", "source", "state", agg=SUM, group="sidecar"),
    c("rl_exporter_source_errors_total", "{error}",
      "Sidecar errors, by kind: state_unreadable (the state file was corrupt: resumed from the "
      "spool's offsets, or from scratch without one), state_write (a checkpoint could not be "
      "written), spool_write (frames not written to --spool-out; still exported), spool_sync "
      "(the spool could not be fsynced at a checkpoint), file_unreadable (a matched file vanished or could not be opened before it was read), "
      "truncated_unread (a file truncated or rewritten while bytes of it seen were still unread: "
      "a lagging sidecar), no_frames (many lines read, none a frame: likely the wrong --source format). Each kind "
      "is logged once, then at most every 10 minutes.", "source", "kind", group="sidecar"),
    c("rl_exporter_stack_dumps_failed_total", "{dump}",
      "Hang stack dumps of the trainer serve could not take with py-spy, by reason: "
      "not_permitted (ptrace denied: the sidecar lacks CAP_SYS_PTRACE), no_pid (no --pid and no "
      "process writing the log: the pod does not share its process namespace, or the process "
      "is gone), no_pyspy (py-spy not on PATH), timeout (killed past its time), error (any other "
      "py-spy failure). Each reason is logged once.", "reason", group="sidecar"),
]

# ------------------------------------------------------------------ phases in progress, GPU time by
# phase (exporter/phases.py LivePhases, exporter/gpu.py attribution). Appended as one block so the
# lists above stay as they are. The per-GPU ones are hw_gpu_* series: they carry the GPU identity
# (and `rank` when known) like every hw_gpu_* series does.
_GPU_IDENTITY = ("gpu", "uuid", "gpu_model", "rank")
METRICS.extend([
    Metric("rl_phase_in_progress_start_timestamp_seconds", GAUGE, "s",
           "Unix time at which the oldest still-open timer(phase) of this phase started; NaN while "
           "the phase is not in progress. time() minus this is how long the phase has been open, "
           "so a hang inside gen or update_actor shows before the step ends.",
           ("phase",), MAX, group="timing"),
    Metric("rl_phase_recent_median_duration_seconds", GAUGE, "s",
           "Median wall-clock duration of the phase's last 20 closed occurrences (timer(phase), "
           "outermost only). The yardstick for rl_phase_in_progress_start_timestamp_seconds.",
           ("phase",), MAX, group="timing"),
    Metric("hw_gpu_phase_busy_seconds_total", COUNTER, "s",
           "GPU seconds spent busy during each phase: every NVML sample adds (seconds since the "
           "previous sample) x utilization.gpu to the phase in progress at sample time (the most "
           "recently opened timer; phase=none when no timer is open). Busy means a kernel ran, "
           "not that it was efficient.",
           _GPU_IDENTITY + ("phase",), SUM, group="gpu"),
    Metric("hw_gpu_phase_idle_seconds_total", COUNTER, "s",
           "GPU seconds spent idle during each phase: (seconds since the previous sample) x "
           "(1 - utilization.gpu), attributed like hw_gpu_phase_busy_seconds_total. "
           "idle / (idle + busy) over a window is the idle fraction of that phase.",
           _GPU_IDENTITY + ("phase",), SUM, group="gpu"),
    Metric("hw_gpu_phase_memory_peak_bytes", GAUGE, "By",
           "Highest device memory in use (NVML, all processes) sampled during the latest "
           "occurrence of each phase.",
           _GPU_IDENTITY + ("phase",), MAX, group="gpu"),
])

# ------------------------------------------------------------------ goodput (exporter/core/goodput.py)
METRICS.append(
    Metric("rl_goodput_seconds_total", COUNTER, "s",
           "Wall-clock seconds of the run by where they went: bucket=step is productive step "
           "time; startup (before the first step), checkpoint, validation, weight_sync, "
           "rollout_wait (waiting for samples, and the slowest sample's tail where reported), "
           "logprob_recompute (old/ref log-probs), stalled (no step past the stall threshold) "
           "and restart (steps redone after a resume) are badput; paused (a declared pause phase: "
           "pause, heat_guard, thermal_pause) is neither productive nor stalled. Accounted each time the step "
           "advances, from the step clock and the phase durations of that step "
           "(docs/goodput.md has the phase -> bucket table per framework).",
           ("bucket",), SUM, group="run"))
