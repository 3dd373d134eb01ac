"""OpenRLHF (OpenRLHF/OpenRLHF 3c3be62, 0.11.0).

PPO / GRPO / REINFORCE++ log one `status` dict per global step (ppo_actor.py,
ppo_critic.py, experience_maker.py, ppo_trainer.py); DPO and reward-model
trainers log `loss`, `acc`, `chosen_reward`, `reject_reward`, ... per
accumulation window. The same dict reaches three sinks:

- console: `✨ Global step N: {...}` (step in the message, not the dict);
- tqdm bar: short names (act_loss, gen_len, tot_len, act_lr, ent_loss, ...);
- W&B / TensorBoard: every key as `train/{key}` plus `train/global_step`,
  eval keys as `eval/{key}` plus `eval/global_step`.

Training keys are therefore declared once and registered both bare and under
`train/`; `eval/` (and the `eval_` prefix of the eval dict) resolve through the
bare key with split="eval".
"""
import re

from ..metrics import SPLIT, STAT
from ..model import GAUGE, LAST, MEAN, SUM, Metric, Vocabulary, alias, pattern

METRICS = [
    Metric("rl_sequence_return", GAUGE, "1",
           "Return summed over a sequence's tokens, shaped rewards included (OpenRLHF return = "
           "reward.sum(-1)); rl_return is the token mean.", (STAT, SPLIT), MEAN, group="reward"),
    Metric("rl_reference_logprob_diff", GAUGE, "1",
           "Mean log pi - log pi_ref over response tokens, signed (OpenRLHF logprobs_diff: the k1 "
           "estimate of the KL to the reference; `kl` uses the configured estimator).",
           (STAT, SPLIT), MEAN, group="policy"),
    Metric("rl_sequence_length_limit_ratio", GAUGE, "1",
           "Fraction of samples whose token count reached the generation limit as the trainer "
           "counts it (OpenRLHF response_clip_ratio); `truncated` (rl_response_truncated_ratio) is "
           "the engine's finish_reason == length.", (STAT, SPLIT), MEAN, group="length"),
    Metric("rl_nll_loss", GAUGE, "1",
           "Auxiliary NLL (SFT) loss on the chosen responses in preference training (OpenRLHF DPO "
           "nll_loss, only with nll_loss_coef > 0).", (STAT, SPLIT), MEAN, group="preference"),
]

_TOK = "token-weighted over micro-batches, all-reduced over DP"
_SAMPLE = "sample-weighted mean"

K = {
    # ---- actor (ppo_actor.py); token-weighted means, lr/grad_norm the last value
    "policy_loss": alias("rl_policy_loss", agg=MEAN, note=_TOK),
    # aggregate_loss(output.entropy, action_mask): the entropy itself, logged whenever
    # actor.entropy_coef is not None (openrlhf/trainer/ray/ppo_actor.py:346-351,373)
    "entropy_loss": alias("rl_entropy", agg=MEAN,
                          note="the entropy itself; only with actor.entropy_coef set (0 logs it)"),
    # read with get_last_lr() after optimizer_step, which steps the scheduler: the next LR
    "actor_lr": alias("rl_next_learning_rate", role="policy"),
    "actor_grad_norm": alias("rl_grad_norm", note="last value in the step"),
    "ppo_clip_ratio": alias("rl_policy_clip_ratio", agg=MEAN, note=_TOK),
    "ppo_kl": alias("rl_policy_kl", agg=MEAN, note="KL(old || new), " + _TOK),
    "vllm_kl": alias("rl_train_inference_kl", agg=MEAN, estimator="k1",
                     note="mean(rollout - old logprob), IS correction on"),
    "kl": alias("rl_reference_kl", agg=MEAN, note="configured estimator (k1/k2/k3), token-weighted"),
    "logprobs_diff": alias("rl_reference_logprob_diff"),
    # ---- experience (experience_maker.py / samples_generator.py): per-sample
    "reward": alias("rl_reward", agg=MEAN, note=_SAMPLE),
    "score": alias("rl_score", agg=MEAN, note=_SAMPLE),
    # reward.sum(dim=-1) of the shaped token rewards (experience_maker.py:321): a per-sequence
    # sum, not the token-mean return veRL, AReaL and slime log
    "return": alias("rl_sequence_return", agg=MEAN, note="sum of rewards per sample, " + _SAMPLE),
    "group_reward_std": alias("rl_group_reward_std", agg=MEAN),
    "response_clip_ratio": alias("rl_sequence_length_limit_ratio"),
    "response_length": alias("rl_response_length_tokens", agg=MEAN),
    "total_length": alias("rl_sequence_length_tokens", agg=MEAN),
    "truncated": alias("rl_response_truncated_ratio", agg=MEAN, note="finish_reason == length"),
    # ---- critic (ppo_critic.py)
    "critic_loss": alias("rl_value_loss", agg=MEAN),
    "values": alias("rl_value", agg=MEAN),
    "critic_lr": alias("rl_next_learning_rate", role="critic"),
    "critic_grad_norm": alias("rl_critic_grad_norm"),
    # ---- trainer timing (ppo_trainer.py), seconds
    "timing/step_total": alias("rl_step_duration_seconds",
                               note="sync trainer: sum of the timing/* phases; async: iteration wall time"),
    # ---- rollout stats before dynamic batching (ppo_trainer.py)
    # every generated sample, before dynamic filtering and batching (the bare keys: trained-on only)
    "rollout/reward_mean": alias("rl_reward", subset="generated", agg=MEAN),
    "rollout/reward_std": alias("rl_reward", subset="generated", stat="std"),
    "rollout/response_length_mean": alias("rl_response_length_tokens", subset="generated", agg=MEAN),
    "rollout/truncated_rate": alias("rl_response_truncated_ratio", subset="generated", agg=MEAN),
    "rollout/num_samples": alias("rl_responses", subset="generated", agg=SUM),
    "dynamic_filtering_pass_rate": alias("rl_dynamic_filter_pass_ratio"),
    # ---- DPO / reward-model trainers (per accumulation window)
    "loss_mean": alias("rl_loss", agg=MEAN, note="mean over the accumulation window (DPO/RM)"),
    "acc_mean": alias("rl_preference_accuracy_ratio", agg=MEAN,
                      note="mean over the accumulation window; in the eval dict, the eval accuracy"),
    "chosen_reward": alias("rl_preference_reward", side="chosen", agg=LAST,
                           note="last micro-batch, all-reduced over DP"),
    "reject_reward": alias("rl_preference_reward", side="rejected", agg=LAST,
                           note="last micro-batch, all-reduced over DP"),
    "lr": alias("rl_next_learning_rate", role="policy", note="DPO/RM, after optimizer_step"),
    "grad_norm": alias("rl_grad_norm", note="DPO/RM; on the PPO tqdm bar the actor grad norm"),
    "nll_loss": alias("rl_nll_loss"),
    "ptx_loss": alias("rl_loss", component="ptx", agg=MEAN, note="pretraining-data loss mixed in"),
    "preference_loss": alias("rl_loss", component="preference", agg=MEAN, note="DPO/RM"),
    "aux_loss": alias("rl_aux_loss"),
    # ---- SFT trainer (sft_trainer.py): loss = gpt_loss + aux_loss * aux_loss_coef
    "gpt_loss": alias("rl_loss", component="lm", agg=MEAN,
                      note="SFT next-token NLL of the micro-batch, without the MoE aux loss; "
                           "loss_mean is its mean over the accumulation window"),
    # ---- 0.1.x PPO status dict (openllama2 ppo_trainer.py: 'k_coef': self.kl_ctl.value)
    "k_coef": alias("rl_kl_coefficient", target="reward",
                    note="the (adaptive or fixed) in-reward KL controller's value"),
}

# tqdm bar short names (ppo_actor.py / ppo_critic.py short_status): console only, never under train/.
TQDM = {
    # short names of releases before 0.5
    "pg": alias("rl_policy_loss", agg=MEAN),
    "rm": alias("rl_reward", agg=MEAN),
    "ret": alias("rl_sequence_return", agg=MEAN),
    "glen": alias("rl_response_length_tokens", agg=MEAN),
    "tlen": alias("rl_sequence_length_tokens", agg=MEAN),
    "cri": alias("rl_value_loss", agg=MEAN),
    "vals": alias("rl_value", agg=MEAN),
    "ptx": alias("rl_loss", component="ptx", agg=MEAN),
    "act_loss": alias("rl_policy_loss", agg=MEAN),
    "gen_len": alias("rl_response_length_tokens", agg=MEAN),
    "tot_len": alias("rl_sequence_length_tokens", agg=MEAN),
    "act_lr": alias("rl_next_learning_rate", role="policy"),
    "ent_loss": alias("rl_entropy", agg=MEAN),
    # critic bar: read from ppo_critic.py, not listed in framework-keys.json
    "cri_loss": alias("rl_value_loss", agg=MEAN),
    "cri_lr": alias("rl_next_learning_rate", role="critic"),
}

# Eval dict (log_eval): global values are eval copies of training metrics.
EVAL = {
    "eval_loss": alias("rl_validation_loss", note="DPO/RM eval loss"),
    "eval_response_length_mean": alias("rl_response_length_tokens", split="eval"),
    "eval_truncated_rate": alias("rl_response_truncated_ratio", split="eval"),
    "eval_num_samples": alias("rl_responses", split="eval"),
}

# Training keys also arrive as W&B/TensorBoard `train/{key}`, eval keys as `eval/{key}`; the
# eval ones are explicit so `eval/eval_loss` lands on the same series as `eval_loss`.
KEYS = {**K, **{f"train/{k}": a for k, a in K.items()}, **TQDM,
        **EVAL, **{f"eval/{k}": a for k, a in EVAL.items()}}

_DS = r"(?P<data_source>.+)"
_PATTERNS = [
    (r"timing/(?P<phase>.+)", "rl_phase_duration_seconds", {}),
]
P = [pattern(rf"^(?:train/)?{body}$", metric, **kw) for body, metric, kw in _PATTERNS] + [
    # components a user's reward function returns next to the reward (remote/custom reward
    # functions' extra logs, forks such as MM-EUREKA: accuracy_reward, format_reward); OpenRLHF's
    # own *_reward keys (chosen_reward, reject_reward) are preference rewards, not components
    pattern(r"^(?:train/)?(?!(?:chosen|reject)_reward$)(?P<function>[A-Za-z]\w*_rewards?)$",
            "rl_reward_function",
            agg=MEAN),
    # per data source eval (ppo_trainer.py:110-131): pass1 is the mean reward over all samples,
    # pass{n} the mean over prompts of the best of their n rewards: veRL's val-core reward/mean@n
    # and reward/best@n, on the reward's scale (pass@n only for 0/1 rewards)
    pattern(rf"^(?:eval/)?eval_{_DS}_pass1$", "rl_validation_score", var="reward", estimator="mean"),
    pattern(rf"^(?:eval/)?eval_{_DS}_pass(?P<n>\d+)$", "rl_validation_score", var="reward",
            estimator="best"),
    pattern(rf"^(?:eval/)?eval_{_DS}_response_length_mean$", "rl_validation_response_length_tokens"),
    pattern(rf"^(?:eval/)?eval_{_DS}_truncated_rate$", "rl_validation_response_truncated_ratio"),
]

# DPO/RM `loss` and `acc` are the last micro-batch's values; `loss_mean`/`acc_mean` in the same
# dict are the accumulation-window means and carry the series.
_IGNORED = {
    "loss": "DPO/RM last micro-batch loss; loss_mean in the same dict is the window mean (rl_loss)",
    "acc": "DPO/RM last micro-batch accuracy; acc_mean in the same dict is the window mean",
}
# fields of the trainer's internal status/eval accumulators, popped or reduced before logging
_INTERNAL = {k: "internal accumulator of the trainer, popped or reduced before logging"
             for k in ("count", "lengths", "metrics", "weights", "num_samples", "num_action_tokens",
                       "pass1")}

VOCABULARY = Vocabulary(
    name="openrlhf", title="OpenRLHF", keys=KEYS, patterns=P,
    ignored={
        **_IGNORED,
        **_INTERNAL,
        **{f"train/{k}": why for k, why in _IGNORED.items()},
        "train/generated_samples": "W&B table of sample texts (global_step, text, reward), not a number",
    },
    ignored_patterns=[
        (re.compile(r"^(?:(?:train|eval)/)?generated_samples$"), "W&B table of sample texts, not a number"),
        (re.compile(r"^pass\d+$"), "internal accumulator of the evaluation loop, reduced before logging"),
    ],
    step_keys=("train/global_step", "eval/global_step", "global_step"),
    # eval/ is the W&B prefix of the eval dict; eval_ also marks an eval copy of a training key.
    eval_prefixes=("eval/", "eval_"),
    doc="Console `✨ Global step N: {...}` dict reprs, tqdm short names, W&B/TensorBoard "
        "train/* and eval/* scalars.",
)
