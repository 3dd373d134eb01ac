"""What each canonical series means in each framework that feeds it, at the pinned releases.

One row per (series, frameworks): what the framework's keys mean there, the source line that
says so, and the verdict: how the catalog makes the series mean one thing.

- mapped: the keys are the series' quantity as they are;
- converted: the same quantity after the factor the row states (the alias' scale, or a
  recording rule's conversion with a setting the integration captures);
- labelled: the same family, with a label that keeps the keys apart (estimator, target, phase);
- split: the key means something else and now feeds its own series (the row names it);
- open: a difference the catalog cannot resolve from the key alone (it depends on a setting
  no log or integration carries), stated so a reader knows.

Pins: veRL 0.9.1, OpenRLHF 0.11.2, AReaL 1.0.4, ms-swift 4.6.0, TRL 1.16.0 (PyPI wheels); slime
THUDM/slime 624b824, Miles radixark/miles 31f1ca9 (tests/vendor/README.md); posttrain as the
posttrain metrics reference states it; LLaMA-Factory and posttrain (carbonteq-ai) pass the
HF/TRL trainer's dict through under TRL's key names. `generic` is the sidecar's vocabulary of
conventional names no single framework owns. Paths are relative to each package's root (verl/,
openrlhf/, areal/, swift/, trl/) or to the slime and Miles repositories.

tests/unit/catalog/test_conformance_table.py fails when a series gains a framework without a
row, so every new alias needs a verdict. `python -m exporter.catalog.vocabulary_doc` prints the
table into docs/vocabulary.md.
"""
from __future__ import annotations

from dataclasses import dataclass

MAPPED, CONVERTED, LABELLED, SPLIT, OPEN = "mapped", "converted", "labelled", "split", "open"
VERDICTS = (MAPPED, CONVERTED, LABELLED, SPLIT, OPEN)

PINS = {
    "verl": "veRL 0.9.1", "openrlhf": "OpenRLHF 0.11.2", "areal": "AReaL 1.0.4",
    "swift": "ms-swift 4.6.0", "trl": "TRL 1.16.0", "slime": "slime 624b824", "miles": "Miles 31f1ca9",
    "posttrain": "the posttrain metrics reference", "posttrain_carbonteq": "carbonteq-ai/posttrain 42da687",
    "llamafactory": "LLaMA-Factory (HF/TRL keys, not re-read)", "generic": "conventional names",
}

# framework groups that share one logging code path
SM = ("slime", "miles")                                       # Miles is a slime fork
HF = ("trl", "swift", "llamafactory", "posttrain_carbonteq")  # TRL's names through the HF Trainer

_SM = "Miles copies slime's metric code (miles/utils/train_metric_utils.py, miles/ray/rollout/metrics.py)"
_HF = ("TRL's key and definition; ms-swift 4.6 keeps TRL's names in its own trainers, LLaMA-Factory "
       "and carbonteq pass the HF/TRL log dict through")
_HF_TRAINER = "transformers 4.57.1 Trainer._maybe_log_save_evaluate / log (trainer.py:2715-2750)"


@dataclass(frozen=True)
class Row:
    frameworks: tuple[str, ...]
    meaning: str
    source: str
    verdict: str = MAPPED
    note: str = ""   # the factor, label or target series where the verdict needs one

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"bad verdict {self.verdict!r}")


def R(frameworks, meaning, source, verdict=MAPPED, note=""):
    fws = (frameworks,) if isinstance(frameworks, str) else tuple(frameworks)
    return Row(fws, meaning, source, verdict, note)


TABLE: dict[str, list[Row]] = {
    # ------------------------------------------------------------------ policy: entropy, KL, clip
    "rl_entropy": [
        R("verl", "actor/entropy: token entropy of pi_old from the old-log-prob pass; actor/entropy_loss: "
          "agg_loss of the updated policy's entropy, per update micro-batch, both in one step dict",
          "verl/trainer/ppo/v1/trainer_base.py:1684; verl/workers/utils/losses.py:124-129", LABELLED,
          'actor/entropy_loss -> phase="update"'),
        R("openrlhf", "entropy_loss = aggregate_loss(output.entropy, action_mask): the entropy itself, "
          "logged when actor.entropy_coef is set", "openrlhf/trainer/ray/ppo_actor.py:346-351,373"),
        R(SM, "rollout/entropy: pi_old entropy (--use-rollout-entropy); train/entropy_loss = "
          "sum_of_sample_mean(entropy) of the updated policy, the entropy itself. Miles writes 0 "
          "unless --entropy-coef != 0 or --observe-training-entropy",
          "slime/backends/megatron_utils/loss.py:976,1112; miles/backends/training_utils/loss_hub/"
          "losses.py:113,303-308", LABELLED, 'train/entropy_loss -> phase="update"; Miles\' 0 dropped by '
          "the Miles integration"),
        R("areal", "update/entropy: the current policy's token entropy, token-weighted",
          "areal/trainer/ppo/actor.py:533"),
        R(HF, "entropy: the current policy's entropy, global token mean (TRL); ms-swift averages per "
          "completion first (entropy/mean) and only with log_entropy; objective/entropy is a "
          "per-sequence sum (stat=sum)", "trl/trainer/grpo_trainer.py:3270; swift/rlhf_trainers/"
          "grpo_trainer.py:953. " + _HF),
        R("posttrain", "train/entropy: PPO token entropy", "the posttrain metrics reference (PPO keys)"),
    ],
    "rl_reference_kl": [
        R("verl", "actor/kl_loss = kl_penalty(log_prob, ref, kl_loss_type): current vs reference, "
          "before the coefficient (default low_var_kl = k3)", "verl/workers/utils/losses.py:135-141"),
        R("openrlhf", "kl: the KL to the reference under --algo.kl.estimator (default k1): in the loss "
          "with --algo.kl.use_loss, else the in-reward KL of pi_old", "openrlhf/trainer/ray/ppo_actor.py:333; "
          "openrlhf/trainer/ppo_utils/experience_maker.py:205,226", OPEN,
          "estimator and policy snapshot follow the config (kl_loss_coef / kl_reward_coef say which)"),
        R(SM, "train/kl_loss = compute_approx_kl(log_probs, ref, kl_loss_type), default k1, only with "
          "--use-kl-loss", "slime/backends/megatron_utils/loss.py:1128. " + _SM),
        R(HF, "kl: k3 of the current policy to the reference, only with beta != 0; objective/kl (online "
          "DPO, old PPO) is a per-sequence sum (stat=sum). ms-swift: under kl_in_reward (rloo, "
          "reinforce++ defaults) kl is a per-sequence k1 sum of pi_old", "trl/trainer/grpo_trainer.py:"
          "3100,3268; swift/rlhf_trainers/grpo_trainer.py:443-444,482; swift/arguments/rlhf_args.py:"
          "370-376. " + _HF, OPEN, "ms-swift kl_in_reward runs: a sum, on the same key"),
        R("posttrain", "train/kl_mean: k3 toward the frozen reference (0.0 without rl.kl_beta); "
          "kl_max: stat=max", "the posttrain metrics reference"),
        R("generic", "kl_estimate: KTO's batch estimate of KL(policy || reference)", "conventional name"),
    ],
    "rl_reward_kl_penalty": [
        R("verl", "actor/reward_kl_penalty = masked_mean(kld) of pi_old vs reference before beta; "
          "critic/kl the same before it moved", "verl/trainer/ppo/ray_trainer.py:100-115"),
        R(SM, "rollout/kl = compute_approx_kl(log_probs, ref_log_probs), before --kl-coef; 0 when "
          "--kl-coef is 0 (not computed)", "slime/backends/megatron_utils/loss.py:743-746; "
          "miles/backends/training_utils/loss.py:84"),
        R("areal", "kl_rewards = -kl_ctl x KL (coefficient and sign in)", "areal/trainer/ppo/actor.py:202",
          SPLIT, "-> rl_reward_kl_term; run:rl_reference_kl:* read -term / kl_reward_coef"),
        R("trl", "objective/non_score_reward = (-beta * kl).sum(1): beta-scaled", "trl/experimental/online_dpo/"
          "online_dpo_trainer.py:1273", SPLIT, '-> rl_reward_kl_term{stat="sum"}'),
    ],
    "rl_reward_kl_term": [
        R("areal", "kl_rewards = -kl_ctl x kl_estimator(old_logp, ref_logp), token mean over valid "
          "tokens; without a reference model ref_logp is zeros and it is -kl_ctl x logp_old",
          "areal/trainer/ppo/actor.py:192-202,294", CONVERTED,
          "KL = -term / kl_reward_coef (actor.kl_ctl, 0 without a reference model) in run:rl_reference_kl:*"),
        R(HF, "objective/non_score_reward (online DPO, the PPO trainer of TRL <= 1.9 that ms-swift's "
          "pinned trl<1.0 still has) = (-beta * kl).sum(1), mean over sequences: stat=sum",
          "trl/experimental/online_dpo/online_dpo_trainer.py:1273. " + _HF),
    ],
    "rl_kl_coefficient": [
        R("verl", "actor/kl_coef = actor.kl_loss_coef (the loss's); actor/reward_kl_penalty_coeff and "
          "critic/kl_coeff = the in-reward beta; both in one step dict", "verl/workers/utils/losses.py:142; "
          "verl/trainer/ppo/ray_trainer.py:115", LABELLED, 'target="loss" | "reward"'),
        R("openrlhf", "k_coef: the in-reward KL controller's value (0.1.x status dict)",
          "openllama2 ppo_trainer.py (0.1.x)", LABELLED, 'target="reward"'),
        R("posttrain", "train/kl_beta: echo of rl.kl_beta (in the loss)", "the posttrain metrics reference",
          LABELLED, 'target="loss"'),
        R(HF, "beta: online DPO's beta (loss); objective/kl_coef: PPO's in-reward beta",
          "trl/experimental/online_dpo/online_dpo_trainer.py; " + _HF, LABELLED, 'target="loss" | "reward"'),
    ],
    "rl_policy_kl": [
        R("verl", "actor/ppo_kl = masked_mean(-negative_approx_kl) = mean(old - new)",
          "verl/trainer/ppo/core_algos.py:1258"),
        R("openrlhf", "ppo_kl = mean(old - new), token-weighted", "openrlhf/models/loss.py:258"),
        R(SM, "train/ppo_kl = old_log_probs - log_probs; old is the rollout's log-probs under "
          "--use-rollout-logprobs", "slime/backends/megatron_utils/loss.py:965,1033. " + _SM),
        R("areal", "approx_kl = logprobs - proximal_logprobs: new - old", "areal/utils/functional/"
          "functional.py:548", CONVERTED, "x -1 (its /min and /max swap)"),
        R(HF, "policy/approxkl_avg, ppo/policy/approxkl = 0.5 * mean(log ratio^2): k2; "
          "ppo/policy/policykl the plain k1 mean", "trl v1.9.0 experimental/ppo/ppo_trainer.py:857; "
          "trl v0.11.2 ppo_trainer.py:1255. " + _HF, LABELLED, 'estimator="k2" / "k1"'),
    ],
    "rl_policy_clip_ratio": [
        R("verl", "actor/pg_clipfrac = mean(pg_losses2 > pg_losses1): the clipped branch binds, mean of "
          "micro-batch values; pg_clipfrac_lower = the dual clip", "verl/trainer/ppo/core_algos.py:1271",
          LABELLED, 'pg_clipfrac_lower -> bound="dual"'),
        R("openrlhf", "ppo_clip_ratio = mean(surr2 < surr1), token mean", "openrlhf/models/loss.py:257"),
        R("areal", "clip_ratio = pg_loss1 < pg_loss2; dual_clip_ratio", "areal/utils/functional/"
          "functional.py:524,529", LABELLED, 'dual_clip_ratio -> bound="dual"'),
        R(SM, "train/pg_clipfrac = mean(pg_losses2 > pg_losses1)", "slime/utils/ppo_utils.py:136. " + _SM),
        R(HF, "clip_ratio/region_mean: low or high clip with the advantage sign that binds; low_mean, "
          "high_mean per bound; cispo_clip_ratio: the IS-weight cap CISPO keeps the gradient through",
          "trl/trainer/grpo_trainer.py:3276-3286. " + _HF, LABELLED,
          'bound="low" | "high"; cispo_clip_ratio -> bound="cispo"'),
        R("posttrain", "clip_frac: share of tokens the PPO clip bound; 0 by construction at n_mini == 1 "
          "unless rl.use_rollout_logprobs_for_loss", "the posttrain metrics reference"),
    ],
    "rl_importance_ratio": [
        R("areal", "importance_weight = exp(new - proximal)", "areal/utils/functional/functional.py:547"),
        R(HF, "val/ratio: the PPO ratio pi/pi_old (old PPO trainer)", "trl v1.9.0 experimental/ppo/"
          "ppo_trainer.py. " + _HF),
        R("posttrain", "train/ratio_mean: the PPO ratio", "the posttrain metrics reference"),
    ],
    "rl_rollout_importance_weight": [
        R("verl", "rollout_corr/rollout_is_*: pi_old / pi_rollout, truncated", "verl/trainer/ppo/"
          "rollout_corr_helper.py:700-760"),
        R(SM, "train/tis = exp(old - rollout), truncated; ois untruncated (truncated=false)",
          "slime/backends/megatron_utils/loss.py:900; miles/backends/training_utils/loss_hub/"
          "corrections.py:27", LABELLED, 'ois -> truncated="false"'),
        R("areal", "behave_imp_weight = pi_proximal / pi_behave, capped", "areal/trainer/ppo/actor.py:539"),
        R(HF, "sampling/importance_sampling_ratio = pi_old / pi_vLLM", "trl/trainer/grpo_trainer.py:"
          "2888-2894; swift is_weight_mean. " + _HF),
    ],
    "rl_rollout_importance_weight_clamped_ratio": [
        R("verl", "rollout_corr/rollout_is_ratio_fraction_high: share above the IS cap",
          "verl/trainer/ppo/rollout_corr_helper.py:717"),
        R(SM, "train/tis_clipfrac: share of tokens whose truncated IS weight was clamped",
          "slime/backends/megatron_utils/loss.py:901. " + _SM),
        R(("swift", "posttrain_carbonteq"), "clipped_frac (ms-swift); carbonteq's clamped fraction",
          "swift/rlhf_trainers/grpo_trainer.py:2609"),
    ],
    "rl_rollout_importance_weight_abs_deviation": [
        R(SM, "train/tis_abs = |exp(old - rollout) - 1|", "slime/backends/megatron_utils/loss.py:902. " + _SM),
    ],
    "rl_importance_ess_ratio": [
        R("verl", "rollout_corr/rollout_is_eff_sample_size: ESS of the rollout-correction weights "
          "pi_old / pi_rollout", "verl/trainer/ppo/rollout_corr_helper.py:754-757"),
        R("swift", "ess: ESS of the same kind of weights", "swift/rlhf_trainers/grpo_trainer.py:2600"),
        R("miles", "train/ess_ratio: ESS of pi_new / pi_old = exp(-ppo_kl), the update's ratio",
          "miles/backends/training_utils/loss_hub/losses.py:286-289,368", SPLIT, "-> rl_policy_ratio_ess"),
    ],
    "rl_train_inference_kl": [
        R("verl", "rollout_corr/kl = mean(rollout - old): k1; k3_kl = exp(old - rollout) - (old - rollout) - 1",
          "verl/trainer/ppo/rollout_corr_helper.py:959-966", LABELLED, 'estimator="k1" | "k3"'),
        R("openrlhf", "vllm_kl = mean(rollout - old): k1", "openrlhf/models/loss.py:247", LABELLED, 'estimator="k1"'),
        R("miles", "train/train_rollout_kl = compute_approx_kl(rollout, train, low_var_kl): k3",
          "miles/backends/training_utils/loss_hub/losses.py:354", LABELLED, 'estimator="k3"'),
        R("swift", "k3_kl", "swift/rlhf_trainers/grpo_trainer.py:2507", LABELLED, 'estimator="k3"'),
        R("areal", "train_infer/kl_k1|k2|k3: not written by 1.0.4 (HEAD keys)", "no such string in the "
          "areal 1.0.4 wheel", LABELLED, "estimator per key; since the first release after 1.0.4"),
    ],
    "rl_train_inference_logprob_abs_diff": [
        R(SM, "train_rollout_logprob_abs_diff = mean |old - rollout| (|current - rollout| under "
          "--use-rollout-logprobs)", "slime/backends/megatron_utils/loss.py:1140. " + _SM),
        R(HF, "sampling/sampling_logp_difference/mean = mean |old - vLLM|", "trl/trainer/grpo_trainer.py:"
          "2861-2868. " + _HF),
        R("posttrain", "logprob_gap_mean: |train - rollout| at temperature 1", "the posttrain metrics reference"),
        R("areal", "train_infer/logp_abs_diff: HEAD only, not in 1.0.4", "no such string in the wheel"),
    ],
    "rl_train_inference_logprob_tail_ratio": [
        R("areal", "train_infer/ratio_outside_{t}: share with |log ratio| > ln t (HEAD only)", "AReaL "
          "metrics tracking", CONVERTED, "threshold label in nats: ln t"),
        R("posttrain", "logprob_gap_gt0p5_frac: share of tokens with a gap > 0.5 nats",
          "the posttrain metrics reference"),
    ],
    "rl_train_inference_tokens": [
        R("areal", "train_infer/n_valid_tokens (HEAD only)", "AReaL metrics tracking"),
        R("posttrain", "logprob_gap_token_count: tokens measured; 0 means no data",
          "the posttrain metrics reference"),
    ],
    "rl_log_perplexity": [
        R(("verl", "swift"), "training_log_ppl / rollout_log_ppl = -mean log prob per engine "
          "(ms-swift copies veRL's helper)", "verl/trainer/ppo/rollout_corr_helper.py:952,972; "
          "swift/rlhf_trainers/grpo_trainer.py:2485,2513"),
    ],
    "rl_token_logprob": [
        R("areal", "update/new_logp: the current policy inside the update; old_logp, prox_logp_gt",
          "areal/trainer/ppo/actor.py:520-545"),
        R(SM, "rollout/log_probs: compute_log_prob before the update (pi_old); ref_log_probs, "
          "rollout_log_probs, teacher_log_probs", "slime/backends/megatron_utils/actor.py:363. " + _SM,
          LABELLED, 'rollout/log_probs -> policy="old" (was "current")'),
    ],
    "rl_distillation_divergence": [
        R(SM, "opd_reverse_kl: sampled-token reverse KL to the teacher (k1), token mean",
          "slime/observability/train_data_utils.py:21. " + _SM),
        R("posttrain", "train/opd_divergence, token-weighted", "the posttrain metrics reference"),
        R("swift", "teacher_kl: k3 monitor to the teacher", "swift/rl_core/advantage.py:39; "
          "swift/rlhf_trainers/grpo_trainer.py:302", OPEN, "another estimator on the same series"),
    ],
    "rl_vespo_sequence_weight": [
        R(HF, "vespo/phi_seq_mean", "trl/trainer/grpo_trainer.py:3288. " + _HF),
    ],
    # ------------------------------------------------------------------ loss, gradient, LR
    "rl_loss": [
        R("verl", "actor/loss: pg - coef x entropy + coef x kl, DP-averaged sum over micro-batches",
          "verl/workers/engine_workers.py:195-199"),
        R(SM, "train/loss = pg_loss - entropy_coef x entropy + kl_loss_coef x kl",
          "slime/backends/megatron_utils/loss.py:1114,1130. " + _SM),
        R(HF, "loss: the HF Trainer's mean loss since the last log", _HF_TRAINER + ". " + _HF),
        R("openrlhf", "loss_mean: DPO/RM mean over the accumulation window; gpt_loss, ptx_loss, "
          "preference_loss as components", "openrlhf/trainer/rm_trainer.py:197; sft_trainer.py:197",
          LABELLED, 'component="lm" | "ptx" | "preference"'),
        R("posttrain", "loss_avg, policy_total_loss; NFT kl_loss as a component", "the posttrain metrics "
          "reference", LABELLED, 'component="kl"'),
        R("generic", "rm/loss, loss/dpo, loss/kl (KTO term)", "conventional names", LABELLED, 'component="kl"'),
    ],
    "rl_policy_loss": [
        R("verl", "actor/pg_loss", "verl/workers/utils/losses.py:119"),
        R("openrlhf", "policy_loss, token-weighted", "openrlhf/trainer/ray/ppo_actor.py:370"),
        R("areal", "update/actor_loss", "areal/trainer/ppo/actor.py:520-535"),
        R(SM, "train/pg_loss", "slime/backends/megatron_utils/loss.py:1105. " + _SM),
        R(HF, "policy_loss", "trl/trainer/grpo_trainer.py:3213. " + _HF),
        R("posttrain", "train/policy_loss", "the posttrain metrics reference"),
    ],
    "rl_grad_norm": [
        R("verl", "actor/grad_norm: clip_grad_norm_'s return (pre-clip), mean over mini-batches",
          "verl/workers/engine/fsdp/transformer_impl.py:806"),
        R("openrlhf", "actor_grad_norm: DeepSpeed get_global_grad_norm (pre-clip), last of the step; "
          "grad_norm for DPO/RM", "openrlhf/trainer/ray/ppo_actor.py:252,381; openrlhf/utils/deepspeed/"
          "deepspeed.py:197"),
        R("areal", "update/grad_norm: pre-clip, mean over ppo_n_minibatches", "areal/engine/fsdp_engine.py:687; "
          "areal/trainer/ppo/actor.py:365"),
        R(SM, "train/grad_norm: Megatron optimizer.step()'s norm, one per optimizer step",
          "slime/backends/megatron_utils/model.py:681,886. " + _SM),
        R(HF, "grad_norm: pre-clip, the last optimizer step", "transformers 4.57.1 trainer.py:2715. " + _HF),
        R("posttrain", "train/grad_norm: pre-clip, the last chunk", "the posttrain metrics reference"),
        R("generic", "rm/grad_norm: reward-model training", "conventional name"),
    ],
    "rl_critic_grad_norm": [
        R("verl", "critic/grad_norm, mean over mini-batches", "verl/workers/engine/fsdp/transformer_impl.py:806"),
        R("openrlhf", "critic_grad_norm", "openrlhf/trainer/ray/ppo_critic.py:181"),
        R("areal", "ppo_critic/grad_norm", "areal/engine/fsdp_engine.py:687"),
        R(SM, "train/critic-grad_norm", "slime/backends/megatron_utils/model.py:886. " + _SM),
    ],
    "rl_learning_rate": [
        R("verl", "actor/lr = lr_scheduler.get_last_lr()[0] read after lr_scheduler.step(): the LR of "
          "the next update", "verl/workers/engine/fsdp/transformer_impl.py:840-841", OPEN,
          "one step ahead of the others (rl_next_learning_rate's meaning); kept here so RLLearningRateZero "
          "reads veRL, where a 0 next LR is a 0 LR one step later"),
        R(HF, "learning_rate = _get_learning_rate() before lr_scheduler.step(): the LR used",
          "transformers 4.57.1 trainer.py:2745,2750. " + _HF),
        R("areal", "update/lr = get_last_lr() in optimizer_step, before step_lr_scheduler: used",
          "areal/engine/fsdp_engine.py:708"),
        R("posttrain", "learning_rate: used", "the posttrain metrics reference"),
        R("generic", "lr: used (legacy console)", "conventional name"),
    ],
    "rl_next_learning_rate": [
        R("openrlhf", "actor_lr / critic_lr / lr = get_last_lr() after optimizer_step",
          "openrlhf/trainer/ray/ppo_actor.py:377; ppo_critic.py:180; rm_trainer.py:184"),
        R(SM, "train/lr-pg_N = opt_param_scheduler.get_lr() after .step()",
          "slime/backends/megatron_utils/model.py:686,893. " + _SM),
        R("posttrain", "policy_lr / critic_lr", "the posttrain metrics reference"),
    ],
    "rl_critic_learning_rate": [
        R("verl", "critic/lr: after the scheduler step (next)", "verl/workers/engine/fsdp/transformer_impl.py:840",
          OPEN, "next LR, as actor/lr"),
        R("areal", "ppo_critic/lr: used", "areal/engine/fsdp_engine.py:708"),
        R("generic", "critic/lr(1e-N) console columns, scaled", "conventional names", CONVERTED, "x 1e-N"),
    ],
    "rl_value_loss": [
        R("verl", "critic/vf_loss = 0.5 x clipped MSE", "verl/trainer/ppo/core_algos.py:2175"),
        R("openrlhf", "critic_loss = 0.5 x clipped MSE", "openrlhf/models/loss.py:298"),
        R("areal", "critic_loss: _mse_loss = 0.5 (x - y)^2", "areal/utils/functional/functional.py:711"),
        R(SM, "train/value_loss = max(surr1, surr2) with no 0.5", "slime/backends/megatron_utils/loss.py:1216",
          CONVERTED, "x 0.5"),
        R(HF, "loss/value_avg, ppo/loss/value (PPO trainers)", "trl v1.9.0 experimental/ppo/ppo_trainer.py. " + _HF),
        R("posttrain", "train/value_loss (unscaled MSE)", "the posttrain metrics reference", OPEN,
          "the reference does not state the 1/2"),
    ],
    "rl_value_clip_ratio": [
        R("verl", "critic/vf_clipfrac = mean(vf_losses2 > vf_losses1): the clipped branch binds",
          "verl/trainer/ppo/core_algos.py:2184"),
        R("areal", "ppo_critic/clip_ratio: the binding branch", "areal/utils/functional/functional.py:764"),
        R(HF, "val/clipfrac_avg, ppo/val/clipfrac", "trl v1.9.0 experimental/ppo/ppo_trainer.py. " + _HF),
        R("posttrain", "train/value_clip_fraction", "the posttrain metrics reference"),
        R(SM, "train/value_clipfrac = |values - old_values| > value_clip: the clip region",
          "slime/backends/megatron_utils/loss.py:1212", SPLIT, "-> rl_value_clip_region_ratio"),
    ],
    "rl_value_clip_region_ratio": [
        R(SM, "|V - V_old| > value_clip (the region)", "slime/backends/megatron_utils/loss.py:1212. " + _SM),
    ],
    "rl_value": [
        R("verl", "critic/values: old values over valid tokens; vpred_mean inside the update",
          "verl/trainer/ppo/metric_utils.py:536; verl/workers/utils/losses.py:202"),
        R("openrlhf", "values: masked mean of the critic's values", "openrlhf/trainer/ray/ppo_critic.py:179"),
        R("areal", "ppo_critic/new_value: the updated critic's values", "areal/trainer/ppo/critic.py", OPEN,
          "the updated critic, the others the old values"),
        R(SM, "rollout/values, per-sample mean then mean", "slime/observability/train_data_utils.py:16. " + _SM),
        R(HF, "ppo/val/vpred", "trl v1.9.0 experimental/ppo/ppo_trainer.py. " + _HF),
        R("posttrain", "train/value_mean", "the posttrain metrics reference"),
    ],
    "rl_value_explained_variance": [
        R("verl", "critic/vf_explained_var = 1 - Var(R - V) / Var(R)", "verl/trainer/ppo/metric_utils.py:540"),
        R(HF, "ppo/val/var_explained, the same formula", "trl v0.11.2 ppo_trainer.py. " + _HF),
    ],
    "rl_advantage": [
        R("verl", "critic/advantages: token mean after normalisation", "verl/trainer/ppo/metric_utils.py:564"),
        R("areal", "advantages over valid tokens", "areal/trainer/ppo/actor.py:242,292"),
        R(SM, "rollout/advantages: per-sample mean, then mean", "slime/observability/train_data_utils.py:17. " + _SM),
        R(HF, "ppo/policy/advantages_mean", "trl v0.11.2 ppo_trainer.py. " + _HF),
        R("posttrain", "train/advantage_mean (PPO, NFT), opd_advantage", "the posttrain metrics reference"),
    ],
    "rl_return": [
        R("verl", "critic/returns: token mean of the GAE returns", "verl/trainer/ppo/metric_utils.py:568"),
        R("areal", "ppo_critic/target_value", "areal/trainer/ppo/critic.py"),
        R(SM, "rollout/returns", "slime/observability/train_data_utils.py:18. " + _SM),
        R(HF, "ppo/returns/mean", "trl v0.11.2 ppo_trainer.py. " + _HF),
        R("posttrain", "train/return_mean", "the posttrain metrics reference"),
        R("openrlhf", "return = reward.sum(dim=-1): a per-sequence sum of the shaped token rewards",
          "openrlhf/trainer/ppo_utils/experience_maker.py:321", SPLIT, "-> rl_sequence_return"),
    ],
    "rl_aux_loss": [
        R("openrlhf", "aux_loss: the MoE balance loss", "openrlhf/trainer/rm_trainer.py:188"),
        R(HF, "aux_loss: the MoE router's auxiliary loss", "trl/trainer/grpo_trainer.py:3251; "
          "swift/rlhf_trainers/dpo_trainer.py:210. " + _HF),
    ],
    "rl_nll_loss": [
        R("openrlhf", "nll_loss: SFT NLL on the chosen responses in DPO (nll_loss_coef > 0)",
          "openrlhf/trainer/dpo_trainer.py:197"),
        R(HF, "nll_loss (RPO / ms-swift DPO)", "swift/rlhf_trainers/dpo_trainer.py:170. " + _HF),
    ],
    "rl_mtp_loss": [
        R(SM, "train/mtp_loss, mtp_{L}_loss per layer", "miles/backends/megatron_utils/model.py:833. " + _SM),
        R("verl", "actor|critic/mtp_losses per layer", "verl/workers/engine/megatron (mtp losses)"),
    ],
    "rl_entropy_coefficient": [
        R(HF, "entropy_coef in use (adaptive entropy)", "trl/trainer/grpo_trainer.py:3245. " + _HF),
    ],
    # ------------------------------------------------------------------ reward, score
    "rl_score": [
        R("verl", "critic/score: sum of token_level_scores, non-aborted mean", "verl/trainer/ppo/metric_utils.py:453,471"),
        R("openrlhf", "score: the reward function's scores (the dynamic-filter score, defaults to rewards)",
          "openrlhf/utils/agent.py:123,295-297; openrlhf/trainer/ppo_utils/samples_generator.py:286"),
        R("areal", "task_reward: raw reward + overlong penalty, before bias/scale", "areal/trainer/ppo/actor.py:302"),
        R(SM, "rollout/raw_reward: the step's raw reward", "slime/ray/rollout.py:663. " + _SM),
        R(HF, "objective/scores: reward-model score (online DPO, old PPO)", "trl/experimental/online_dpo/"
          "online_dpo_trainer.py. " + _HF),
    ],
    "rl_reward": [
        R(HF, "reward: weighted sum of the reward functions, before any KL (GRPO). ms-swift logs the "
          "reward after rewards - beta x kl under kl_in_reward", "trl/trainer/grpo_trainer.py:2828; "
          "swift/rl_core/advantage.py:61; swift/rlhf_trainers/grpo_trainer.py:478. " + _HF, OPEN,
          "ms-swift kl_in_reward runs: shaped, on the same key"),
        R("openrlhf", "reward: per-sample reward before the KL term", "openrlhf/trainer/ppo_utils/experience_maker.py:194"),
        R("areal", "rollout/reward: the workflow's reward per trajectory", "areal/workflow/rlvr.py:135"),
        R("posttrain", "train/reward_mean", "the posttrain metrics reference"),
        R("verl", "critic/rewards = sum(token_level_scores - beta x kld) under use_kl_in_reward",
          "verl/trainer/ppo/metric_utils.py:454; ray_trainer.py:106", SPLIT, "-> rl_shaped_reward"),
    ],
    "rl_shaped_reward": [
        R("verl", "critic/rewards: score minus the in-reward KL (equal to critic/score without "
          "algorithm.use_kl_in_reward)", "verl/trainer/ppo/metric_utils.py:454; ray_trainer.py:106"),
        R(HF, "objective/rlhf_reward = score + non_score_reward", "trl/experimental/online_dpo/"
          "online_dpo_trainer.py. " + _HF),
    ],
    "rl_normalized_reward": [
        R(SM, "rollout/rewards: after group normalisation", "slime/observability/rollout_metrics.py:231. " + _SM),
    ],
    "rl_reward_function": [
        R("verl", "critic/{fn}_score, gdpo/{fn}/*: one reward function", "verl/trainer/ppo/metric_utils.py"),
        R(HF, "rewards/{fn}/mean|std: unweighted per function", "trl/trainer/grpo_trainer.py:2822-2825. " + _HF),
        R("openrlhf", "*_reward extras a reward function returns", "openrlhf/utils/agent.py"),
    ],
    "rl_episode_reward": [
        R("miles", "rollout/episode_raw_reward: terminal reward per original rollout, fragments averaged",
          "miles/ray/rollout/metrics.py (PRs #2710, #2765)"),
        R("generic", "episode/reward", "conventional name"),
    ],
    "rl_pass_at_k_ratio": [
        R(SM, "passrate/pass@k: unbiased estimator counting reward == 1", "slime/observability/metric_utils.py:32. " + _SM),
    ],
    "rl_reward_category_ratio": [
        R(SM, "rollout/error_cat/{category}", "slime/observability/rollout_metrics.py. " + _SM),
    ],
    "rl_group_zero_std_ratio": [
        R(HF, "frac_reward_zero_std: groups whose rewards tie", "trl/trainer/grpo_trainer.py:2830; "
          "swift/rlhf_trainers/grpo_trainer.py:427. " + _HF),
    ],
    "rl_tied_groups": [
        R(SM, "rollout/zero_std/count_{reward}", "slime/observability/rollout_metrics.py. " + _SM),
    ],
    # ------------------------------------------------------------------ lengths and counts
    "rl_response_length_tokens": [
        R("verl", "response_length: the response attention-mask sum (tool tokens included in "
          "multi-turn)", "verl/trainer/ppo/metric_utils.py:84-87,573"),
        R("openrlhf", "response_length: span first -> last action token", "openrlhf/trainer/ppo_utils/"
          "samples_generator.py:273"),
        R(SM, "rollout/response_len: response tokens (observations included; multi_turn/wo_obs_* "
          "without)", "slime/observability/rollout_metrics.py:48. " + _SM, LABELLED,
          'subset="with_observations" | "without_observations"'),
        R(HF, "completions/mean_length: completion-mask sum", "trl/trainer/grpo_trainer.py:2296; "
          "swift/rlhf_trainers/grpo_trainer.py:796-803. " + _HF),
        R("posttrain", "train/response_len_mean, _max", "the posttrain metrics reference"),
    ],
    "rl_response_truncated_ratio": [
        R("verl", "response_length/clip_ratio: length == max_response_length", "verl/trainer/ppo/metric_utils.py:576"),
        R("openrlhf", "truncated: finish_reason == length", "openrlhf/trainer/ppo_utils/samples_generator.py:278"),
        R(SM, "rollout/truncated_ratio: Sample.Status.TRUNCATED", "slime/observability/rollout_metrics.py:55. " + _SM),
        R(HF, "completions/clipped_ratio: last token not EOS/pad", "trl/trainer/grpo_trainer.py:2302-2304; "
          "swift/rlhf_trainers/grpo_trainer.py:813. " + _HF),
        R("posttrain", "train/rollout_truncated_frac", "the posttrain metrics reference"),
        R("areal", "no_eos_ratios = seqlens == the padded width of a batch padded to its longest: at "
          "least 1/B every step", "areal/trainer/ppo/actor.py:301; areal/utils/data.py:241", SPLIT,
          "-> rl_batch_longest_sequence_ratio"),
    ],
    "rl_response_terminated_ratio": [
        R(HF, "val/contain_eos_token", "trl/experimental/online_dpo/online_dpo_trainer.py:362. " + _HF),
    ],
    "rl_response_repetition_ratio": [
        R(SM, "rollout/repetition_frac: has_repetition(response)", "slime/observability/rollout_metrics.py:54. " + _SM),
    ],
    "rl_prompt_length_tokens": [
        R("verl", "prompt_length", "verl/trainer/ppo/v1/trainer_base.py:1923"),
        R("areal", "prompt_len = seq_len - loss_mask", "areal/trainer/ppo/actor.py:297"),
        R(HF, "tokens/queries_len_mean (old PPO)", "trl v0.11.2 ppo_trainer.py. " + _HF),
    ],
    "rl_sequence_length_tokens": [
        R("openrlhf", "total_length: prompt + response", "openrlhf/trainer/ray/ppo_actor.py:232"),
        R("areal", "seq_len: attention-mask sum", "areal/trainer/ppo/actor.py:303"),
        R(SM, "rollout/total_lengths", "slime/observability/train_data_utils.py:45. " + _SM),
    ],
    "rl_responses": [
        R("areal", "n_seqs: the trained batch", "areal/trainer/ppo/actor.py:306"),
        R("openrlhf", "rollout/num_samples: every generated sample (subset=generated)", "openrlhf/trainer/"
          "ppo_trainer.py:429"),
        R(SM, "train/global_batch_size: samples in one optimizer step (batch / n_mini)",
          "slime/observability/train_data_utils.py:99. " + _SM, OPEN,
          "per optimizer step, the others per step"),
        R(HF, "count/chosen|rejected (KTO)", "trl/trainer/kto_trainer.py. " + _HF, LABELLED, 'subset="chosen" | "rejected"'),
        R("posttrain", "train/response_count", "the posttrain metrics reference"),
    ],
    "rl_valid_tokens": [
        R("areal", "n_valid_tokens", "areal/trainer/ppo/actor.py:294"),
        R("posttrain", "valid_token_count, valid_action_tokens", "the posttrain metrics reference"),
    ],
    "rl_turns": [
        R("areal", "rollout/num_turns: assistant attempts (1 for a single turn)", "areal/workflow/multi_turn.py:124"),
        R(SM, "rollout/round_number: set by the user's generate function", "slime/observability/"
          "train_metric_utils.py:332. " + _SM, OPEN, "not fixed by slime"),
        R("swift", "num_turns from the rollout infos", "swift/rlhf_trainers/grpo_trainer.py:333", OPEN,
          "not re-read"),
        R("generic", "episode/length: interaction turns per episode", "conventional name"),
        R("verl", "num_turns = user_turns + assistant_turns + 1: messages (2 for a single turn)",
          "verl/experimental/agent_loop/tool_agent_loop.py:203; single_turn_agent_loop.py:107", SPLIT,
          "-> rl_turn_messages; run:rl_turns:* read (m - 1) / 2"),
    ],
    "rl_tool_calls": [
        R("verl", "tool_call_counts per sample", "verl/trainer/ppo/metric_utils.py:602"),
        R(HF, "tools/call_frequency per completion", "trl/trainer/grpo_trainer.py:2315. " + _HF),
    ],
    "rl_tool_call_failure_ratio": [
        R(HF, "tools/failure_frequency", "trl/trainer/grpo_trainer.py:2320. " + _HF),
    ],
    "rl_token_accuracy_ratio": [
        R(HF, "mean_token_accuracy (SFT)", "trl/trainer/sft_trainer.py:1644. " + _HF),
    ],
    "rl_eos_tokens": [
        R(HF, "val/num_eos_tokens (old PPO)", "trl v0.11.2 ppo_trainer.py. " + _HF),
    ],
    "rl_episodes_total": [
        R(HF, "episode: episodes so far (PPO/RLOO)", "trl v1.9.0 experimental/ppo/ppo_trainer.py. " + _HF),
    ],
    "rl_epoch": [
        R("verl", "training/epoch: integer index", "verl/trainer/ppo/v1/trainer_base.py:1935"),
        R(HF, "epoch: fractional", _HF_TRAINER + ". " + _HF, OPEN, "fractional vs integer; no rule reads it"),
    ],
    # ------------------------------------------------------------------ staleness, async
    "rl_sample_staleness_steps": [
        R("verl", "training/off_policy/trajectory_staleness = (global_steps - 1) - max_global_steps: a "
          "lower bound (the freshest weights a trajectory used)", "verl/trainer/ppo/v1/trainer_base.py:1979-1986"),
        R("areal", "version_stats/sample_staleness_theta_avg: current minus behaviour version per token",
          "areal/trainer/ppo/actor.py:1093"),
        R("posttrain_carbonteq", "train/rl/policy_staleness_mean|max (veRL's copy)", "carbonteq grpo_observations.py"),
    ],
    "rl_trajectory_version_span": [
        R(("verl", "posttrain_carbonteq"), "training/off_policy/trajectory_spans", "verl/trainer/ppo/v1/trainer_base.py:1983"),
    ],
    # ------------------------------------------------------------------ timing, throughput, memory
    "rl_step_duration_seconds": [
        R("verl", "timing_s/step, perf/time_per_step: the step without validation (testing is "
          "outside step)", "verl/trainer/ppo/metric_utils.py:686; v1/trainer_base.py:473,494"),
        R("openrlhf", "timing/step_total: the sum of the four phases (sync), the iteration's wall "
          "time (async)", "openrlhf/trainer/ppo_trainer.py:545; ppo_trainer_async.py:237"),
        R(SM, "perf/step_time = train_wait + train: everything between two train() calls, per rollout",
          "slime/observability/train_metric_utils.py:398. " + _SM),
        R(HF, "step_time: includes generation only on generating steps", "trl/trainer/grpo_trainer.py:1510-1518. " + _HF),
        R("posttrain", "timer/e2e_step_s", "the posttrain metrics reference"),
        R("generic", "timing/step", "conventional name"),
    ],
    "rl_phase_duration_seconds": [
        R("verl", "timing_s/{phase}: gen, old_log_prob, ref, values, adv, update_actor, "
          "update_weights, testing, save_checkpoint; gen is the rollout in the sync trainer and the "
          "wait for samples in the async ones", "verl/trainer/ppo/v1/trainer_base.py:565-590; "
          "trainer_sync.py:36-42", OPEN, "phase values differ by framework; goodput classifies them "
          "by framework and mode (docs/goodput.md)"),
        R("openrlhf", "timing/{generation, make_experience, ppo_train, broadcast}", "openrlhf/trainer/"
          "ppo_trainer.py:256-258,544", OPEN, "make_experience holds pi_old, reference and critic passes"),
        R("areal", "timeperf/{rollout, recompute_logp, ref_logp, train_step, update_weights, ...}",
          "areal/trainer/rl_trainer.py:601-760", OPEN, "rollout is the wait in async runs"),
        R(SM, "perf/{phase}_time: rollout, train, train_wait, log_probs, ref_log_probs, "
          "update_weights, sleep, wake_up, save_model", "slime/backends/megatron_utils/actor.py:59,363,"
          "433,595; slime/ray/rollout.py:492-506. " + _SM, OPEN, "train_wait is the rollout in a "
          "synchronous run"),
        R(HF, "profiling/Time taken: {fn} and time/ppo/*: written to wandb/mlflow/trackio only",
          "trl/extras/profiling.py:107-130. " + _HF, OPEN, "never in a console log"),
        R("posttrain", "timer/source_{source}", "the posttrain metrics reference"),
        R("generic", "timing/{phase}", "conventional name"),
    ],
    "rl_throughput_tokens_per_second": [
        R("areal", "train_perf/tokens_per_second: cluster tokens over the interval", "AReaL metrics tracking"),
        R(SM, "perf/actor_train_tok_per_s: sum(seq_lens) / actor_train_time", "slime/observability/"
          "train_metric_utils.py:393. " + _SM, LABELLED, 'phase="actor_train"'),
        R(HF, "train_tokens_per_second: end-of-training summary", _HF_TRAINER + ". " + _HF, LABELLED, 'phase="train"'),
    ],
    "rl_gpu_throughput_tokens_per_second": [
        R("verl", "perf/throughput = total tokens / (step time x GPUs)", "verl/trainer/ppo/metric_utils.py:687"),
        R(SM, "perf/tokens_per_gpu_per_sec: rollout tokens per GPU-second", "slime/observability/"
          "rollout_metrics.py. " + _SM, LABELLED, 'phase="rollout"'),
    ],
    "rl_rollout_throughput_tokens_per_second": [
        R(SM, "perf/effective_tokens_per_gpu_per_sec", "slime/observability/rollout_metrics.py. " + _SM),
    ],
    "rl_inference_decode_throughput_tokens_per_second": [
        R(SM, "perf/decode/throughput/*", "slime/observability/rollout_metrics.py. " + _SM),
    ],
    "rl_inference_kv_transfer_bytes": [
        R(SM, "perf/prefill/transfer_total_mb/*", "slime/observability/rollout_metrics.py. " + _SM, CONVERTED, "MB x 1e6"),
    ],
    "rl_inference_kv_transfer_bytes_per_second": [
        R(SM, "perf/prefill/transfer_speed_gb_s/*", "slime/observability/rollout_metrics.py. " + _SM, CONVERTED, "x 1e9"),
    ],
    "rl_inference_kv_transfer_retries": [
        R(SM, "perf/prefill/retries/*", "slime/observability/rollout_metrics.py. " + _SM),
    ],
    "rl_inference_request_duration_seconds": [
        R(SM, "perf/*_latency stages of the engine requests", "slime/observability/rollout_metrics.py. " + _SM),
    ],
    "rl_rollout_non_generation_seconds": [
        R(SM, "perf/non_generation_time", "slime/observability/rollout_metrics.py:65. " + _SM),
    ],
    "rl_achieved_flops_per_second": [
        R("areal", "train_perf/estimated_flops_per_second", "AReaL metrics tracking"),
        R(SM, "perf/{log_probs,ref_log_probs,actor_train}_tflops = FLOPs / phase time",
          "slime/observability/train_metric_utils.py:386-392. " + _SM, CONVERTED, "TFLOP/s x 1e12"),
    ],
    "rl_mfu_ratio": [
        R("verl", "perf/mfu/actor: (6N + attention) FLOPs / promised / world, per mini-batch train time",
          "verl/workers/engine_workers.py:229-235; v1/trainer_base.py:1821"),
        R("miles", "perf/actor_train_mfu = 3 x forward TFLOPs / actor_train_time / peak bf16",
          "miles/utils/train_metric_utils.py:43-48"),
    ],
    "rl_step_tokens": [
        R("verl", "perf/total_num_tokens: prompt + response attention tokens of the step",
          "verl/trainer/ppo/metric_utils.py:679,685"),
        R("areal", "train_perf/tokens: all train_batch calls of the interval", "AReaL metrics tracking"),
    ],
    "rl_tokens_total": [
        R("areal", "train_perf/total_tokens: since the engine started (resets with it)", "AReaL metrics tracking"),
        R(HF, "num_input_tokens_seen (cumulative)", "trl/trainer/grpo_trainer.py:2292. " + _HF),
        R("posttrain_carbonteq", "train/num_tokens: TRL num_tokens (cumulative) or veRL "
          "perf/total_num_tokens (per step) by backend", "carbonteq grpo_observations.py:103,149", SPLIT,
          "-> the deliberate fallback (no single meaning)"),
    ],
    "rl_gpu_memory_peak_bytes": [
        R("verl", "perf/max_memory_allocated_gb, _reserved_gb: torch peaks", "verl/workers/engine_workers.py:219-220",
          CONVERTED, "GiB x 2^30"),
        R("swift", "memory(GiB): torch max_memory_reserved", "swift/trainers/mixin.py", CONVERTED, "GiB x 2^30"),
    ],
    "rl_host_memory_used_bytes": [
        R("verl", "perf/cpu_memory_used_gb: psutil used", "verl/workers/engine_workers.py:221", CONVERTED, "x 2^30"),
        R("miles", "perf/cpu_memory_used_gb: psutil used", "miles/utils/train_metric_utils.py", CONVERTED, "x 2^30"),
    ],
    "rl_speculative_accept_ratio": [
        R("verl", "rollout/spec_accept_rate", "verl/trainer/ppo/ray_trainer.py:182"),
        R(SM, "rollout/spec_accept_rate", "slime/observability/rollout_metrics.py:197. " + _SM),
        R("posttrain_carbonteq", "serve/backend/speculative_acceptance_rate (engine metric)", "carbonteq"),
    ],
    "rl_speculative_accept_length_tokens": [
        R("verl", "rollout/spec_accept_length", "verl/trainer/ppo/ray_trainer.py:183"),
        R(SM, "rollout/spec_accept_length", "slime/observability/rollout_metrics.py:198. " + _SM),
        R("posttrain_carbonteq", "serve/backend/speculative_accepted_length", "carbonteq"),
    ],
    "rl_prefix_cache_hit_ratio": [
        R(SM, "rollout/prefix_cache_hit_rate", "slime/observability/rollout_metrics.py:208. " + _SM),
    ],
    "rl_cached_prompt_tokens": [
        R(SM, "rollout/avg_cached_tokens_per_sample", "slime/observability/rollout_metrics.py:209. " + _SM),
    ],
    "rl_top_p_kept_vocab_tokens": [
        R(SM, "rollout/top_p_kept_vocab_per_token", "slime/observability/rollout_metrics.py:189. " + _SM),
    ],
    "rl_weight_sync_bytes": [
        R(SM, "perf/update_weights_wire_bytes", "slime/backends/megatron_utils/update_weight/"
          "update_weight_from_disk_delta.py:288. " + _SM),
    ],
    "rl_weight_sync_density": [
        R(SM, "perf/update_weights_density", "slime/backends/megatron_utils/update_weight/"
          "update_weight_from_disk_delta.py:287. " + _SM),
    ],
    "rl_train_wait_ratio": [
        R(SM, "perf/wait_time_ratio = train_wait / (train_wait + train): the rollout itself in a "
          "synchronous run", "slime/observability/train_metric_utils.py:399. " + _SM),
    ],
    "rl_step_counter": [
        R(SM, "rollout/step: the rollout id (one rollout trains n_mini optimizer steps)",
          "slime/observability/rollout_metrics.py:270. " + _SM),
    ],
    "rl_training_step": [
        R("verl", "training/global_step: one per rollout batch (n_mini updates inside)",
          "verl/trainer/ppo/v1/trainer_base.py:1935"),
        R("openrlhf", "global_step: one per rollout batch", "openrlhf/trainer/ppo_trainer.py:551"),
        R(SM, "train/step = rollout_id x steps_per_rollout + step_id: one per optimizer step",
          "slime/backends/megatron_utils/model.py:879,897; miles/backends/training_utils/log_utils.py:522",
          OPEN, "per optimizer step; the rules that need per-rollout read rl_step_counter{counter=\"rollout\"}"),
        R(HF, "global_step: one per optimizer step", _HF_TRAINER + ". " + _HF, OPEN, "per optimizer step"),
        R("generic", "step", "conventional name"),
    ],
    "rl_config_value": [
        R(("verl", "slime", "miles"), "config/{name}: the settings of exporter/catalog/config_echo.py, "
          "read from the start-up config print by the integrations' own config_values",
          "exporter/logs/config_dump.py; docs/integrations.md (each setting's source line)"),
        R("areal", "eps_clip, c_clip, use_dual_clip, rs_upper|lower, mask_no_eos_with_zero: config echoes",
          "areal/trainer/ppo/actor.py:312-320", LABELLED, "parameter = AReaL's own name"),
        R("posttrain", "optim/finite_gradient_check_enabled", "the posttrain metrics reference", LABELLED,
          'parameter="finite_gradient_check_enabled"'),
        R("generic", "config/{name}: the same settings by the sidecar's names", "exporter/catalog/config_echo.py"),
    ],
    # ------------------------------------------------------------------ HF trainer bookkeeping
    "rl_trainer_flos_total": [R(HF, "total_flos", _HF_TRAINER + ". " + _HF)],
    "rl_trainer_run_loss": [R(HF, "train_loss: the run's mean loss (end summary)", _HF_TRAINER + ". " + _HF)],
    "rl_trainer_runtime_seconds": [R(HF, "train_runtime / eval runtime", _HF_TRAINER + ". " + _HF)],
    "rl_trainer_samples_per_second": [R(HF, "train_samples_per_second", _HF_TRAINER + ". " + _HF)],
    "rl_trainer_steps_per_second": [R(HF, "train_steps_per_second", _HF_TRAINER + ". " + _HF)],
    # ------------------------------------------------------------------ validation, preference
    "rl_validation_score": [
        R("verl", "val-core/{ds}/{var}/{mean|maj|best}@{n}: var = acc where the reward function "
          "returns acc, else reward (the RM's scale); val-aux the rest", "verl/trainer/ppo/v1/"
          "trainer_base.py:1358-1369", LABELLED, "var, estimator, n, tier"),
        R(SM, "eval/{ds} = sum(rewards) / len(rewards): the raw reward scale", "slime/observability/"
          "rollout_metrics.py:232. " + _SM, LABELLED, 'var="reward" (RLValidationRegressing reads the scale)'),
        R("openrlhf", "eval_{ds}_pass1 = mean reward; eval_{ds}_pass{n} = mean over prompts of the best "
          "of n rewards (veRL's reward/best@n)", "openrlhf/trainer/ppo_trainer.py:110-131", LABELLED,
          'var="reward", estimator="mean" | "best", n'),
        R("posttrain", "val/reward_avg: held-out rollout reward", "the posttrain metrics reference",
          LABELLED, 'var="reward"'),
        R("generic", "val/score, val/accuracy", "conventional names", LABELLED, 'val/accuracy -> var="accuracy"'),
    ],
    "rl_validation_pass_at_k_ratio": [
        R(SM, "eval/{ds}-pass@k: unbiased estimator counting reward == 1", "slime/observability/metric_utils.py:32. " + _SM),
        R("generic", "val/pass@k", "conventional name"),
        R("openrlhf", "eval_{ds}_pass{n}: the mean best-of-n reward, pass@n only for 0/1 rewards",
          "openrlhf/trainer/ppo_trainer.py:115,130", SPLIT, '-> rl_validation_score{var="reward", estimator="best"}'),
    ],
    "rl_validation_response_length_tokens": [
        R("openrlhf", "eval_{ds}_response_length_mean", "openrlhf/trainer/ppo_trainer.py:133-136"),
        R(SM, "eval/{ds}/response_len", "slime/observability/rollout_metrics.py:237. " + _SM),
    ],
    "rl_validation_response_truncated_ratio": [
        R("openrlhf", "eval_{ds}_truncated_rate", "openrlhf/trainer/ppo_trainer.py:133-136"),
        R(SM, "eval/{ds}-truncated_ratio", "slime/observability/rollout_metrics.py:237. " + _SM),
    ],
    "rl_validation_loss": [
        R("verl", "val/loss (SFT trainer)", "verl/trainer/sft_trainer_ray.py:369"),
        R("openrlhf", "eval_loss (DPO/RM)", "openrlhf/trainer/rm_trainer.py:300"),
        R(HF, "eval_loss", _HF_TRAINER + ". " + _HF),
        R("posttrain", "val/loss_avg", "the posttrain metrics reference"),
    ],
    "rl_preference_accuracy_ratio": [
        R(HF, "rewards/accuracies: chosen ranked above rejected", "trl/trainer/dpo_trainer.py:1592; "
          "swift/rlhf_trainers/reward_trainer.py:66. " + _HF),
        R("openrlhf", "acc_mean (DPO and RM)", "openrlhf/trainer/rm_trainer.py:198"),
        R("posttrain", "train/dpo_accuracy", "the posttrain metrics reference"),
        R("generic", "rm/accuracy", "conventional name"),
    ],
    "rl_preference_reward": [
        R(HF, "rewards/chosen|rejected: implicit beta x log-ratio (DPO/KTO)", "trl/trainer/kto_trainer.py:1528. " + _HF),
        R("posttrain", "dpo_reward_winner|loser: implicit", "the posttrain metrics reference"),
        R("openrlhf", "chosen_reward / reject_reward: implicit in DPO, the reward model's scores in RM "
          "training", "openrlhf/trainer/rm_trainer.py:182-183", OPEN, "one key, two trainers"),
        R("generic", "rm/reward_chosen|rejected: reward-model scores", "conventional names", OPEN,
          "RM scores beside implicit rewards"),
    ],
    "rl_preference_reward_margin": [
        R(HF, "rewards/margins", "trl/trainer/kto_trainer.py:1544. " + _HF),
        R("posttrain", "dpo_reward_margin", "the posttrain metrics reference"),
        R("generic", "rm/reward_margin", "conventional name"),
    ],
    "rl_preference_logprob": [
        R(HF, "logps/chosen|rejected", "trl/trainer/kto_trainer.py:1531. " + _HF),
        R("generic", "logps/*", "conventional names"),
    ],
    "rl_preference_logits": [
        R(HF, "logits/chosen|rejected", "trl/trainer/kto_trainer.py:1520. " + _HF),
    ],
    # ------------------------------------------------------------------ miscellany
    "rl_dynamic_filter_dropped": [
        R(SM, "rollout/dynamic_filter/drop_{reason}", "slime/rollout/filter_hub. " + _SM),
    ],
    "rl_correct_response_entropy": [
        R(SM, "rollout/correct_entropy: mean of -log p of the sampled tokens of correct responses (an "
          "entropy estimate at T = 1)", "slime/observability/train_metric_utils.py:278,296. " + _SM),
    ],
    "rl_rollout_rejected_ratio": [
        R("verl", "rollout_corr/rollout_rs_masked_fraction: tokens rejection sampling masked",
          "verl/trainer/ppo/rollout_corr_helper.py:407", LABELLED, 'level="token"'),
        R(SM, "train/opsm_clipfrac: off-policy sequence masking", "slime/backends/megatron_utils/loss.py:1166. " + _SM,
          LABELLED, 'level="sequence", option="opsm"'),
        R("areal", "update/behave_filtered_ratio: tokens the behave weight cap filtered",
          "areal/trainer/ppo/actor.py:539-545", LABELLED, 'level="token", option="behave_imp_weight_cap"'),
    ],
}


def rows() -> list[tuple[str, Row]]:
    return [(m, r) for m, rs in TABLE.items() for r in rs]
