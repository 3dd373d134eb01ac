"""Shared plumbing for the framework integrations: how an adapter gets its Exporter."""
from __future__ import annotations

import logging
import os

log = logging.getLogger("rl_exporter")

# Environment knobs every integration honours (explicit arguments win).
ENV_PORT = "RL_EXPORTER_PORT"
ENV_ADDR = "RL_EXPORTER_ADDR"
ENV_RUN = "RL_EXPORTER_RUN"
ENV_OTLP = "RL_EXPORTER_OTLP_ENDPOINT"
ENV_DISABLE = "RL_EXPORTER_DISABLE"


def get_path(obj, *path):
    """obj.p1.p2... through dicts, OmegaConf configs (.get) or attributes; None when missing."""
    for p in path:
        if obj is None:
            return None
        try:
            obj = obj.get(p) if hasattr(obj, "get") else getattr(obj, p, None)
        except Exception:  # a config object that refuses unknown keys
            return None
    return obj


def disabled() -> bool:
    return os.environ.get(ENV_DISABLE, "").strip().lower() in ("1", "true", "yes", "on")


def exporter_kwargs(overrides: dict | None = None) -> dict:
    """Exporter(...) keyword arguments from the environment, then `overrides` on top.

    RL_EXPORTER_PORT (int; "none" or "" to not serve), RL_EXPORTER_ADDR, RL_EXPORTER_RUN,
    RL_EXPORTER_OTLP_ENDPOINT.
    """
    kw: dict = {}
    port = os.environ.get(ENV_PORT)
    if port is not None:
        p = port.strip().lower()
        if p in ("", "none", "off"):
            kw["port"] = None
        else:
            try:
                kw["port"] = int(p)
            except ValueError:
                log.error("rl-exporter: %s=%r is not a port number; using the default", ENV_PORT, port)
    if os.environ.get(ENV_ADDR):
        kw["addr"] = os.environ[ENV_ADDR]
    if os.environ.get(ENV_RUN):
        kw["run"] = os.environ[ENV_RUN]
    if os.environ.get(ENV_OTLP):
        kw["otlp_endpoint"] = os.environ[ENV_OTLP]
    for k, v in (overrides or {}).items():
        if v is not None or k == "port":
            kw[k] = v
    return kw


def make_exporter(framework: str, **kwargs):
    """A new Exporter for `framework`, configured from the environment and kwargs."""
    from ..hook import Exporter
    kw = exporter_kwargs(kwargs)
    kw["framework"] = framework
    return Exporter(**kw)


def metric_values(frame) -> dict:
    """The frame without values that are never metrics (sample tables, lists, dicts, bytes).
    Strings stay: the catalog maps some string keys to state series, and the exporter counts
    the rest as rejected values."""
    return {k: v for k, v in frame.items()
            if v is not None and not isinstance(v, (bytes, list, tuple, dict, set))}
