"""Exporter health: is rl-exporter itself receiving, processing and exposing frames?"""
from __future__ import annotations

from .common import (ERRORS, QUEUE_DROPS, RATE, SIDECAR, STALL_RED, STALL_YELLOW, hist_heatmap, q, qi, sel,
                     stall_ratio, stat, ts)
from .model import Dashboard, Row

ROWS = [
    Row("Targets and frames", [
        stat("Targets up", "Scrape targets of the selected jobs that answered the last scrape.",
             "equal to the number of exporters you run.",
             qi('sum(up{job=~"$job", namespace=~"$namespace"})', "up"), unit="short", min=0, width=6),
        stat("Silence since the last frame (in step lengths)",
             "time() minus the newest processed frame, divided by max(6 min, the run's longest "
             "step of the last 5h20m), worst run (for a sidecar this is its source lag).",
             "below 3; 5 is where RLRunStalled pages, whether a step takes 15 s or 30 min.",
             qi(f"max({stall_ratio('rl_exporter_last_frame_timestamp_seconds')})", "age"),
             unit="none", decimals=1, min=0, width=6,
             thresholds=[(None, "green"), (STALL_YELLOW, "yellow"), (STALL_RED, "red")]),
        stat("Frames waiting", "Frames queued for the worker now (sum over runs).",
             "0 or a few; a persistently full queue drops frames.",
             qi(f"sum({sel('rl_exporter_queue_frames')})", "queued"), unit="short", min=0, width=6,
             thresholds=[(None, "green"), (100, "yellow")]),
        stat("Dropped frames (1h)", "Frames dropped in the last hour, all reasons.", "0.",
             qi(f"sum(increase({sel('rl_exporter_frames_dropped_total')}[1h])) or vector(0)",
                "dropped"), unit="short", min=0, width=6, thresholds=[(None, "green"), (1, "red")]),
        ts("Frames received and processed", "Frames handed to log() and turned into series, per second.",
           "the two lines coincide and match the trainer's logging rate.",
           q(f"rate({sel('rl_exporter_frames_received_total')}[{RATE}])", "{{run}} received"),
           q(f"rate({sel('rl_exporter_frames_processed_total')}[{RATE}])", "{{run}} processed"),
           unit="short", min=0, width=12),
        ts("Dropped frames by reason", "Frames dropped per second: queue_full, closed, not_a_mapping.",
           "0.",
           q(f"rate({sel('rl_exporter_frames_dropped_total')}[{RATE}]) > 0", "{{run}} {{reason}}",
             gate=QUEUE_DROPS),
           unit="short", min=0, width=12, thresholds=[(None, "green"), (0.001, "red")]),
    ]),
    Row("Values and keys", [
        ts("Non-finite values by metric", "NaN/Inf values received per interval, by metric.",
           "0; a non-finite loss or gradient norm is a crash in progress.",
           q(f"increase({sel('rl_exporter_nonfinite_values_total')}[{RATE}])", "{{run}} {{metric}}"),
           unit="short", min=0, thresholds=[(None, "green"), (1, "red")]),
        ts("Rejected values by reason", "Values not exported: type, string, overflow, "
           "negative_counter, unknown_state, series_limit.",
           "0 after the first steps; series_limit means a label exploded.",
           q(f"increase({sel('rl_exporter_values_rejected_total')}[{RATE}])", "{{run}} {{reason}}"),
           unit="short", min=0),
        ts("Unknown and fallback keys", "Values of keys no vocabulary knows (exported under "
           "rl_unmapped_value), fallback keys dropped at the cap, keys ignored on purpose, and "
           "the number of distinct fallback series.",
           "few unknown keys (map them in the catalog); 0 dropped at the cap.",
           q(f"increase({sel('rl_exporter_unknown_keys_total')}[{RATE}])", "{{run}} unknown"),
           q(f"increase({sel('rl_exporter_fallback_keys_dropped_total')}[{RATE}])", "{{run}} dropped at cap"),
           q(f"increase({sel('rl_exporter_ignored_keys_total')}[{RATE}])", "{{run}} ignored"),
           # 0, not "no data", for a run whose keys all map (the healthy case)
           q(f"count by (run) ({sel('rl_unmapped_value')}) or 0 * count by (run) ({sel('rl_run_info')})",
             "{{run}} fallback series"),
           unit="short", min=0),
    ]),
    Row("Worker", [
        hist_heatmap("Frame processing time", "Worker time per frame (resolve keys, write the store).",
                     "well under a millisecond (the hot path only copies and enqueues).",
                     "rl_exporter_frame_processing_seconds_bucket", width=12),
        ts("Frame processing p50 / p99", "Quantiles of the worker time per frame.",
           "p99 under 10 ms (this project's heuristic).",
           q("histogram_quantile(0.5, sum by (run, le) (rate("
             + sel("rl_exporter_frame_processing_seconds_bucket") + f"[{RATE}])))", "{{run}} p50"),
           q("histogram_quantile(0.99, sum by (run, le) (rate("
             + sel("rl_exporter_frame_processing_seconds_bucket") + f"[{RATE}])))", "{{run}} p99"),
           unit="s", min=0, width=6, thresholds=[(None, "green"), (0.01, "yellow")]),
        ts("Internal errors", "Internal exporter errors by kind (each is logged once).", "0.",
           q(f"increase({sel('rl_exporter_errors_total')}[{RATE}])", "{{run}} {{kind}}", gate=ERRORS),
           unit="short", min=0, width=6, thresholds=[(None, "green"), (1, "red")]),
    ]),
    Row("Sidecar sources", [
        ts("Source lag", "Bytes of each followed file not read yet (rl-exporter serve).",
           "near 0 while the trainer writes; a growing lag means serve cannot keep up.",
           q(f"max by (run, source) ({sel('rl_exporter_source_lag_bytes')})", "{{run}} {{source}}",
             gate=SIDECAR), unit="bytes", min=0, width=8),
        ts("Lines rejected by reason", "Log lines the parsers could not use: fragments, malformed "
           "records, values cut off, over-long lines, binary garbage.",
           "0 or a trickle (wrapped terminal lines); a steady rate means a format mismatch: "
           "try `rl-exporter parse FILE`.",
           q(f"sum by (run, reason) (increase({sel('rl_exporter_source_lines_rejected_total')}[{RATE}]))",
             "{{run}} {{reason}}", gate=SIDECAR), unit="short", min=0, width=8),
        ts("Rotations and truncations", "Files rotated or truncated (veRL truncates its JSONL on "
           "every start) that serve detected and followed.",
           "a truncation at each trainer (re)start; many per hour means two writers or a log collector "
           "rewriting the file.",
           q(f"sum by (run) (increase({sel('rl_exporter_source_rotations_total')}[1h]))",
             "{{run}} rotations", gate=SIDECAR),
           q(f"sum by (run) (increase({sel('rl_exporter_source_truncations_total')}[1h]))",
             "{{run}} truncations", gate=SIDECAR), unit="short", min=0, width=8),
    ]),
]

DASHBOARD = Dashboard(
    uid="rl-exporter-health", title="rl-exporter health",
    description="Frames, drops, non-finite values, unknown/fallback keys, queue and worker time "
                "of the exporter itself, and the sidecar's sources (lag, rejected lines, rotations).",
    rows=ROWS, tags=["rl-exporter", "exporter"])

