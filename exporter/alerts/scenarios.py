"""Which alerts each `rl-exporter demo --scenario` must fire (the end-to-end test's table), read
from the pathologies (exporter/demo/pathologies.py, one entry each).

scenario -> {alert: catalog metrics the scenario must feed for the alert to be expected}.
An alert whose metrics come from a vocabulary the catalog lacks is expected silent (and
reported), exactly as it would be for a real run of that framework. `crash` is a healthy run
whose trainer dies of an uncaught exception at the onset; `never-served` has no demo process (the
end-to-end test lists a port nobody listens on).
"""
from __future__ import annotations

from exporter.demo.pathologies import PATHOLOGIES

EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {p.name: dict(p.alerts) for p in PATHOLOGIES}
# alerts a scenario may also fire, depending on how fast the demo steps (never required)
MAY: dict[str, set[str]] = {p.name: set(p.may) for p in PATHOLOGIES}

# Alerts on the rollout engines' own series: proven end to end against the stand-in engine
# (`python -m exporter.demo.engine --scenario S`) scraped beside the demo with the run's label
# (tests/integration/test_engines_e2e.py). engine scenario -> alerts it must fire.
ENGINE_EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    "healthy": {},
    "long-tail": {"RLRolloutLongTail": ()},
    "aborts": {"RLRolloutAbortsHigh": ()},
    "kv-thrash": {"RLRolloutKVCacheThrash": ()},
    "down": {"RLRolloutEngineDown": ()},
}

# Alerts that compare the ranks of one run: proven end to end with real torch.distributed (gloo)
# ranks on CPU, an Exporter on each (tests/integration/test_straggler_gloo.py: run gloo-<scenario>).
RANK_EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    "healthy": {},
    "straggler": {"RLRankStraggler": ()},
}
