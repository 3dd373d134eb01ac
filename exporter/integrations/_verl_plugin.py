"""veRL plugin entry point: importing this module registers the "rl_exporter" Tracking backend.

veRL (verl.utils.plugins.load_plugins) imports every `verl.plugins` entry point on the driver
and, through Ray's worker_process_setup_hook, in each worker process. Registering only adds a
backend name; nothing is exported unless trainer.logger lists "rl_exporter".
"""
from .verl import register

try:
    register()
except Exception as _e:  # a plugin must never break veRL's start-up
    import logging
    logging.getLogger("rl_exporter").error("rl-exporter (verl plugin): %r", _e)
