"""Framework-neutral names from the metric guides (seeds 001 and 004) not covered by veRL.

Seed 001 (RL metrics dictionary for veRL/OpenRLHF/TRL): reward-model training `rm/*`,
DPO `loss/dpo`, `rewards/*`, `logps/*`, KTO `kl_estimate` and `loss/kl`.
Seed 004 (veRL guide, agentic and legacy forms): `episode/*`, `world_model/*`,
`val/score|accuracy|pass@k`, the legacy console's `timing/{phase}` (seconds, before
veRL renamed it `timing_s/`) and its scaled learning rates `actor/lr(1e-6)`.
`x/mean|max|min` statistics resolve through the base key (stat label).
"""
import re

from ..config_echo import config_keys
from ..metrics import SPLIT, STAT
from ..model import GAUGE, LAST, MEAN, Metric, Vocabulary, alias, pattern

METRICS = [
    # Agentic environments (AlfWorld, WebShop, ...): one episode spans many turns.
    Metric("rl_episode_reward", GAUGE, "1",
           "Cumulative reward of a whole environment episode (episode/reward/*; Miles "
           "rollout/episode_raw_reward, one value per original rollout however many training "
           "samples compaction made of it); per-step or per-sequence rewards are "
           "rl_reward/rl_score.", (STAT, SPLIT), MEAN, group="agentic"),
    Metric("rl_episode_success_ratio", GAUGE, "1",
           "Fraction of episodes that completed their task, per environment/task "
           "(episode/success_rate_{task}).", (STAT, SPLIT, "task"), MEAN, group="agentic"),
    # World-model heads trained next to the policy (tree search, state prediction).
    Metric("rl_world_model_loss", GAUGE, "1", "World-model prediction loss (world_model/loss).",
           (STAT, SPLIT), MEAN, group="world_model"),
    Metric("rl_world_model_grad_norm", GAUGE, "1", "World-model gradient norm (world_model/grad_norm).",
           (STAT, SPLIT), LAST, group="world_model"),
]

K = {
    # ---- reward-model training (seed 001 section 6); rm/reward_*/mean via the stat suffix
    "rm/loss": alias("rl_loss", note="reward model pairwise (Bradley-Terry) cross-entropy"),
    "rm/accuracy": alias("rl_preference_accuracy_ratio", note="reward model ranks chosen above rejected"),
    "rm/reward_margin": alias("rl_preference_reward_margin", note="reward model score gap"),
    "rm/reward_chosen": alias("rl_preference_reward", side="chosen", note="reward model score"),
    "rm/reward_rejected": alias("rl_preference_reward", side="rejected", note="reward model score"),
    "rm/grad_norm": alias("rl_grad_norm", note="reward model gradient norm"),
    # ---- DPO / KTO / SimPO (seed 001 section 5)
    "loss/dpo": alias("rl_loss", note="DPO total loss"),
    "rewards/chosen": alias("rl_preference_reward", side="chosen"),
    "rewards/rejected": alias("rl_preference_reward", side="rejected"),
    "rewards/margins": alias("rl_preference_reward_margin"),
    "rewards/accuracy": alias("rl_preference_accuracy_ratio"),
    "rewards/accuracies": alias("rl_preference_accuracy_ratio", note="TRL spelling"),
    "logps/chosen": alias("rl_preference_logprob", side="chosen"),
    "logps/rejected": alias("rl_preference_logprob", side="rejected"),
    "kl_estimate": alias("rl_reference_kl", note="KTO: batch estimate of KL(policy || reference)"),
    "loss/kl": alias("rl_loss", component="kl", note="KTO KL regulariser term of the loss"),
    # ---- agentic episodes (seed 004 section 5); /mean|max|min via the stat suffix.
    "episode/reward": alias("rl_episode_reward"),
    # "interaction turns per episode": the same quantity as veRL num_turns
    "episode/length": alias("rl_turns", note="interaction turns per episode"),
    # ---- world model (seed 004 section 9)
    "world_model/loss": alias("rl_world_model_loss"),
    "world_model/grad_norm": alias("rl_world_model_grad_norm"),
    # ---- validation (seed 004 section 10). The guide prints val/accuracy as "85.6%" next to
    # val/score 0.856: a display format of a 0..1 value, so no scale.
    "val/score": alias("rl_validation_score", note="mean held-out score, all data sources"),
    "val/accuracy": alias("rl_validation_score", var="accuracy"),
    # ---- legacy veRL console timing (seed 004 section 11.4), seconds
    "timing/step": alias("rl_step_duration_seconds"),
}

# Legacy veRL console learning rates carry their display scale in the key:
# `actor/lr(1e-6):0.010` means 0.010e-6. A pattern cannot multiply by a captured number, but the
# scale is a constant per key, so every power of ten a config plausibly uses gets an exact alias
# whose `scale` undoes the display scaling. Other spellings are ignored below rather than
# exported off by an unknown factor.
for _n in range(1, 10):
    K[f"actor/lr(1e-{_n})"] = alias("rl_learning_rate", scale=10.0 ** -_n,
                                    note=f"legacy console lr shown in units of 1e-{_n}")
    K[f"critic/lr(1e-{_n})"] = alias("rl_critic_learning_rate", scale=10.0 ** -_n,
                                     note=f"legacy console lr shown in units of 1e-{_n}")

K.update(config_keys())

P = [
    pattern(r"^episode/success_rate_(?P<task>.+)$", "rl_episode_success_ratio"),
    pattern(r"^val/pass@(?P<k>\d+)$", "rl_validation_pass_at_k_ratio"),
    pattern(r"^timing/(?P<phase>.+)$", "rl_phase_duration_seconds", note="legacy veRL console, seconds"),
]

VOCABULARY = Vocabulary(
    name="generic", title="Generic (metric guides)", keys=K, patterns=P,
    ignored_patterns=[
        (re.compile(r"^(?:actor|critic)/lr\(.+\)$"),
         "legacy veRL console lr in a display unit other than 1e-1..1e-9: the factor is in the key "
         "and cannot be applied by a pattern, so exporting it would be off by that factor"),
    ],
    step_keys=("step", "global_step"),
    doc="Names used by the metric guides and older veRL consoles, independent of one framework.",
)
