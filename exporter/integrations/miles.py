"""Miles (radixark/miles, a slime fork): an "rl_exporter" tracking backend, and the migration
table from Miles' own Prometheus backend (`miles_metric_*`) to rl-exporter's names.

Miles' tracking (miles/utils/tracking_utils) has a backend registry,
`BACKEND_REGISTRY[name] = (BackendClass, "use_<name>")`; TrackingManager.init(args, primary)
instantiates every backend whose flag is set on args and fans out
`backend.log(metrics, step=metrics[step_key], step_key=step_key)`, then `finish()`.

    from exporter.integrations.miles import register
    register()                      # adds ("rl_exporter", flag "use_rl_exporter")
    args.use_rl_exporter = True     # after parse_args, in the driver script

Step handling is slime's (see exporter.integrations.slime): train/step as is, rollout/eval ids
times args.num_steps_per_rollout. Ports: primary process RL_EXPORTER_PORT (9464), others
port + 1 + RANK.

Migration table: `python3 -m exporter.integrations.miles --markdown` prints it from the catalog;
`--update-docs docs/integrations.md` rewrites the table in place (a test fails when it is stale).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import re
import sys

from ._common import disabled
from .slime import SlimeTracker

log = logging.getLogger("rl_exporter")

FRAMEWORK = "miles"
BACKEND = "rl_exporter"
FLAG = "use_rl_exporter"
PROMETHEUS_PREFIX = "miles_metric_"

# Keys Miles logs (radixark/miles 31f1ca961a94, 2026-08-21; from the team's source notes), plus
# one concrete instance of each family it shares with slime (lr per param group, response length
# statistics, pass@k).
MILES_KEYS = [
    "train/loss", "train/pg_loss", "train/entropy_loss", "train/pg_clipfrac", "train/ppo_kl",
    "train/ess_ratio", "train/train_rollout_logprob_abs_diff", "train/train_rollout_kl",
    "train/kl_loss", "train/ois", "train/opsm_clipfrac", "train/opd_reverse_kl", "train/grad_norm",
    "train/mtp_loss", "train/step", "train/critic-value_loss", "train/critic-value_clipfrac",
    "train/lr-pg_0",
    "rollout/weight_version/mean", "rollout/weight_version/median", "rollout/weight_version/max",
    "rollout/weight_version/min", "rollout/weight_version/mixed_version_ratio",
    "rollout/zero_std/all_zero_percentage", "rollout/zero_std/all_one_percentage",
    "rollout/repetition_frac", "rollout/truncated_ratio", "rollout/prefix_cache_hit_rate",
    "rollout/response_len/mean", "rollout/response_len/median", "rollout/response_len/max",
    "rollout/response_len/min", "rollout/step",
    "perf/rollout_time", "perf/eval_rollout_time", "perf/update_weights_implementation_time",
    "perf/finalize_and_resume_engines_time", "perf/critic_train_time", "perf/actor_train_time",
    "perf/train_time", "perf/train_wait_time", "perf/data_preprocess_time", "perf/log_probs_time",
    "perf/ref_log_probs_time", "perf/ref_model_update_time", "perf/log_probs_tflops",
    "perf/ref_log_probs_tflops", "perf/actor_train_tflops", "perf/actor_train_tok_per_s",
    "perf/mfu_peak_tflops", "perf/actor_train_mfu", "perf/step_time", "perf/wait_time_ratio",
    "passrate/pass@1", "eval/step",
]

TABLE_BEGIN = "<!-- miles-migration-table:begin (generated: python3 -m exporter.integrations.miles --update-docs docs/integrations.md) -->"
TABLE_END = "<!-- miles-migration-table:end -->"


def prometheus_name(key: str) -> str:
    """The gauge name Miles' PrometheusBackend gives a key (prometheus_utils._PrometheusCollector)."""
    return PROMETHEUS_PREFIX + key.replace("/", "_").replace("-", "_").replace("@", "_at_")


def our_series(key: str, catalog=None) -> str:
    """Where rl-exporter puts the key, as a PromQL-ish selector (without the run label)."""
    if catalog is None:
        from ..catalog import CATALOG as catalog
    r = catalog.resolve(key, FRAMEWORK)
    if r.step:
        return "rl_training_step (step key)"
    if r.ignored:
        return f"(not exported: {r.reason})"
    labels = ",".join(f'{k}="{v}"' for k, v in r.labels)
    return f"{r.metric.name}{{{labels}}}" if labels else r.metric.name


def migration_rows(keys=None, catalog=None) -> list[tuple[str, str, str]]:
    return [(prometheus_name(k), k, our_series(k, catalog)) for k in (keys or MILES_KEYS)]


def markdown_table(keys=None, catalog=None) -> str:
    lines = ["| Miles Prometheus name (`run_name` label) | Miles key | rl-exporter series (`run` label) |",
             "| --- | --- | --- |"]
    for prom, key, ours in migration_rows(keys, catalog):
        lines.append(f"| `{prom}` | `{key}` | `{ours}` |")
    return "\n".join(lines)


def render_docs(text: str, catalog=None) -> str:
    """`text` with the generated table between the markers replaced by the current one."""
    pat = re.compile(re.escape(TABLE_BEGIN) + r".*?" + re.escape(TABLE_END), re.S)
    if not pat.search(text):
        raise ValueError("migration table markers not found")
    block = f"{TABLE_BEGIN}\n{markdown_table(catalog=catalog)}\n{TABLE_END}"
    return pat.sub(lambda _m: block, text)


class RLExporterMilesBackend:
    """Miles TrackingBackend: init(args, primary) / log(metrics, step, step_key) / finish()."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self.tracker: SlimeTracker | None = None

    def init(self, args, *, primary: bool = True, **kwargs) -> None:
        if disabled():
            return
        try:
            self.tracker = SlimeTracker(args, primary=primary, framework=FRAMEWORK, **self._kwargs)
        except Exception as e:  # metrics must not stop the run
            log.error("rl-exporter (miles): exporter not started: %r", e)

    def log(self, metrics, step=None, *, step_key=None, **kwargs) -> None:
        if self.tracker is not None:
            try:
                self.tracker.log(dict(metrics), step_key, step=step)
            except Exception as e:
                log.error("rl-exporter (miles): log failed: %r", e)

    def define_step_key_metric_group(self, prefix: str, step_key: str) -> None:
        """TrackingManager calls this on every backend; the step axis needs nothing from it."""

    def finish(self) -> None:
        if self.tracker is not None:
            self.tracker.finish()


def register(*registries, flag: str = FLAG):
    """Add ("rl_exporter" -> (backend, flag)) to Miles' backend registries. Idempotent.

    Default: every BACKEND_REGISTRY found in miles.utils.tracking_utils.{tracking,base}.
    """
    if not registries:
        found = []
        for name in ("miles.utils.tracking_utils.tracking", "miles.utils.tracking_utils.base"):
            try:
                reg = getattr(importlib.import_module(name), "BACKEND_REGISTRY", None)
            except ImportError:
                continue
            if isinstance(reg, dict) and all(reg is not f for f in found):
                found.append(reg)
        if not found:
            log.error("rl-exporter (miles): miles.utils.tracking_utils is not importable; nothing registered")
            return []
        registries = tuple(found)
    for reg in registries:
        reg.setdefault(BACKEND, (RLExporterMilesBackend, flag))
    return list(registries)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m exporter.integrations.miles",
                                description="Miles miles_metric_* -> rl-exporter migration table")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--markdown", action="store_true", help="print the table")
    g.add_argument("--update-docs", metavar="FILE", help="rewrite the table between its markers in FILE")
    a = p.parse_args(argv)
    if a.markdown:
        print(markdown_table())
        return 0
    with open(a.update_docs, encoding="utf-8") as f:
        text = f.read()
    new = render_docs(text)
    if new != text:
        with open(a.update_docs, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"updated {a.update_docs}")
    else:
        print(f"{a.update_docs} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
