"""A baseline (`rl-exporter baseline`) as live rules: a second rule file, loaded next to the
shipped one (whose run:rl_training_step:changes_w* step ladder it reads).

    rl-exporter alerts render --baseline recipe.yaml --out recipe.rules.yaml
    rl-exporter alerts render --baseline recipe.yaml --helm-values --out recipe.values.yaml

Per banded series: the band's lower and upper bound at the run's current progress
(run:rl_baseline_band:lower/upper), only for runs whose rl_run_info carries the recipe's
identity; whether the series is outside (run:rl_baseline_outside:bool); and one warning,
RLOutsideBaseline{metric, series}, when it was outside on every evaluation of the shortest
window holding recent_min_steps step changes (the persistence of the other step-windowed
rules), for the same `for:`. Without a baseline nothing is rendered and the shipped rules
do not change.
"""
from __future__ import annotations

from exporter.postmortem import baseline as bl

from .exprs import ladder
from .render import (THRESHOLD_SENTINEL, apply_overrides, duration, fill, numeric_thresholds,
                     placeholder_values)

ALERT = "RLOutsideBaseline"
# The recorded series (the dashboards' band overlay queries these names).
BAND_LOWER = "run:rl_baseline_band:lower"
BAND_UPPER = "run:rl_baseline_band:upper"
OUTSIDE = "run:rl_baseline_outside:bool"
FOR_SECONDS = 60  # as the other step-windowed warnings
_STEP = 'max by (run) (rl_training_step{{split=""}})'
DOC_URL = "https://github.com/rl-exporter/rl-exporter/blob/main/docs/baselines.md"
_TOTAL = 'max by (run) (rl_config_value{{parameter="total_training_steps"}})'


def _q(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def recipe_selector(doc: dict) -> str:
    """rl_run_info of the runs this baseline is for: its framework, algorithm and model."""
    ident = doc.get("identity", {})
    parts = []
    for k in ("framework", "algorithm", "model"):
        v = ident.get(k)
        if isinstance(v, str) and v:
            parts.append(f'{k}="{_q(v)}"')
        elif isinstance(v, list) and v:
            parts.append(f'{k}=~"{"|".join(_q(x) for x in v)}"')
    return f"max by (run) (rl_run_info{{{{{', '.join(parts)}}}}})"


def series_selector(doc: dict, key: str) -> str:
    """The exact series: its labels, and every other label its metric has in the baseline
    (and split, for eval copies) empty."""
    name, labels = bl.parse_key(key)
    family = {"split"}
    for k in list(doc["bands"]) + list(doc.get("unbanded", {})):
        n, lab = bl.parse_key(k)
        if n == name:
            family |= set(lab)
    sel = {**{k: "" for k in family}, **labels}
    inner = ", ".join(f'{k}="{_q(v)}"' for k, v in sorted(sel.items()))
    return f"{name}{{{{{inner}}}}}"


def _bound(doc: dict, windows: list, i: int) -> str:
    progress = _STEP if doc["method"]["by"] == "step" else f"({_STEP} / on (run) {_TOTAL})"
    parts = []
    for a, b, *bounds in windows:
        parts.append(f"  (0 * ({progress} >= {bl.rounded(a)} < {bl.rounded(b)}) + "
                     f"{bl.rounded(bounds[i])})")
    return "(\n" + "\nor\n".join(parts) + f"\n)\nand on (run) {recipe_selector(doc)}"


def render(doc: dict, time_scale: float = 1.0, overrides: dict | None = None,
           parameterised: bool = False) -> dict:
    """The rule file as a dict ready for yaml.safe_dump. `overrides`: the thresholds of
    `rl-exporter alerts render --overrides` (recent_min_steps, the step windows);
    `parameterised`: plain-number thresholds left as the Helm chart's named sentinels, as
    alerts.render.render does, so `prometheusRule.thresholds` tunes these rules too."""
    cfg, _, _ = apply_overrides(overrides)
    vals = placeholder_values(cfg, time_scale)
    if parameterised:
        vals.update({k: THRESHOLD_SENTINEL.format(k) for k in numeric_thresholds(overrides)})
    rules = []
    for key, windows in doc["bands"].items():
        name, _ = bl.parse_key(key)
        labels = {"metric": name, "series": key, "baseline": doc["recipe"]}
        for i, which in ((0, "lower"), (1, "upper")):
            rules.append({"record": (BAND_LOWER, BAND_UPPER)[i],
                          "expr": fill(_bound(doc, windows, i), vals), "labels": dict(labels)})
        x = f"max by (run) ({series_selector(doc, key)})"
        band = f'{{{{series="{_q(key)}", baseline="{_q(doc["recipe"])}"}}}}'
        outside = (f"({x} < bool on (run) {BAND_LOWER}{band})\n"
                   f"+ ({x} > bool on (run) {BAND_UPPER}{band})\n"
                   f"+ ({x} != bool {x})")
        rules.append({"record": OUTSIDE, "labels": dict(labels),
                      "expr": fill(outside, vals)})
    if not rules:
        return {"groups": []}
    held = ladder("min by (run, metric, series, baseline) "
                   f"(min_over_time({OUTSIDE}[{{W}}]))")
    rules.append({
        "alert": ALERT,
        "expr": fill(held + " == 1", vals),
        "for": duration(FOR_SECONDS * time_scale),
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "A metric left the band its recipe's healthy runs stay in.",
            "description": ("Run {{ $labels.run }}: {{ $labels.series }} has been outside the "
                            "baseline {{ $labels.baseline }} band on every step of the last "
                            f"{vals['recent_min_steps']} or more."),
            "runbook_url": DOC_URL,
        },
    })
    return {"groups": [{"name": f"rl-exporter-baseline-{doc['recipe']}", "rules": rules}]}


def helm_values(doc: dict, overrides: dict | None = None) -> dict:
    """The chart values that load this baseline's rules: `prometheusRule.baselines.<recipe>`,
    a rule file the chart's PrometheusRule carries as its own groups (overrides,
    additionalRuleLabels and thresholds apply as to the shipped rules). A map, not a list, so
    several `-f recipe.values.yaml` files add up."""
    return {"prometheusRule": {"baselines": {
        doc["recipe"]: render(doc, overrides=overrides, parameterised=True)}}}
