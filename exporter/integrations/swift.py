"""ms-swift: its trainers are Hugging Face Trainer subclasses (Seq2SeqTrainer for SFT/PT, TRL
subclasses for GRPO/DPO/KTO/...), so rl-exporter's TRL callback covers them. ms-swift builds
callbacks from names: `--callbacks NAME` looks NAME up in swift.callbacks.callbacks_map and
calls `callbacks_map[NAME](args, trainer)` (SwiftMixin._get_callbacks). register() adds
"rl_exporter" to that map:

    # my_plugin.py, loaded with  swift rlhf --external_plugins my_plugin.py --callbacks rl_exporter ...
    from exporter.integrations.swift import register
    register()

or, from Python, `trainer.add_callback(RLExporterCallback())` as for any HF Trainer.

The keys ms-swift logs are TRL's (reward, reward_std, frac_reward_zero_std, kl,
completions/*, clip_ratio/*, ...) plus its own; the frames go through the catalog's "swift"
vocabulary where it has one, else "trl"; the
trainer settings (n_mini, max_grad_norm, max_completion_length, vllm_gpu_memory_utilization)
are read from ms-swift's argument classes, which subclass TRL's configs.
"""
from __future__ import annotations

import logging

from ._common import register_once

log = logging.getLogger("rl_exporter")

NAME = "rl_exporter"
_CLASS = None


def vocabulary() -> str:
    """The catalog vocabulary for ms-swift's keys: its own ("swift") where the catalog has
    one, else TRL's, whose key set ms-swift's trainers log."""
    from ..catalog import CATALOG
    return "swift" if "swift" in CATALOG.vocabularies else "trl"


def _callback_class():
    """RLExporterCallback with ms-swift's callback constructor, (args, trainer)."""
    global _CLASS
    if _CLASS is None:
        from .trl import RLExporterCallback

        class RLExporterSwiftCallback(RLExporterCallback):
            """ms-swift callbacks_map entry: RLExporterCallback built as swift builds callbacks."""

            def __init__(self, args=None, trainer=None, **kwargs):
                kwargs.setdefault("framework", vocabulary())
                RLExporterCallback.__init__(self, **kwargs)
                self.args, self.trainer = args, trainer

        RLExporterSwiftCallback.__module__ = __name__
        _CLASS = RLExporterSwiftCallback
    return _CLASS


def register(callbacks_map=None) -> dict | None:
    """Add "rl_exporter" to ms-swift's callbacks_map (default swift.callbacks.callbacks_map).
    Idempotent; returns the map, or None when ms-swift is not importable."""
    return register_once("swift", callbacks_map, _callbacks_map,
                         lambda m: m.setdefault(NAME, _callback_class()), what="ms-swift",
                         mark=False)


def _callbacks_map() -> dict:
    from swift.callbacks import callbacks_map
    return callbacks_map


def __getattr__(name):
    if name == "RLExporterSwiftCallback":
        return _callback_class()
    raise AttributeError(name)
