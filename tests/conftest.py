import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import free_port  # noqa: F401  (tests import it from here too)


# RLX_REQUIRE_ALL=1 (set by .ci/run): a test that skips, for whatever reason (a missing
# binary, package, mounted file), fails instead, so CI cannot go green on skipped tests.
# Only tests marked `gpu` (they need hardware this machine may lack) may still skip.
REQUIRE_ALL = os.environ.get("RLX_REQUIRE_ALL", "") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a GPU; may skip even under RLX_REQUIRE_ALL=1")


def _skip_reason(rep) -> str:
    lr = rep.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2])
    return str(lr)


def _fail_skip(rep, where: str) -> None:
    reason = _skip_reason(rep)
    rep.outcome = "failed"
    rep.longrepr = (f"RLX_REQUIRE_ALL=1: {where} skipped ({reason}); install what it needs "
                    "(scripts/test) or mark it `gpu` if it needs hardware")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if (REQUIRE_ALL and rep.skipped and not hasattr(rep, "wasxfail")
            and item.get_closest_marker("gpu") is None):
        _fail_skip(rep, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if REQUIRE_ALL and rep.skipped:  # a module-level importorskip
        _fail_skip(rep, collector.nodeid)


@pytest.fixture(autouse=True)
def _rl_exporter_loggers_enabled():
    """A real framework imported by an earlier test (AReaL's logging dictConfig) disables every
    logger that existed then, ours included; tests that read our log lines need them on."""
    from exporter.integrations._common import keep_our_loggers
    keep_our_loggers()
    yield


@pytest.fixture(autouse=True)
def _stock_trainer_callbacks():
    """Importing ms-swift's trainers replaces transformers' default trainer callbacks for the
    whole process (swift/trainers/patcher.py); after each test they are transformers' own."""
    yield
    trainer = sys.modules.get("transformers.trainer")
    if trainer is not None:
        cb = sys.modules["transformers.trainer_callback"]
        trainer.DEFAULT_CALLBACKS = [cb.DefaultFlowCallback]
        trainer.DEFAULT_PROGRESS_CALLBACK = cb.ProgressCallback
        trainer.PrinterCallback = cb.PrinterCallback


@pytest.fixture
def port():
    return free_port()


def require_binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (scripts/test installs it)")
    return path


def rl_exporter_cmd(*args: str) -> list[str]:
    """Run the CLI with this interpreter, so tests need no installed console script."""
    return [sys.executable, "-m", "exporter.cli", *args]


def stop(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
