"""Settings the sidecar reads from a trainer's start-up configuration print
(exporter/logs/config_dump.py: veRL's Hydra pprint, slime/Miles' Megatron argument table),
emitted as `config/{name}` and exported as rl_config_value{parameter="{name}"}.

The names are the sidecar's own, one per setting whatever the framework calls it, because the
alert rules read them by name (rl_config_value{parameter="n_mini"}).
"""
from .model import LAST, alias

SETTINGS = {
    "n_mini": "optimizer updates per rollout batch (1 = on-policy: the PPO ratio is exactly 1)",
    "max_grad_norm": "gradient clipping threshold",
    "max_response_length": "response length limit, tokens",
    "rollout_gpu_memory_fraction": "GPU memory fraction the rollout engine reserves",
    "total_training_steps": "training steps the run is configured for (GET /status: ETA)",
    "pi_old_from_rollout": "1 where pi_old in the PPO ratio is the rollout engine's log-probs, "
                           "not the trainer's recompute (the clip can bind at n_mini = 1)",
    "kl_loss_coef": "KL-to-reference coefficient in the loss (0: no KL term)",
    "kl_reward_coef": "KL-to-reference coefficient in the reward (0: no KL penalty)",
    "async_training": "1 where rollouts overlap training (samples from older weights)",
    "colocated": "1 where the trainer and the rollout engine share the GPUs",
    "update_weights_interval": "rollouts per weight push to the engines (slime/Miles)",
}


def config_keys() -> dict:
    """`config/{name}` -> rl_config_value{parameter=name}, for a vocabulary's keys."""
    return {f"config/{name}": alias("rl_config_value", parameter=name, agg=LAST,
                                    note="start-up config print: " + what)
            for name, what in SETTINGS.items()}
