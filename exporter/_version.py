"""The package's version, in a module of its own so that core/ can read it without importing
the package's face (exporter/__init__.py, which reaches the hook)."""
__version__ = "0.1.0"
