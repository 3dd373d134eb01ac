"""The sidecar's own per-source series (catalog group "sidecar"): lines, bytes, frames,
rejected lines by reason, lag, last frame time, rotations, truncations, files by state,
errors by kind."""
from __future__ import annotations

from collections import Counter

from prometheus_client.metrics_core import Metric as PromMetric
from prometheus_client.samples import Sample

from ..catalog import CATALOG, COUNTER

# kinds always rendered (at 0) for file sources, so an alert sees the series from the start
ERROR_KINDS = ("state_unreadable", "state_write", "spool_write", "spool_sync", "file_unreadable",
               "truncated_unread", "no_frames")


class SourceCollector:
    """Renders the per-source self-metrics (catalog group "sidecar") for every source."""

    def __init__(self, sidecar):
        self.sidecar = sidecar

    def describe(self):
        return []

    def collect(self):
        fams: dict[str, PromMetric] = {}

        def add(name, labels, value):
            m = CATALOG.metrics[name]
            fam = fams.get(name)
            if fam is None:
                base = name[:-6] if m.kind == COUNTER else name
                fam = fams[name] = PromMetric(base, m.help, "counter" if m.kind == COUNTER else "gauge")
            fam.samples.append(Sample(name, labels, float(value), None, None))

        for s in self.sidecar.all_sources():
            lab = {"run": s.spec.run, "source": s.spec.name}
            tracks = list(s.tracks.values())
            add("rl_exporter_source_lines_total", lab, s.lines)
            add("rl_exporter_source_bytes_total", lab,
                sum(t.follower.bytes_read for t in tracks))
            add("rl_exporter_source_frames_total", lab, s.frames)
            rej = s.parser_rejections()
            for reason in sorted(set(rej) | {"line_too_long", "malformed"}):
                add("rl_exporter_source_lines_rejected_total", dict(lab, reason=reason), rej[reason])
            add("rl_exporter_source_lag_bytes", lab, sum(t.follower.lag for t in tracks))
            add("rl_exporter_source_last_frame_timestamp_seconds", lab, s.last_frame_ts)
            add("rl_exporter_source_rotations_total", lab,
                sum(t.follower.rotations for t in tracks))
            add("rl_exporter_source_truncations_total", lab,
                sum(t.follower.truncations for t in tracks))
            states = Counter(t.follower.state for t in tracks)
            states.update(d.state for d in s.docs.values())
            if s.spec.format != "ingest":
                for st in ("following", "waiting", "deleted"):
                    add("rl_exporter_source_files", dict(lab, state=st), states[st])
            errors = Counter(s.errors)
            errors["file_unreadable"] += sum(t.follower.unreadable for t in tracks)
            errors["truncated_unread"] += sum(t.follower.lost for t in tracks)
            kinds = set(errors) | (set(ERROR_KINDS) if s.spec.format != "ingest" else set())
            for kind in sorted(kinds):
                add("rl_exporter_source_errors_total", dict(lab, kind=kind), errors[kind])
        return list(fams.values())
