"""The crash finding: a log whose last metrics record is followed by a traceback.

A live Prometheus sees a crashed trainer as a run that stopped stepping (RLRunStalled) or a
target that went down (RLExporterDown); a finished log has no time after its last line for
either to fire, so doctor reads the ending itself (logs/traceback.py) and says what killed
the run, after which step, quoting the exception."""
from __future__ import annotations

ALERT = "RLRunCrashed"
NEXT = ("first the exception and the frames above it in the log (the call that failed; for CUDA "
        "out of memory, the phase and the allocation it names); next the last steps' memory and "
        "phase series (`hw_gpu_memory_used_bytes`, `rl_phase_duration_seconds`), then resume "
        "from the last checkpoint once it is fixed.")


def findings(res) -> list:
    """One critical finding in the last segment when the last log read ends in a traceback."""
    from .evaluate import Finding
    if not res.logs or res.logs[-1].crash is None or not res.segments:
        return []
    crash = res.logs[-1].crash
    seg = res.segments[-1]
    return [Finding(
        alert=ALERT, severity="critical", labels={"run": seg.run}, start=seg.end, end=seg.end,
        value=1.0, step=seg.last_step,
        summary=f"the log ends in a traceback after step {seg.last_step} (line {crash.line}): "
                f"{crash.text()}",
        next=NEXT, order=0, segment=seg.index)]
