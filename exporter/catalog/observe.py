"""Short names `observe()` accepts for the catalog's histograms.

The catalog's one alias registry covers both paths: framework keys map to gauges through the
vocabularies, and these short names map to histograms for `Exporter.observe(name, values)`.
"""
from __future__ import annotations

ALIASES: dict[str, str] = {
    "response_length": "rl_sample_response_length_tokens",
    "response_lengths": "rl_sample_response_length_tokens",
    "response_length_tokens": "rl_sample_response_length_tokens",
    "reward": "rl_sample_reward",
    "rewards": "rl_sample_reward",
    "advantage": "rl_sample_advantage",
    "advantages": "rl_sample_advantage",
    "logprob_gap": "rl_token_logprob_gap",
    "logprob_gaps": "rl_token_logprob_gap",
    "token_logprob_gap": "rl_token_logprob_gap",
}
