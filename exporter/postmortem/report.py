"""Doctor's output: a text timeline, JSON lines, or a self-contained HTML report whose
plots (matplotlib, imported only here) shade the intervals where alerts fired."""
from __future__ import annotations

import base64
import html
import io
import json
import math

from ..promql import human_duration
from . import clock as clockmod
from . import goodput as goodputmod
from . import stacks as stacksmod
from . import verdict as verdictmod
from .backfill import iso
from .rules import metric_names

# The run-overview panels, in the order the runbook reads them (present ones only).
OVERVIEW = [
    ("Reward", ["rl_reward", "rl_score"]),
    ("Validation", ["rl_validation_score"]),
    ("Policy entropy", ["rl_entropy"]),
    ("Policy KL (old vs new)", ["rl_policy_kl"]),
    ("KL to reference", ["rl_reference_kl"]),
    ("Clip fraction", ["rl_policy_clip_ratio"]),
    ("Loss", ["rl_policy_loss", "rl_loss"]),
    ("Gradient norm", ["rl_grad_norm"]),
    ("Response length (tokens)", ["rl_response_length_tokens"]),
    ("Step duration (s)", ["rl_step_duration_seconds"]),
]
MAX_LINES = 6
PLOT_POINTS = 600
_SKIP_LABELS = {"__name__", "run"}


def _num(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("+Inf" if v > 0 else "-Inf")
    return v


def fmt_value(v) -> str:
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{v:.4g}"




def _labels(d: dict) -> str:
    extra = {k: v for k, v in d.items() if k not in _SKIP_LABELS}
    return ",".join(f"{k}={v}" for k, v in sorted(extra.items()))


# ------------------------------------------------------------------ text and JSON
def header(res, ev, verbose: bool = False) -> list[str]:
    first, last = res.step_at(res.start), res.step_at(res.end)
    lines = [f"rl-exporter doctor: run {res.run} ({res.framework}), {res.frames} frames, steps "
             f"{first}..{last}, {iso(res.start)} .. {iso(res.end)}",
             f"  {clockmod.sentence(res.clock_why)}",
             f"  {verdictmod.checks_line(res, ev)}"]
    segs = getattr(res, "segments", [])
    if len(segs) > 1 or any(g.resumed_from is not None for g in segs):
        for g in segs:
            lines.append(f"  segment {g.index} (run label {g.run}): steps {g.first_step}..{g.last_step}"
                         f" ({g.steps} steps), {g.why}"
                         + (f", starts at step {g.resumed_from} (a resumed run, or an excerpt)"
                            if g.resumed_from is not None
                            else "") + ("" if g.ready else "; too few steps for the step-windowed "
                                        "rules"))
    if ev.ending is not None:
        lines.append(f"  ended: {ev.ending.text()}")
    if verbose:
        lines += verdictmod.verbose_lines(res, ev)
    return lines


def verdict_lines(res, ev) -> list[str]:
    v = verdictmod.judge(res, ev)
    out = [f"verdict: {v.line}."]
    if v.kind == "too_short" and v.seen:
        out.append(f"  seen: {verdictmod.seen_text(v.seen)}.")
    return out


def evidence_lines(f, told: set) -> list[str]:
    """A finding's evidence; an answer already printed above (the same check on the same steps,
    for another finding) is not repeated."""
    out = []
    for e in getattr(f, "evidence", None) or []:
        key = (e["check"], e["answer"])
        if key in told:
            continue
        told.add(key)
        out.append(f"{'':>8}evidence: {e['check']}: {e['answer']}")
    return out


def text(res, ev, verbose: bool = False) -> str:
    out = header(res, ev, verbose) + [""] + verdict_lines(res, ev)
    if not ev.findings:
        out += [""] + goodputmod.text(goodputmod.summary(res))
        return "\n".join(out) + "\n"
    out.append("")
    out.append(f"{'STEP':>6}  {'TIME (UTC)':<20}  {'ALERT':<30} {'SEVERITY':<9} {'VALUE':>10}  SUMMARY")
    told = set()
    for f in ev.findings:
        t = iso(f.start).replace("T", " ").replace("Z", "")
        seg = f" [segment {f.segment}]" if len(getattr(res, "segments", [])) > 1 else ""
        out.append(f"{str(f.step):>6}  {t:<20}  {f.alert:<30} {f.severity:<9} "
                   f"{fmt_value(f.value):>10}  {f.summary}{seg}")
        if not f.confirmed:
            if f.next and f.alert not in told:
                out.append(f"{'':>8}check next: {f.next}")
                told.add(f.alert)
            out += evidence_lines(f, told)
            continue
        lab = _labels(f.labels)
        until = res.step_at(f.end)
        out.append(f"{'':>8}active until step {until} ({human_duration(f.end - f.start)} after firing)"
                   + (f"  [{lab}]" if lab else ""))
        if f.next and f.alert not in told:  # once per alert: the timeline stays readable
            out.append(f"{'':>8}check next: {f.next}")
            told.add(f.alert)
        out += evidence_lines(f, told)
        if f.stacks is not None:
            out += stacksmod.text(f.stacks)
    out += [""] + goodputmod.text(goodputmod.summary(res))
    return "\n".join(out) + "\n"


def json_lines(res, ev) -> str:
    rows = []
    gp = goodputmod.summary(res)  # on every line, as `run` is: any one line has the run's
    ending = ev.ending.as_json() if ev.ending is not None else None  # on every line too
    for f in ev.findings:
        rows.append({"alert": f.alert, "severity": f.severity, "step": f.step,
                     "time": iso(f.start), "value": _num(f.value), "summary": f.summary,
                     "next": f.next, "until": iso(f.end), "until_step": res.step_at(f.end),
                     "labels": f.labels, "run": res.run, "segment": f.segment,
                     "confirmed": f.confirmed,
                     "evidence": [dict(e) for e in getattr(f, "evidence", None) or []],
                     "goodput": gp, "ending": ending})
        if f.stacks is not None:
            rows[-1]["stacks"] = stacksmod.as_json(f.stacks)
    if not rows:
        v = verdictmod.judge(res, ev)
        rows.append({"alert": None, "run": res.run, "healthy": v.healthy, "verdict": v.kind,
                     "summary": v.line,
                     "checks": [c for c in ev.checks if c not in ev.no_data],
                     "no_data": ev.no_data, "too_few_steps": ev.too_short, "steps": res.steps,
                     "seen": {m: {k: _num(x) for k, x in r.items()} for m, r in v.seen.items()},
                     "start": iso(res.start), "end": iso(res.end),
                     "segments": [g.summary() for g in getattr(res, "segments", [])],
                     "goodput": gp, "ending": ending})
    return "".join(json.dumps(r, allow_nan=False) + "\n" for r in rows)


# ------------------------------------------------------------------ plots
def panels(res, ev, ruleset) -> list[tuple[str, list[str], list[str]]]:
    """(title, metric names, alerts shaded) for the overview, then one per fired alert."""
    fired = sorted({f.alert for f in ev.findings},
                   key=lambda a: min(f.order for f in ev.findings if f.alert == a))
    out = []
    for title, names in OVERVIEW:
        names = [n for n in names if n in ev.present]
        if names:
            shade = [a.name for a in ruleset.alerts if a.name in fired and
                     set(_reads(a, ruleset, ev)) & set(names)]
            out.append((title, names, shade))
    covered = {n for _, names, _ in out for n in names}
    for a in ruleset.alerts:
        if a.name in fired:
            names = [n for n in _reads(a, ruleset, ev) if n not in covered]
            if names:
                out.append((f"{a.name}: {', '.join(names)}", names[:3], [a.name]))
    return out


def _reads(alert, ruleset, ev) -> list[str]:
    """The trainer's series an alert reads, through the recording rules it uses (never the
    recordings themselves: the step-window bookkeeping tells a reader nothing)."""
    recs = {r.record: r.expr for r in ruleset.recording}
    raw, todo, seen = set(), [alert.expr], set()
    while todo:
        for n in metric_names(todo.pop(), ev.present | set(recs)):
            if n in recs:
                if n not in seen:
                    seen.add(n)
                    todo.append(recs[n])
            else:
                raw.add(n)
    return sorted(n for n in raw if n in ev.present and not n.startswith("rl_exporter_")
                  and n not in ("rl_run_info", "rl_training_step"))


def fetch(prom, res, names: list[str]) -> list[tuple[str, list, list]]:
    from .evaluate import query_range
    step = max(60.0, (res.end - res.start) / PLOT_POINTS)
    series = []
    for n in names:
        got = query_range(prom, f'{n}{{run="{res.run}"}}', res.start, res.end, step)
        means = {k: v for k, v in got.items() if "stat" not in dict(k)}
        got = means or got  # the mean tells the story; min/max only when there is no mean
        for key, pts in sorted(got.items(), key=lambda kv: _labels(dict(kv[0]))):
            lab = _labels(dict(key))
            series.append((n + (f"{{{lab}}}" if lab else ""), [p[0] for p in pts],
                           [p[1] for p in pts]))
    return series[:MAX_LINES]


def render_png(title: str, series, res, ev, shade: list[str]) -> bytes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    hours = lambda ts: (np.asarray(ts, dtype=float) - res.start) / 3600.0  # noqa: E731
    fig, ax = plt.subplots(figsize=(10, 3.2), dpi=100)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, ts, vs) in enumerate(series):
        vs = np.asarray(vs, dtype=float)
        x = hours(ts)
        ax.plot(x, np.where(np.isfinite(vs), vs, np.nan), lw=1.4, color=colors[i % len(colors)],
                label=name)
        bad = ~np.isfinite(vs)
        if bad.any():  # a rug along the bottom: NaN has no height to plot at
            ax.plot(x[bad], np.full(bad.sum(), 0.04), "|", color="crimson", ms=9, mew=1.2,
                    transform=ax.get_xaxis_transform(), label=f"{name}: NaN/Inf")
            ax.annotate("NaN/Inf", (x[bad][0], 0.09), xycoords=("data", "axes fraction"),
                        color="crimson", fontsize=8)
    spans = sorted({(f.start, f.end, f.severity) for f in ev.findings if f.alert in shade})
    for start, end, severity in spans:  # one span per interval, however many series fired
        color = "crimson" if severity == "critical" else "orange"
        ax.axvspan(hours([start])[0], hours([max(end, start + 60)])[0], color=color,
                   alpha=0.12, lw=0)
        ax.axvline(hours([start])[0], color=color, lw=1, ls="--")
    ax.set_title(title + (f"   (shaded: {', '.join(shade)} firing)" if shade else ""),
                 fontsize=11, loc="left")
    ax.set_xlabel("hours since the first step")
    ax.grid(alpha=0.3)
    ax.set_xlim(0, max(hours([res.end])[0], 1e-3))
    t_arr = np.asarray(res.times, dtype=float)
    s_arr = np.asarray(res.step_values, dtype=float)
    ok = np.isfinite(s_arr)
    if ok.sum() >= 2:
        th, sv = hours(t_arr[ok]), s_arr[ok]
        top = ax.secondary_xaxis("top", functions=(lambda h: np.interp(h, th, sv),
                                                   lambda s: np.interp(s, sv, th)))
        top.set_xlabel("step", fontsize=9)
    if series:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def html_report(res, ev, images: list[tuple[str, bytes]], runbook: dict) -> str:
    e = html.escape
    rows = "".join(
        f"<tr class='{e(f.severity)}'><td>{e(str(f.step))}</td><td>{e(iso(f.start))}</td>"
        f"<td><b>{e(f.alert)}</b></td><td>{e(f.severity)}</td><td>{e(fmt_value(f.value))}</td>"
        f"<td>{e(f.summary)}</td><td>{e(str(res.step_at(f.end)))}</td></tr>" for f in ev.findings)
    seen, nexts = set(), []
    for f in sorted(ev.findings, key=lambda f: (f.order, f.start)):
        if f.alert in seen:
            continue
        seen.add(f.alert)
        ans = "".join(f"<li>{e(x['check'])}: {e(x['answer'])}</li>"
                      for x in getattr(f, "evidence", None) or [])
        nexts.append(f"<li><b>{e(f.alert)}</b> ({e(f.severity)}): {e(f.next)}"
                     + (f"<ul>{ans}</ul>" if ans else "") + "</li>")
    figs = "".join(
        f"<figure><img alt='{e(title)}' src='data:image/png;base64,"
        f"{base64.b64encode(png).decode()}'/><figcaption>{e(title)}</figcaption></figure>"
        for title, png in images)
    head = "<br/>".join(e(x.strip()) for x in header(res, ev))
    verdict = "<br/>".join(e(x.strip()) for x in verdict_lines(res, ev))
    if ev.findings:
        body = (f"<p><b>{verdict}</b></p>"
                f"<h2>Findings</h2><table><tr><th>step</th><th>time (UTC)</th><th>alert</th>"
                f"<th>severity</th><th>value</th><th>summary</th><th>active until step</th></tr>"
                f"{rows}</table><h2>What to check next (runbook order)</h2><ol>{''.join(nexts)}</ol>")
    else:
        body = f"<h2>Verdict</h2><p>{verdict}</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/><title>rl-exporter doctor: {e(res.run)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; width: 100%; font-size: 14px; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }}
tr.critical td:nth-child(4) {{ color: #b00020; font-weight: bold; }}
tr.warning td:nth-child(4) {{ color: #b26a00; font-weight: bold; }}
figure {{ margin: 1em 0; }} img {{ max-width: 100%; }}
figcaption {{ font-size: 12px; color: #666; }} .meta {{ color: #555; font-size: 14px; }}
</style></head><body>
<h1>rl-exporter doctor: {e(res.run)}</h1>
<p class="meta">{head}</p>
{body}
<h2>Diagnosis panels</h2>
{figs}
</body></html>
"""
