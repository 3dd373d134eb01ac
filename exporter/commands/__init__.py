"""CLI verbs, one module each (discovered by exporter.cli)."""
