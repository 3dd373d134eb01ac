"""Post-mortems from a finished or crashed run's log.

    backfill: log -> the same exporter path `serve` uses, one frame at a time -> the store
              rendered per step as timestamped OpenMetrics -> `promtool tsdb create-blocks-from
              openmetrics` -> Prometheus TSDB blocks.
    doctor:   backfill, then a real Prometheus on the blocks evaluates the shipped rules:
              recording rules backfilled with `promtool tsdb create-blocks-from rules`, each
              alert's expression as range queries with its `for:` honoured -> a timeline of
              findings with the runbook's next checks (text, JSON lines, HTML report).

Modules: logs (read any sidecar format, streamed), clock (where timestamps come from),
replay (frames -> exporter -> samples), openmetrics (sample lines, 2 h chunks), tools
(prometheus/promtool), backfill, rules (rule files, runbook), evaluate, report, progress.
"""
