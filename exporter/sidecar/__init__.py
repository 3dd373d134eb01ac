"""The sidecar runtime: follows an unmodified trainer's logs and serves the same series as the hook
(`rl-exporter serve`). The log formats themselves live in exporter/logs/."""
