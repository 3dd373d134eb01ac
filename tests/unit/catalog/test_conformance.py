"""Every framework's vocabulary against its data in data/<framework>.json: each researched key is
known, each key family has instances that land where they should, each important key has its
metric, labels, scale, aggregation and weight, and the copy matches the research file."""
from __future__ import annotations

import re

import pytest

from exporter.catalog import FRAMEWORKS
from tests.helpers import FRAMEWORK_DATA, framework_data, res

from .catalog_asserts import known, lands, research_entry

DATA = {fw: framework_data(fw) for fw in FRAMEWORKS}


def format_keys(formats: dict) -> list[str]:
    """The key lists under a data file's "formats" (e.g. OpenRLHF's tqdm postfix names)."""
    out = []
    for v in formats.values():
        out += format_keys(v) if isinstance(v, dict) else v
    return out


def known_keys(fw: str) -> list[str]:
    d = DATA[fw]
    inherited = framework_data(d["inherits"]["framework"])["keys"] if "inherits" in d else []
    return d.get("keys", []) + format_keys(d.get("formats", {})) + inherited


def cases(part: str):
    return [pytest.param(fw, row, id=f"{fw}:{row['key']}") for fw in FRAMEWORKS
            for row in DATA[fw].get(part, [])]


def instances():
    return [pytest.param(fw, rx, row, id=f"{fw}:{row['key']}") for fw in FRAMEWORKS
            for rx, rows in DATA[fw].get("patterns", {}).items() for row in rows]


def test_every_data_file_is_a_framework():
    assert sorted(p.stem for p in FRAMEWORK_DATA.glob("*.json")) == sorted(FRAMEWORKS)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_every_framework_has_data(fw):
    d = DATA[fw]
    assert d["framework"] == fw and d["source"].strip()
    assert d.get("keys") or d.get("important"), "nothing to check"


@pytest.mark.parametrize("fw,key", [pytest.param(fw, k, id=f"{fw}:{k}")
                                    for fw in FRAMEWORKS for k in known_keys(fw)])
def test_every_key_is_known(fw, key):
    assert known(key, fw).framework == fw


@pytest.mark.parametrize("fw", [fw for fw in FRAMEWORKS if DATA[fw].get("copied_from")])
def test_data_matches_research_file(fw):
    d, entry = DATA[fw], research_entry(fw)
    assert d["keys"] == entry["keys"]
    if "patterns" in d:
        assert sorted(d["patterns"]) == sorted(entry["patterns"])

    def same(ours, theirs, path):
        for k, v in ours.items():
            if isinstance(v, dict):
                same(v, theirs[k], f"{path}/{k}")
            else:
                assert v == theirs[k], f"{path}/{k}"
    same(d.get("formats", {}), entry.get("formats", {}), "formats")


@pytest.mark.parametrize("fw", [fw for fw in FRAMEWORKS if DATA[fw].get("patterns")])
def test_every_pattern_has_instances(fw):
    d = DATA[fw]
    for rx, rows in d["patterns"].items():
        assert rows, f"{rx} has no instance"
    if "inherits" in d:  # every family of the inherited vocabulary is exercised through this one
        keys = [r["key"] for rows in d["patterns"].values() for r in rows]
        for rx in framework_data(d["inherits"]["framework"])["patterns"]:
            assert any(re.match(rx, k) for k in keys), rx


@pytest.mark.parametrize("fw,regex,row", instances())
def test_pattern_instance(fw, regex, row):
    key, inherits = row["key"], DATA[fw].get("inherits")
    if inherits and regex == inherits["note"]:  # an instance of one of the inherited families
        assert any(re.match(rx, key) for rx in framework_data(inherits["framework"])["patterns"])
    else:
        assert re.match(regex, key), f"{key!r} is not an instance of {regex}"
    if "ignored" in row:
        r = known(key, fw)
        assert r.ignored and r.metric is None and row["ignored"] in r.reason, r
    elif row.get("fallback"):  # no canonical meaning: on the fallback, on purpose, with a reason
        r = known(key, fw)
        assert r.fallback and r.deliberate and dict(r.labels) == {"key": key}, r
    else:
        lands(key, fw, row["metric"], row.get("labels"), row.get("scale", 1.0))


@pytest.mark.parametrize("fw,row", cases("important"))
def test_important_key(fw, row):
    r = lands(row["key"], fw, row["metric"], row.get("labels"), row.get("scale", 1.0))
    if "agg" in row:
        assert r.agg == row["agg"]
    if "weight" in row:
        assert r.weight == row["weight"]
        if row["weight"] is not None:  # a weight is itself a logged key that resolves to a count
            w = res(row["weight"], fw)
            assert not w.fallback and not w.ignored and w.agg == "sum", row["weight"]
