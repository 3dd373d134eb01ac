"""The hook's spool writer now lives with the spool format in exporter/spool.py (one
writer for the hook and the sidecar); this name stays for hook.py's import."""
from .spool import SpoolWriter  # noqa: F401
