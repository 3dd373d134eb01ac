"""Rules as data -> a Prometheus rule file: overrides, the Helm threshold sentinels, YAML.

    from exporter.alerts.render import render
    groups = render({"thresholds": {"clip_ratio_high": 0.4},
                     "alerts": {"RLMFULow": {"for": "2h", "severity": "warning"}}})

`time_scale` shrinks every window, `for:` and time-valued threshold by the same
factor (the end-to-end test runs a day of alerting in a minute with the same
expressions).
"""
from __future__ import annotations

import re

from exporter.promql import format_duration, parse_duration

from .config import BASELINE_FACTOR, REWARD_WINDOW_FACTOR, RUNBOOK_BASE_URL, SEVERITIES, TIERS, TREND_FACTOR, Dur
from .recordings import RECORDINGS
from .rules import ALERTS, CONFIG

duration = format_duration  # the rule files' duration strings (exporter/promql.py)


class OverrideError(ValueError):
    pass


def apply_overrides(overrides: dict | None):
    cfg = dict(CONFIG)
    per_alert: dict[str, dict] = {}
    base_url = RUNBOOK_BASE_URL
    if not overrides:
        return cfg, per_alert, base_url
    unknown = set(overrides) - {"thresholds", "alerts", "runbook_base_url"}
    if unknown:
        raise OverrideError(f"unknown override sections {sorted(unknown)}; "
                            "use thresholds, alerts, runbook_base_url")
    for k, v in (overrides.get("thresholds") or {}).items():
        if k not in CONFIG:
            raise OverrideError(f"unknown threshold {k!r}; known: {', '.join(sorted(CONFIG))}")
        if isinstance(CONFIG[k], Dur):
            cfg[k] = Dur(parse_duration(v))
        elif isinstance(CONFIG[k], str):
            cfg[k] = str(v)
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise OverrideError(f"threshold {k!r} must be a number, got {v!r}")
            cfg[k] = v
    names = {a.name for a in ALERTS}
    for name, o in (overrides.get("alerts") or {}).items():
        if name not in names:
            raise OverrideError(f"unknown alert {name!r}")
        bad = set(o) - {"for", "severity", "disabled", "runbook_url"}
        if bad:
            raise OverrideError(f"{name}: unknown keys {sorted(bad)} (for, severity, disabled, runbook_url)")
        if "severity" in o and o["severity"] not in SEVERITIES:
            raise OverrideError(f"{name}: severity must be one of {SEVERITIES}")
        if "for" in o:
            parse_duration(o["for"])
        per_alert[name] = o
    base_url = overrides.get("runbook_base_url") or base_url
    return cfg, per_alert, base_url


def placeholder_values(cfg: dict, time_scale: float) -> dict:
    out = {"time_scale": "" if time_scale == 1 else f"{_num(time_scale)} * "}
    for k, v in cfg.items():
        if isinstance(v, Dur):
            out[k] = duration(v.seconds * time_scale) if "window" in k else _num(v.seconds * time_scale)
        else:
            out[k] = v if isinstance(v, str) else _num(v)
    for i in TIERS:
        rung = cfg[f"step_window_{i}"].seconds * time_scale
        # the rung's windows, and the reward's ("r": config.REWARD_WINDOW_FACTOR times longer)
        for p, w in (("", rung), ("r", rung * REWARD_WINDOW_FACTOR)):
            out[f"{p}w{i}"] = duration(w)
            out[f"{p}bw{i}"] = duration(w * BASELINE_FACTOR)
            out[f"{p}tw{i}"] = duration(w * TREND_FACTOR)
            out[f"{p}wbs{i}"] = _num(w * (1 + BASELINE_FACTOR))  # both windows, in seconds
            out[f"{p}tws{i}"] = _num(w * (TREND_FACTOR + 1 + BASELINE_FACTOR))  # and the trend window
    return out


def _num(x) -> str:
    return repr(float(x)).rstrip("0").rstrip(".") if float(x) != int(x) else str(int(x))


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def fill_text(text: str, values: dict) -> str:
    """Fill the {name} placeholders of annotation text or prose; any other brace is the text's
    own (Go templates: `{{ $value }}`, PromQL selectors: `{stat="max"}`)."""
    def sub(m):
        if m.group(1) not in values:
            raise KeyError(f"unknown placeholder {m.group(0)} in {text!r}")
        return str(values[m.group(1)])
    return _PLACEHOLDER.sub(sub, text)


def fill(expr: str, values: dict) -> str:
    """Fill an expression's {name} placeholders, then turn its doubled braces into PromQL's
    single ones (expressions are Python format strings: exporter/alerts/exprs.py)."""
    return fill_text(expr, values).replace("{{", "{").replace("}}", "}")


THRESHOLD_SENTINEL = "__threshold_{}__"


def numeric_thresholds(overrides: dict | None = None) -> dict[str, str]:
    """Every plain-number setting of CONFIG (not windows or durations), as rendered."""
    cfg, _, _ = apply_overrides(overrides)
    return {k: _num(v) for k, v in cfg.items() if not isinstance(v, (Dur, str))}


def render(overrides: dict | None = None, time_scale: float = 1.0,
           parameterised: bool = False) -> dict:
    """The rule file as a dict: {"groups": [...]} ready for yaml.safe_dump.

    parameterised=True leaves every plain-number threshold as a named sentinel
    (THRESHOLD_SENTINEL) in expressions and descriptions: the Helm chart fills them from
    `prometheusRule.thresholds` or numeric_thresholds(), so users tune by name."""
    cfg, per_alert, base_url = apply_overrides(overrides)
    vals = placeholder_values(cfg, time_scale)
    if parameterised:
        vals.update({k: THRESHOLD_SENTINEL.format(k) for k in numeric_thresholds(overrides)})
    records = [{"record": r.record, "expr": fill(r.expr, vals)} for r in RECORDINGS]
    alerts = []
    for a in ALERTS:
        o = per_alert.get(a.name, {})
        if o.get("disabled"):
            continue
        for_s = parse_duration(o["for"]) if "for" in o else a.for_.seconds
        desc = fill_text(a.description, vals)
        alerts.append({
            "alert": a.name,
            "expr": fill(a.expr, vals),
            "for": duration(for_s * time_scale),
            "labels": {"severity": o.get("severity", a.severity), **a.labels},
            "annotations": {
                "summary": fill_text(a.summary, vals),
                "description": desc,
                "runbook_url": o.get("runbook_url") or f"{base_url}#{a.name.lower()}",
            },
        })
    # One group: rules of a group run in order, so every alert reads recording rules of the
    # same evaluation (separate groups run independently and would read them one tick late).
    return {"groups": [{"name": "rl-exporter", "rules": records + alerts}]}





def yaml_text(doc: dict) -> str:
    import yaml

    class _D(yaml.SafeDumper):
        pass

    def _str(dumper, s):
        if "\n" in s:
            return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|")
        return dumper.represent_scalar("tag:yaml.org,2002:str", s)

    _D.add_representer(str, _str)
    head = ("# Generated by `python -m exporter.alerts render` from exporter/alerts/. Do not edit by hand:\n"
            "# change the source (or pass --overrides) and re-render; `python -m exporter.alerts --check` "
            "fails on drift.\n")
    return head + yaml.dump(doc, Dumper=_D, sort_keys=False, width=120, allow_unicode=True)
