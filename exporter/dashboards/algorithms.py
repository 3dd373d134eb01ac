"""Algorithm-specific views: DPO/KTO/SimPO, reward-model training, PPO critic,
multi-turn/agentic, async staleness, MoE balance, train/inference log-prob consistency
(the RL metrics dictionary, sections 3, 5, 6, 7; the Miles lab ranges; the veRL metrics guide, section 11.3 panel 3)."""
from __future__ import annotations

from .common import (AGENTIC, ASYNC, CONSISTENCY, CRITIC, MOE, PREFERENCE, heatmap, mean, q, sel,
                     ts)
from .model import Dashboard, Query, Row

SCORE_CENTERING = "the run enables score centering (posttrain rl.score_centering.enabled)"
RM = "the run trains a reward model (rm/* keys) or logs eval copies of its preference accuracy"

ROWS = [
    Row("DPO / KTO / SimPO", [
        ts("Implicit reward: chosen vs rejected",
           "Implicit reward per side of the preference pair.",
           "chosen positive and rising, rejected negative or clearly below chosen (the RL metrics dictionary, section 5).",
           q(mean("rl_preference_reward"), "{{run}} {{side}}"), unit="none", decimals=3, gate=PREFERENCE),
        ts("Reward margin",
           "Chosen minus rejected implicit reward: the model's ability to tell the pair apart.",
           "rises steadily; still rising while validation is flat means overfitting the pairs "
           "(the RL metrics dictionary, section 5).",
           q(mean("rl_preference_reward_margin")), unit="none", decimals=3, gate=PREFERENCE),
        ts("Preference accuracy",
           "Fraction of pairs where the chosen answer gets the higher reward.",
           "rises above 0.5; 0.99+ while evaluation does not improve is overfitting (the RL metrics dictionary "
           "section 12).",
           q(mean("rl_preference_accuracy_ratio")), unit="percentunit", min=0, max=1, gate=PREFERENCE,
           thresholds=[(None, "red"), (0.5, "green"), (0.99, "yellow")]),
        ts("Log-probabilities: chosen vs rejected",
           "Policy log-probability of each side.",
           "rejected falls faster than chosen; both falling fast together means the policy drifts "
           "away from the data (this project's heuristic).",
           q(mean("rl_preference_logprob"), "{{run}} {{side}}"), unit="none", decimals=2,
           gate=PREFERENCE, width=12),
        ts("Preference loss",
           "The DPO/KTO/SimPO loss (loss/dpo).",
           "falls steadily (the RL metrics dictionary, section 5).",
           q(mean("rl_loss")), unit="none", decimals=4, gate=PREFERENCE, width=12),
    ]),
    Row("Reward-model training", [
        ts("RM accuracy: train vs held-out",
           "Fraction of pairs the reward model ranks correctly, on training and held-out pairs.",
           "high and rising on both; train accuracy high while held-out or downstream PPO does not "
           "improve means the RM overfits (the RL metrics dictionary, section 6).",
           q(mean("rl_preference_accuracy_ratio"), "{{run}} train"),
           q(sel("rl_preference_accuracy_ratio", 'stat="", split="eval"'), "{{run}} held-out"),
           unit="percentunit", min=0, max=1, gate=RM),
        ts("RM reward margin",
           "Reward the RM gives chosen minus rejected answers.",
           "clearly above 0; a margin tending to 0 means the judge no longer discriminates "
           "(the RL metrics dictionary, section 6).",
           q(mean("rl_preference_reward_margin")), unit="none", decimals=3, gate=RM,
           thresholds=[(None, "red"), (0.1, "green")]),
        ts("RM rewards per side and gradient norm",
           "Mean RM reward for chosen and rejected answers, and the RM gradient norm.",
           "rejected clearly below chosen; gradient norm steady (the RL metrics dictionary, section 6).",
           q(mean("rl_preference_reward"), "{{run}} {{side}}"),
           q(mean("rl_grad_norm"), "{{run}} grad norm"), unit="none", decimals=3, gate=RM),
    ]),
    Row("PPO critic", [
        ts("Value loss", "Critic loss.",
           "falling: 10-100 early, 0.1-10 later, below 1 once converged (the veRL metrics guide; "
           "the blue line marks 1).",
           q(mean("rl_value_loss")), unit="none", decimals=3, gate=CRITIC,
           thresholds=[(None, "green"), (1, "blue")], width=6),
        ts("Explained variance", "1 - Var(returns - values)/Var(returns).",
           "-1.0 to 0.2 early, above 0.7 once converged (the veRL metrics guide); below 0 after "
           "warm-up the critic is worse than a constant (RLCriticNotLearning). Lines at 0 and 0.7.",
           q(mean("rl_value_explained_variance")), unit="none", decimals=3, max=1, gate=CRITIC,
           thresholds=[(None, "blue"), (0, "blue"), (0.7, "green")], width=6),
        ts("Value prediction vs return", "Mean value prediction and mean return.",
           "the curves track each other (the veRL metrics guide, section 11.3 panel 3).",
           q(mean("rl_value"), "{{run}} value"), q(mean("rl_return"), "{{run}} return"),
           unit="none", decimals=3, gate=CRITIC, width=6),
        ts("Critic clip fraction, gradient norm and LR",
           "Value clip fraction, critic gradient norm and critic learning rate.",
           "value clip fraction 0-0.5, usually below 0.2 (above 0.5 restricts the value update: "
           "RLValueClipFractionHigh); critic gradient norm 0.1-100, usually above the actor's "
           "(the veRL metrics guide); the critic LR follows its schedule (raise it when the critic "
           "lags, the RL metrics dictionary).",
           q(mean("rl_value_clip_ratio"), "{{run}} value clip"),
           q(mean("rl_critic_grad_norm"), "{{run}} grad norm"),
           q(mean("rl_critic_learning_rate"), "{{run}} lr"),
           unit="none", decimals=4, gate=CRITIC, width=6),
    ]),
    Row("Multi-turn and agentic", [
        ts("Turns per sample", "Mean and max assistant turns per sample (AReaL, slime/Miles), and "
           "veRL's message count, the prompt included (num_turns).",
           "1 assistant turn, or 2 messages (the RL metrics dictionary, section 7, reading veRL's "
           "num_turns), for single-turn QA; a sudden jump of the max means some samples are stuck "
           "in a loop.",
           q(sel("rl_turns", 'split=""'), "{{run}} {{stat}}"),
           q(sel("rl_turn_messages", 'split=""'), "{{run}} messages {{stat}}"),
           unit="short", min=0, gate=AGENTIC),
        ts("Tool calls per sample", "Mean tool calls per sample.", "steady for a fixed task mix.",
           q(mean("rl_tool_calls")), unit="short", min=0, gate=AGENTIC),
        ts("Tool call failures", "Fraction of tool calls that failed.",
           "low (this project's heuristic: under 0.1); a rise means the tool or the call format broke.",
           q(mean("rl_tool_call_failure_ratio")), unit="percentunit", min=0, max=1, gate=AGENTIC,
           thresholds=[(None, "green"), (0.1, "yellow"), (0.3, "red")]),
    ]),
    Row("Async staleness", [
        ts("Sample staleness", "Policy versions between a sample's behaviour policy and the "
           "trained policy: mean and max.",
           "within the configured max staleness (typically 1-4 versions, this project's heuristic); a growing "
           "max means rollouts fall behind training. Miles logs the samples' weight version instead: "
           "the lag of its oldest sample, in weight versions, is the engine's current version "
           "(1 + rollout / update_weights_interval) minus it (run:rl_sample_weight_version:lag: 0 "
           "synchronous, 1 one step off), and how late a dedicated-fleet evaluation finished (the "
           "Miles lab ranges give no range).",
           q(sel("rl_sample_staleness_steps", 'split=""'), "{{run}} {{stat}} {{reference}}"),
           q('run:rl_sample_weight_version:lag{run=~"$run"}', "{{run}} weight-version lag (oldest sample)",
             gate="the framework logs the samples' weight version (Miles rollout/weight_version)"),
           q(mean("rl_eval_lag_steps"), "{{run}} eval lag",
             gate="evaluation runs on a dedicated fleet (Miles eval/lag_steps)"),
           unit="short", min=0,
           gate=ASYNC, width=12),
        ts("Importance weights correcting staleness", "Truncated importance weights applied to "
           "stale or mismatched samples.",
           "near 1; large weights mean the sampler and trainer disagree.",
           q(sel("rl_rollout_importance_weight", 'split=""'), "{{run}} {{stat}}"), unit="none",
           decimals=3, gate=ASYNC, width=12),
    ]),
    Row("MoE balance", [
        heatmap("Expert load imbalance by layer",
                "Per MoE layer: expert load max/ideal over time (1 is perfect balance).",
                "close to 1 in every layer (this project's heuristic: above 2 means a few experts take most "
                "tokens); one layer drifting up is router collapse.",
                Query("max by (layer) (" + sel("rl_moe_load_imbalance_ratio") + ")", "{{layer}}",
                      format="heatmap"),
                unit="none", gate=MOE, width=16),
        ts("Router auxiliary loss", "MoE router auxiliary (load-balancing) loss.",
           "small and stable.",
           q(mean("rl_aux_loss")), unit="none", decimals=4, gate=MOE, width=8),
    ]),
    Row("Train/inference log-prob consistency", [
        ts("Log-prob gap (train vs rollout)",
           "Mean |log pi_train - log pi_rollout| per token between the trainer and the rollout engine.",
           "small and flat: 0.0136-0.0164 with plain sampling on the Miles lab setup (setup "
           "specific; build your own range from two or three seeds). Rising on MoE is the "
           "routing-flip signature.",
           q(mean("rl_train_inference_logprob_abs_diff")), unit="none", decimals=4, min=0,
           gate=CONSISTENCY),
        ts("Train/rollout KL", "KL between the rollout engine's and the trainer's distributions "
           "at the sampled tokens.",
           "0.00063-0.00076 on the Miles lab setup (setup specific).",
           q(mean("rl_train_inference_kl"), "{{run}} {{estimator}}"), unit="none", decimals=5, min=0, gate=CONSISTENCY),
        ts("Tokens measured", "Tokens the log-prob gap was measured over.",
           "above 0; 0 means no data, not no gap.",
           q(mean("rl_train_inference_tokens")), unit="short", min=0, gate=CONSISTENCY),
        ts("Extreme-token tails",
           "Share of compared tokens whose |log pi_train - log pi_rollout| exceeds each threshold "
           "(AReaL ratio_outside_{1.5..10}: the extreme-token fraction of Rollout Routing Replay; "
           "posttrain gt0p5).",
           "small and flat, above 0 on every healthy run (the posttrain metrics reference: the gap "
           "is kernel noise on dense models); no source gives a range, so compare with your own "
           "runs. Not coloured.",
           q(sel("rl_train_inference_logprob_tail_ratio", 'stat="", split=""'), "{{run}} > {{threshold}} nats"),
           unit="percentunit", min=0, gate=CONSISTENCY, width=12),
        ts("Non-finite log-probs",
           "Share of valid tokens with a NaN or infinite trainer or engine log-prob (AReaL "
           "nonfinite_logp_fraction).",
           "exactly 0 (AReaL metrics tracking: with any, the tail ratios are NaN). Non-finite on "
           "every recent step: RLTrainInferenceNonFinite. Red above 0.",
           q(mean("rl_train_inference_nonfinite_ratio"), "{{run}} non-finite"),
           unit="percentunit", min=0, gate=CONSISTENCY, width=12,
           thresholds=[(None, "green"), (1e-9, "red")]),
    ]),
    Row("Score centering (posttrain rl.score_centering)", [
        ts("Head mass seen by the sampler's top-k",
           "Mean probability mass inside the sampler's top-k head: the sampler's (q) and the "
           "trainer's (p), train/sc_head_mass_q|p.",
           "the posttrain metrics reference reports >= 0.99 at k = 128 (the blue line); a smaller "
           "k holds less mass on a healthy run, so nothing is coloured. Falling at a fixed k means "
           "the head form sees less of the sampling distribution: raise k.",
           q(sel("rl_score_centering_head_mass_ratio", 'stat="", split=""'), "{{run}} {{engine}}"),
           unit="percentunit", min=0, max=1, gate=SCORE_CENTERING, width=8,
           thresholds=[(None, "green"), (0.99, "blue")]),
        ts("Tail-mass ratio rho", "rho = q_tail / p_tail: token mean and the step's largest.",
           "1 when sampler and trainer agree (the posttrain metrics reference); a large max is a "
           "confident trainer against an unsure sampler, where the 1e-6 floor bites. Line at 1.",
           q(sel("rl_score_centering_tail_mass_ratio", 'split=""'), "{{run}} {{stat}}"),
           unit="none", decimals=3, min=0, gate=SCORE_CENTERING, width=8,
           thresholds=[(None, "green"), (1, "blue")]),
        ts("Correction and token weight",
           "Mean |correction| (exactly 0 when q == p) and the composed sampled-token weight "
           "(exactly 1 under compose=none).",
           "correction near 0, weight near 1 (the posttrain metrics reference).",
           q(mean("rl_score_centering_correction_abs"), "{{run}} |correction|"),
           q(mean("rl_score_centering_token_weight"), "{{run}} token weight"),
           unit="none", decimals=4, gate=SCORE_CENTERING, width=8),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-algorithms", title="RL algorithms",
    description="Panels for one algorithm family each: preference training, reward models, the "
                "PPO critic, agentic runs, async staleness, MoE balance, train/inference "
                "consistency. Rows stay empty for runs that do not use the feature.",
    rows=ROWS, tags=["rl-exporter", "rl"])
