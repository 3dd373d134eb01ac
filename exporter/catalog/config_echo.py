"""Settings the sidecar reads from a trainer's start-up configuration print
(exporter/logs/config_dump.py: veRL's Hydra pprint, slime/Miles' Megatron argument table),
emitted as `config/{name}` and exported as rl_config_value{parameter="{name}"}.

The names are the sidecar's own, one per setting whatever the framework calls it, because the
alert rules read them by name (rl_config_value{parameter="n_mini"}).
"""
from .model import LAST, alias

SETTINGS = {
    "n_mini": "PPO mini-batches (optimizer steps) per training step",
    "max_grad_norm": "gradient clipping threshold",
    "max_response_length": "response length limit, tokens",
    "rollout_gpu_memory_utilization": "GPU memory fraction the rollout engine reserves",
    "total_training_steps": "training steps the run is configured for (GET /status: ETA)",
}


def config_keys() -> dict:
    """`config/{name}` -> rl_config_value{parameter=name}, for a vocabulary's keys."""
    return {f"config/{name}": alias("rl_config_value", parameter=name, agg=LAST,
                                    note="start-up config print: " + what)
            for name, what in SETTINGS.items()}
