"""The crash finding: RLRunCrashed, the live rule's alert (exporter/alerts/areas/liveness.py),
from how the log ended (postmortem/ending.py: the spool's crashed event, a traceback, CUDA out
of memory, an NCCL error or `Killed` after the last record).

Live, the exporter reports the crash (rl_run_state crashed) and the rule pages at once; a
finished log has no time after its last line for a rule to hold, so doctor reads the ending
itself and says what killed the run, after which step, quoting the exception, with the
runbook's own next checks for RLRunCrashed."""
from __future__ import annotations

from .ending import CRASHED
from .rules import next_check

ALERT = "RLRunCrashed"


def findings(res, ev, runbook: dict) -> list:
    """One critical finding in the last segment when the run crashed (ev.ending), unless the
    rules already found it (a spool whose crashed event the backfill replayed)."""
    from .evaluate import Finding
    end = ev.ending
    if end is None or end.state != CRASHED or not res.segments:
        return []
    if any(f.alert == ALERT for f in ev.findings):
        return []
    seg = res.segments[-1]
    section = runbook.get(ALERT.lower())
    where = f" ({end.source})" if end.source else ""
    labels = {"run": seg.run, "exception": end.exception or ""}
    if end.message:
        labels["message"] = end.message
    return [Finding(
        alert=ALERT, severity="critical", labels=labels, start=seg.end, end=seg.end,
        value=1.0, step=end.step,
        summary=f"the run crashed after step {end.step}: {end.crash_text()}{where}",
        next=next_check(section), order=section["order"] if section else 0,
        segment=seg.index)]
