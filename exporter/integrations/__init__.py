"""One-line integrations: each module plugs rl-exporter into a framework's own logging hook.

    exporter.integrations.trl       RLExporterCallback        (transformers TrainerCallback)
    exporter.integrations.verl      RLExporterBackend, register()   (verl Tracking backend "rl_exporter")
    exporter.integrations.openrlhf  RLExporterLogger, attach()      (log_train / log_eval / close)
    exporter.integrations.areal     RLExporterStatsHook, attach(), register()  (StatsLogger.commit)
    exporter.integrations.slime     SlimeTracker, register()        (slime logging_utils.log)
    exporter.integrations.miles     RLExporterMilesBackend, register(), migration table
    exporter.integrations.swift     register() -> "rl_exporter" in ms-swift's callbacks_map

Each reads the trainer settings the alert rules need (n_mini, max_grad_norm, the response
length limit, the rollout engine's memory fraction) from the framework's own config and
exports them as rl_config_value{parameter=...} (see _common.CONFIG_PARAMETERS).

Every module imports its framework lazily (only inside the functions that patch it), so
importing an integration never pulls in torch, transformers, ray or the framework.
See docs/integrations.md.
"""
