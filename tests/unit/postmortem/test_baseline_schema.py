"""A baseline file is checked against its schema when it is loaded: a hostile or broken one
is one error naming the field, before doctor's run (the reliability review's B3, B4, B6:
`bands: "nope"` reported "inside", others ended in tracebacks after the whole run, a 50 MB
file took 3 minutes)."""
from pathlib import Path

import pytest

from exporter.postmortem import baseline as bl

RUNS = Path(__file__).resolve().parents[2] / "data" / "baselines"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    doc = bl.learn([bl.read_run(str(RUNS / "healthy_seed1.spool")),
                    bl.read_run(str(RUNS / "healthy_seed2.spool"))])
    path = tmp_path_factory.mktemp("bl") / "good.yaml"
    path.write_text(bl.dump(doc))
    return path


def variant(tmp_path, good, change) -> Path:
    import yaml
    doc = yaml.safe_load(good.read_text())
    change(doc)
    p = tmp_path / "v.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def test_a_learned_baseline_loads(good):
    doc = bl.load(str(good))
    assert doc["bands"] and doc["method"]["by"] == "step"


def first_key(d):
    return next(iter(d["bands"]))


CASES = {
    "bands_is_string": (lambda d: d.__setitem__("bands", "nope"), "bands:"),
    "band_3_fields": (lambda d: d["bands"].__setitem__(first_key(d), [[1.0, 31.0, 2.0]]),
                      "bands['"),
    "band_str_bounds": (lambda d: d["bands"].__setitem__(first_key(d), [["a", "b", "c", "d"]]),
                        "bands['"),
    "band_inverted": (lambda d: d["bands"].__setitem__(first_key(d), [[1.0, 9.0, 2.0, -1.0]]),
                      "bands['"),
    "method_by_evil": (lambda d: d["method"].__setitem__("by", "evil"), "method.by:"),
    "method_missing": (lambda d: d.pop("method"), "method:"),
    "runs_not_list": (lambda d: d.__setitem__("runs", 5), "runs:"),
    "identity_is_list": (lambda d: d.__setitem__("identity", [1, 2]), "identity:"),
    "key_injection": (lambda d: d["bands"].__setitem__('rl_entropy{x="1"} or vector(1)) #',
                                                       d["bands"][first_key(d)]), "bands:"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_baseline_is_one_error_naming_the_field(tmp_path, good, case):
    change, field = CASES[case]
    path = variant(tmp_path, good, change)
    with pytest.raises(bl.BaselineError) as e:
        bl.load(str(path))
    msg = str(e.value)
    assert "\n" not in msg and field in msg, msg


def test_only_the_version_key(tmp_path):
    p = tmp_path / "v.yaml"
    p.write_text("rl_exporter_baseline: 1\n")
    with pytest.raises(bl.BaselineError, match="recipe:"):
        bl.load(str(p))


def test_an_alias_bomb_is_refused_and_said_briefly(tmp_path):
    p = tmp_path / "bomb.yaml"
    row = "[" + ",".join(["[1.0, 2.0, 0.0, 1.0]"] * 10) + "]"
    p.write_text("rl_exporter_baseline: 1\nrecipe: r\nidentity: {}\nruns: []\nmethod: {by: step}\n"
                 f"a: &a {row}\n"
                 + "".join(f"{c}: &{c} [" + ",".join([f"*{q}"] * 10) + "]\n"
                           for q, c in zip("abcdef", "bcdefg"))
                 + "bands:\n  rl_entropy: *g\n")
    with pytest.raises(bl.BaselineError) as e:
        bl.load(str(p))
    assert len(str(e.value)) < 400


def test_a_file_far_larger_than_a_baseline_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(bl, "MAX_FILE_BYTES", 1000)
    p = tmp_path / "big.yaml"
    p.write_text("rl_exporter_baseline: 1\n" + "junk: [1, 2]\n" * 200)
    with pytest.raises(bl.BaselineError, match="not a baseline"):
        bl.load(str(p))
