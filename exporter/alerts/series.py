"""promtool input series for the hand-written cases (exporter/alerts/testcases.py and the case files it
merges): one run, `r`, and its series written as promtool's expanding notation."""
from __future__ import annotations

RUN = 'run="r"'


def s(name: str, values: str, **labels) -> dict:
    lab = ", ".join([RUN] + [f'{k}="{v}"' for k, v in labels.items()])
    return {"series": f"{name}{{{lab}}}", "values": values}


def alt(a, b, n):
    return " ".join([str(a), str(b)] * n)
