import logging

import pytest

from . import harness


@pytest.fixture(autouse=True)
def quiet_exporter_logs():
    # the faults make the exporter log (once per kind); the table below is the record
    lg = logging.getLogger("rl_exporter")
    level = lg.level
    lg.setLevel(logging.CRITICAL)
    yield
    lg.setLevel(level)


def pytest_terminal_summary(terminalreporter):
    if not harness.RESULTS:
        return
    tr = terminalreporter
    tr.section("fault injection: log() p99, faulted / fault-free (same process, interleaved)")
    tr.write_line(f"{'fault':38} {'ratio':>6} {'base us':>8} {'fault us':>9}  attempts  counted")
    for r in harness.RESULTS:
        tr.write_line(f"{r['fault'][:38]:38} {r['ratio']:6.2f} {r['base_p99_us']:8.1f} "
                      f"{r['fault_p99_us']:9.1f}  {str(r['attempts']):8}  {r['counted']}")
    harness.write_report()
