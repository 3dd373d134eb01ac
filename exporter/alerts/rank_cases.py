"""promtool cases for RLRankStraggler (same format as exporter/alerts/testcases.py CASES, which merges
them): one scrape target per rank, each with its rl_run_info naming the rank."""
from __future__ import annotations

PHASE = "rl_phase_duration_seconds"


def rank(run: str, r: int, **phases: str) -> list[dict]:
    """A rank's target: its rl_run_info and one duration series per phase (values strings)."""
    target = f'job="rl-exporter", instance="{run}-{r}:9464", run="{run}"'
    out = [{"series": f'rl_run_info{{{target}, rank="{r}", framework="verl"}}', "values": "1x30"}]
    out += [{"series": f'{PHASE}{{{target}, phase="{p}"}}', "values": v} for p, v in phases.items()]
    return out


def steps(run: str) -> dict:
    return {"series": f'rl_training_step{{run="{run}"}}', "values": "1+1x30"}


RANK_CASES: dict[str, dict] = {
    # rank 2's gen takes twice the others'; ranks 0 and 1 wait for it inside update_actor (the
    # phase that holds the gradient all-reduce), so they look slow there but are the majority
    "RLRankStraggler": dict(
        fire=[steps("r"),
              *rank("r", 0, gen="20x30", update_actor="50x30"),
              *rank("r", 1, gen="22x30", update_actor="48x30"),
              *rank("r", 2, gen="45x30", update_actor="26x30")],
        at="10m", labels={"phase": "gen", "rank": "2", "instance": "r-2:9464"},
        desc="Run r: rank 2 (r-2:9464) took at least 2.0x the median rank's time in phase gen on every "
             "step of the recent window (over 1.5x and 5 s more).",
        silent=[
            # two ranks: the median cannot tell the slow one from the one that waits
            steps("two"), *rank("two", 0, gen="20x30"), *rank("two", 1, gen="80x30"),
            # a millisecond phase 3x slower on one rank costs nothing
            steps("ms"), *rank("ms", 0, log="0.02x30"), *rank("ms", 1, log="0.02x30"),
            *rank("ms", 2, log="0.06x30"),
            # slow on every other step only: it does not stay slower
            steps("alt"), *rank("alt", 0, gen="20x30"), *rank("alt", 1, gen="21x30"),
            *rank("alt", 2, gen="45 20 45 20 45 20 45 20 45 20 45 20 45 20 45 20"),
            # healthy jitter of +-20 % around the median
            steps("jitter"), *rank("jitter", 0, gen="20 24 17 22 19 23 18 21 20 24 17 22"),
            *rank("jitter", 1, gen="23 18 21 20 24 17 22 19 23 18 21 20"),
            *rank("jitter", 2, gen="17 22 24 18 21 20 23 17 22 24 19 21"),
        ],
        silent_at="10m"),
}
