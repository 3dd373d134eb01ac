"""A run against a baseline: per metric, the first step from which it stays outside its band
for `persist` consecutive steps (the live rules' recent_min_steps), ordered by that step: the
run's own "check first, then next" timeline."""
from __future__ import annotations

import math

from . import baseline as bl

PERSIST_STEPS = 5  # exporter/alerts/config.py CONFIG["recent_min_steps"]: the live rule's step count


def _label_text(labels: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def deviations(doc: dict, run: bl.RunSeries, persist: int = PERSIST_STEPS,
               metrics=None) -> list[dict]:
    """Findings {"alert": "RLOutsideBaseline", severity, metric, labels, step, band, value,
    steps_outside, summary, next}, ordered by first step. `metrics`: only these names."""
    by = doc["method"]["by"]
    pos = bl.progress(run, by) if run.steps else None
    out = []
    for key in doc["bands"]:
        name, labels = bl.parse_key(key)
        if metrics is not None and name not in metrics:
            continue
        streak: list = []
        found = None
        for step, v in run.series(key):
            band = bl.band_at(doc, key, pos(step))
            if band is None:
                streak = []
                continue
            lo, hi = band
            if not math.isfinite(v) or v < lo or v > hi:
                streak.append((step, v, band))
                if len(streak) >= persist:
                    found = streak
                    break
            else:
                streak = []
        if found is None:
            continue
        step, v, (lo, hi) = found[0]
        where = "above" if v == v and v > hi else ("below" if v == v and v < lo else "outside")
        lab = _label_text(labels)
        sel = f"{name}{{{lab}}}" if lab else name
        out.append({
            "alert": "RLOutsideBaseline", "severity": "warning", "metric": name,
            "labels": labels, "step": int(step) if float(step).is_integer() else step,
            "band": [lo, hi], "value": v if math.isfinite(v) else None,
            "steps_outside": persist,
            "summary": (f"{sel} left its baseline band at step {int(step)}: {v:.4g} {where} "
                        f"[{lo:.4g}, {hi:.4g}] and stayed out for {persist}+ steps"),
            "next": (f"compare with the recipe's healthy runs "
                     f"({', '.join(r['name'] for r in doc['runs'])}); the metrics that left "
                     "their bands before this step are the first to check"),
        })
    out.sort(key=lambda f: (f["step"], f["metric"]))
    return out


def timeline(findings: list[dict]) -> str:
    """'rl_policy_clip_ratio left its band at step 350, rl_entropy at 370, rl_score at 410'."""
    if not findings:
        return "no metric left its baseline band"
    parts = []
    for i, f in enumerate(findings):
        lab = _label_text(f["labels"])
        sel = f"{f['metric']}{{{lab}}}" if lab else f["metric"]
        parts.append(f"{sel} left its band at step {f['step']}" if i == 0
                     else f"{sel} at {f['step']}")
    return ", ".join(parts)


# ------------------------------------------------------------------ recipe identity
# A run of another framework or algorithm is another recipe: its bands say nothing about it
# (the live rules select by the same rl_run_info labels). A different model or config value
# is reported, and the run still compared: that difference is often what is being tested.
BLOCKING = ("framework", "algorithm")


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-12)  # the file keeps 6 digits
    return a == b


def identity_mismatch(doc: dict, run: bl.RunSeries) -> list[dict]:
    """[{"field", "recipe", "run", "blocking"}]: each identity value the recipe records (a list
    where its runs differed: any of them matches) and the run has, where they differ. A field
    the run does not carry is left out: nothing to compare."""
    ident = doc.get("identity") or {}
    have = {"framework": run.framework, **run.identity}
    have = {k: v for k, v in have.items() if v and v != "auto"}
    fields = [(k, ident.get(k), have.get(k)) for k in ("framework", "algorithm", "model")]
    fields += [(f"config.{k}", v, run.config.get(k)) for k, v in (ident.get("config") or {}).items()]
    out = []
    for field_, want, got in fields:
        if want is None or want == [] or want == "" or got is None:
            continue
        allowed = want if isinstance(want, list) else [want]
        if not any(_same(got, w) for w in allowed):
            out.append({"field": field_, "recipe": want, "run": bl.rounded(got),
                        "blocking": field_ in BLOCKING})
    return out


def mismatch_text(found: list[dict]) -> str:
    return "; ".join(f"{m['field']}: the run's {m['run']}, the recipe's "
                     f"{' or '.join(map(str, m['recipe'])) if isinstance(m['recipe'], list) else m['recipe']}"
                     for m in found)


# ------------------------------------------------------------------ doctor --baseline / --compare
FAILED = object()


def add_doctor_arguments(p) -> None:
    p.add_argument("--baseline", default=None, metavar="FILE",
                   help="also report where the run left the bands of this baseline "
                        "(`rl-exporter baseline`): RLOutsideBaseline findings, by first step")
    p.add_argument("--compare", default=None, metavar="LOG",
                   help="the same against one reference run's log (a one-run baseline)")
    p.add_argument("--baseline-steps", type=int, default=PERSIST_STEPS, metavar="N",
                   help=f"steps in a row outside a band before it counts (default "
                        f"{PERSIST_STEPS}, the live rule's)")
    p.add_argument("--force-baseline", action="store_true",
                   help="compare even when the run's framework or algorithm is not the "
                        "baseline's (by default such a run is not compared, and doctor says so)")


def for_doctor(args):
    """The baseline doctor compares against (None without --baseline/--compare), loaded before
    the long part of doctor runs; FAILED after printing why."""
    import sys

    from .logs import LogError
    try:
        if args.baseline:
            return bl.load(args.baseline)
        if args.compare:
            return bl.learn([bl.read_run(args.compare, fmt=args.format)])
    except (bl.BaselineError, LogError, OSError, ValueError) as e:
        print(f"rl-exporter doctor: {e}", file=sys.stderr)
        return FAILED
    return None


def print_findings(doc, args, out) -> None:
    """After doctor's own findings, in its style (JSON lines or a text table)."""
    import json
    if doc is None:
        return
    run = bl.read_run(args.logs, fmt=args.format, run=args.run,
                      algorithm=getattr(args, "algorithm", None), model=getattr(args, "model", None))
    mismatch = identity_mismatch(doc, run)
    blocked = any(m["blocking"] for m in mismatch) and not getattr(args, "force_baseline", False)
    name = args.run or run.name
    src = ", ".join(r["name"] for r in doc["runs"])
    if blocked:
        if args.json:
            out.write(json.dumps({"alert": None, "run": name, "baseline": doc["recipe"],
                                  "banded": len(doc["bands"]), "compared": False,
                                  "outside_baseline": None, "baseline_mismatch": mismatch,
                                  "steps": len(run.steps)}) + "\n")
            return
        out.write(f"\nagainst baseline {doc['recipe']} (from {src}): not compared, the run is "
                  f"another recipe ({mismatch_text([m for m in mismatch if m['blocking']])}); "
                  "--force-baseline compares anyway\n")
        return
    found = deviations(doc, run, persist=args.baseline_steps)
    for i, f in enumerate(found):
        before = timeline(found[:i]) if i else ""
        f["next"] = (f"left before it: {before.replace(' left its band at step', ' at')}; "
                     if before else "the first signal to leave its band; ") + f["next"]
    if args.json:
        for f in found:
            row = dict(f, time=None, run=name, baseline=doc["recipe"], baseline_mismatch=mismatch)
            out.write(json.dumps(row, allow_nan=False) + "\n")
        if not found:
            out.write(json.dumps({"alert": None, "run": name, "baseline": doc["recipe"],
                                  "banded": len(doc["bands"]), "compared": True,
                                  "outside_baseline": False, "baseline_mismatch": mismatch,
                                  "steps": len(run.steps)}) + "\n")
        return
    out.write(f"\nagainst baseline {doc['recipe']} (from {src}): {len(doc['bands'])} series "
              f"banded, {args.baseline_steps} steps in a row outside counts\n")
    if mismatch:
        forced = " (compared: --force-baseline)" if any(m["blocking"] for m in mismatch) else ""
        out.write(f"  not the recipe's identity{forced}: {mismatch_text(mismatch)}\n")
    if not found:
        out.write("  inside: no banded series left its band\n")
        return
    out.write(f"{'STEP':>6}  {'ALERT':<20} {'VALUE':>10}  {'BAND':<22} SERIES\n")
    for f in found:
        lab = _label_text(f["labels"])
        band = f"[{f['band'][0]:.4g}, {f['band'][1]:.4g}]"
        val = "NaN" if f["value"] is None else f"{f['value']:.4g}"
        out.write(f"{f['step']:>6}  {f['alert']:<20} {val:>10}  {band:<22} "
                  f"{f['metric']}{'{' + lab + '}' if lab else ''}\n")
    out.write(f"timeline: {timeline(found)}\n")
