"""The pipeline the hook and the sidecar share: worker -> store -> collector -> endpoint, with
value coercion, caller-thread snapshots, the loss counters and the OpenTelemetry mirror; and
the served run (run.py), the pipeline with its declared companions, that both build."""
