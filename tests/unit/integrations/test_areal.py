"""AReaL: the StatsLogger hook driven exactly as AReaL's trainer drives StatsLogger.

`StatsLogger` reproduces areal/utils/stats_logger.py (areal-project/AReaL cbff54d645d2, 2026-08-22; the released 1.0.4 is exercised for real in tests/integration/test_real_areal.py): commit()
returns on ranks != 0, accepts a dict or a list of dicts, drops `*__count` keys, logs each item
at `max(global_step, last_commit_step + 1) + i` (wandb.log / add_scalar are recorded here), and
state_dict()/load_state_dict() carry last_commit_step across a resume. The trainer
(`_export_and_commit_stats`) merges actor + rollout + eval stats into one dict per step and
commits with a 0-based global_step.
"""
from __future__ import annotations

from types import SimpleNamespace

from exporter.integrations import areal as rlx_areal
from exporter.testing import scrape

from ._check import assert_exported, numeric_frame
from tests.helpers import framework_keys

AREAL_KEYS = framework_keys("areal")


def make_stats_logger_class():
    class StatsLogger:
        def __init__(self, config, ft_spec):
            self.exp_config = config
            self.config = config.stats_logger
            self.ft_spec = ft_spec
            self.logged = []           # (step, item) as wandb.log(item, step=...) received them
            self._last_commit_step = -1

        def state_dict(self):
            return {"last_commit_step": self._last_commit_step}

        def load_state_dict(self, state_dict):
            self._last_commit_step = state_dict["last_commit_step"]

        def close(self):
            self.closed = True

        def commit(self, epoch, step, global_step, data):
            if rank() != 0:
                return
            if isinstance(data, dict):
                data = [data]
            log_step = max(global_step, self._last_commit_step + 1)
            for i, item in enumerate(data):
                item = {k: v for k, v in item.items() if not k.endswith("__count")}
                self.logged.append((log_step + i, item))
            self._last_commit_step = log_step + len(data) - 1

    return StatsLogger


RANK = [0]


def rank():
    return RANK[0]


CONFIG = SimpleNamespace(stats_logger=SimpleNamespace(experiment_name="gsm8k-grpo", trial_name="t1"),
                         actor=SimpleNamespace(path="/models/Qwen3-1.7B"))


def step_stats(global_step):
    """One merged commit: every real AReaL key plus the __count companions SCALAR stats carry."""
    stats = numeric_frame(AREAL_KEYS, global_step)
    for k in ("timeperf/train_step", "timeperf/rollout", "rollout/reward", "ppo_actor/update/grad_norm"):
        stats[k + "__count"] = 4
    return stats


def _run(logger, commits):
    for epoch, step, gstep, data in commits:
        logger.commit(epoch, step, gstep, data)


def test_attach_exports_commit_items_with_arealsteps():
    StatsLogger = make_stats_logger_class()
    sl = StatsLogger(CONFIG, ft_spec=None)
    hook = rlx_areal.attach(sl, port=None)
    assert rlx_areal.attach(sl) is hook  # once per instance
    commits = [(0, i, i, step_stats(i)) for i in range(3)]
    _run(sl, commits)
    ex = hook.exporter
    series = scrape(ex)
    # what AReaL's backends received is what we exported, at the same step
    frames = [item for _, item in sl.logged]
    assert_exported(series, frames, "areal")
    assert series[("rl_training_step", ())] == sl.logged[-1][0] == 2
    assert not any(n == "rl_unmapped_value" and dict(lbl).get("key", "").endswith("__count")
                   for n, lbl in series), "__count keys must be dropped like commit() does"
    assert ex.run == "gsm8k-grpo_t1"
    assert ("model", "Qwen3-1.7B") in [k for k in series if k[0] == "rl_run_info"][0][1]
    sl.close()
    assert sl.closed and ex._closed


def test_list_commit_and_resume_follow_arealstep_rule():
    StatsLogger = make_stats_logger_class()
    sl = StatsLogger(CONFIG, ft_spec=None)
    hook = rlx_areal.attach(sl, port=None)
    # a list commit at global_step 0 -> steps 0 and 1; the next commit at global_step 1 -> 2
    sl.commit(0, 0, 0, [{"rollout/reward": 0.1}, {"rollout/reward": 0.2}])
    sl.commit(0, 1, 1, {"rollout/reward": 0.3})
    assert [s for s, _ in sl.logged] == [0, 1, 2]
    assert scrape(hook.exporter)[("rl_training_step", ())] == 2
    # resume from a checkpoint that had committed up to step 9
    sl.load_state_dict({"last_commit_step": 9})
    sl.commit(1, 0, 3, {"rollout/reward": 0.4})
    assert sl.logged[-1][0] == 10
    assert scrape(hook.exporter)[("rl_training_step", ())] == 10
    sl.close()


def test_register_wraps_class_and_only_rank0_exports(monkeypatch):
    monkeypatch.setattr(rlx_areal, "_rank", rank)
    StatsLogger = make_stats_logger_class()
    rlx_areal.register(StatsLogger, port=None)
    assert rlx_areal.register(StatsLogger) is StatsLogger
    RANK[0] = 1
    try:
        other = StatsLogger(CONFIG, None)
        other.commit(0, 0, 0, step_stats(0))
        assert other._rl_exporter_hook.exporter is None  # rank 1: nothing started, nothing exported
        other.close()
    finally:
        RANK[0] = 0
    sl = StatsLogger(CONFIG, None)
    sl.commit(0, 0, 0, step_stats(0))
    series = scrape(sl._rl_exporter_hook.exporter)
    assert_exported(series, [sl.logged[0][1]], "areal")
    sl.close()


def test_hook_rank_check_uses_torch_distributed(monkeypatch):
    monkeypatch.setattr(rlx_areal, "_rank", rank)
    RANK[0] = 3
    try:
        h = rlx_areal.RLExporterStatsHook(CONFIG, port=None)
        h.commit(0, 0, 0, {"rollout/reward": 1.0})
        assert h.exporter is None
        h2 = rlx_areal.RLExporterStatsHook(CONFIG, port=None, all_ranks=True)
        h2.commit(0, 0, 0, {"rollout/reward": 1.0})
        assert h2.exporter is not None
        h2.close()
    finally:
        RANK[0] = 0


class _BareStatsLogger:
    """The StatsLogger surface attach() wraps, and nothing else."""
    exp_config = None

    def commit(self, *a, **kw):
        pass

    def close(self):
        pass


def test_attach_turns_our_loggers_back_on_after_areals_dictconfig():
    """AReaL configures logging with dictConfig(disable_existing_loggers=True) on import,
    which silences loggers created before it: ours must log again once attached."""
    import logging
    import logging.config
    ours = logging.getLogger("rl_exporter")
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": True})
    assert ours.disabled
    from exporter.integrations import areal

    hook = areal.attach(_BareStatsLogger(), port=None)
    try:
        assert not ours.disabled
    finally:
        hook.close()


def test_attach_survives_areals_root_logger_swap():
    """AReaL's getLogger replaces logging.Logger.root and .manager on every call: afterwards
    getLogger("rl_exporter") is a new object under a handler-less root. attach() hands our
    modules' logger back to the manager, under logging.root."""
    import logging
    from exporter.integrations import _common, areal
    saved = logging.Logger.root, logging.Logger.manager
    try:
        logging.Logger.root = logging.RootLogger(logging.WARNING)
        logging.Logger.manager = logging.Manager(logging.Logger.root)
        assert logging.getLogger("rl_exporter") is not _common.log
        hook = areal.attach(_BareStatsLogger(), port=None)
        hook.close()
        assert logging.getLogger("rl_exporter") is _common.log
        top = _common.log
        while top.parent is not None:
            top = top.parent
        assert top is logging.root
    finally:
        logging.Logger.root, logging.Logger.manager = saved
