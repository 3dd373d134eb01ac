"""Real training logs from public sources (tests/data/real/<framework>/, each file's source
link, release and format in tests/data/real/MANIFEST.json), read the way a user would:
`rl-exporter parse FILE` with automatic detection.

Two rates per framework and overall:
- parse rate: keys the parsers recover / keys a loose regex finds in the same lines. The
  regex below is written from the shapes trainers print (`key:number` records, quoted
  dict pairs, tqdm `key=number` postfixes, `wandb: key number` rows, `│ key │ number │`
  cells), not from the parsers, so it checks them rather than repeats them;
- map rate: recovered keys the catalog has decided on: a named metric, or the bounded
  `rl_unmapped_value` fallback chosen on purpose by the vocabulary with a stated reason
  (`Vocabulary.fallback_patterns`: an experimental branch's internals, a key whose meaning
  changed between releases). A deliberate fallback is a decision about a known key, not a miss;
  a key no vocabulary knows is a miss. The target (>= 0.95 per framework and overall) applies
  to this rate;
- named rate, printed next to it and not asserted: recovered keys that reach a named metric,
  deliberate fallbacks counted as not named. The gap between the two is what the catalog
  chose to leave unnamed.

    python -m tests.unit.logs.test_real_corpus     # prints the table, misses and decisions
"""
from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from exporter.catalog import CATALOG, FRAMEWORKS
from exporter.logs import LineAssembler, clean, make_parser

ROOT = Path(__file__).resolve().parents[2] / "data" / "real"
MANIFEST = json.loads((ROOT / "MANIFEST.json").read_text(encoding="utf-8"))
FILES = sorted(MANIFEST)
PARSE_TARGET = 0.99
MAP_TARGET = 0.95
FRAMEWORK_DIRS = ("verl", "trl", "ms_swift", "openrlhf", "slime", "miles", "areal")
CONFIG_FORMATS = ("verl_config", "megatron_args")

# ------------------------------------------------------------------ the loose key finder
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|NaN|Infinity)"
_WRAP = r"(?:(?:np|numpy|torch)\.\w+\()?"
# veRL-style "key:number" segments joined by " - "
_COLON = re.compile(r"(?:^|\s)([A-Za-z_][\w/@.()\-]*):" + _WRAP + r"(" + _NUM + r")\)?(?=\s-\s|\s-?\s*$|$)")
# quoted dict pairs, number or numeric string
_QUOTED = re.compile(r"""(['"])([^'"\n]+?)\1\s*:\s*""" + _WRAP + r"""(['"]?)(""" + _NUM + r""")\3\)?\s*(?=[,}])""")
_NESTED = re.compile(r"""['"]\s*:\s*\{""")
# a dict introduced as settings ("kwargs: {...}", "overriding config {...}") is not metrics
_SETTINGS = re.compile(r"(?i)\b(?:config|kwargs|args|params|arguments)\b[^{]*\{")
# a memory probe (slime/Miles "Memory-Usage after wake_up model: {...}") or a buffer's
# housekeeping report (AReaL "Cleared 448 batch shards. Stats: {'status': 'ok', ...}")
# describes the process, not training; GPU memory comes from NVML, not from logs
_STATE = re.compile(r"Memory-Usage [^{]*: \{|Stats: \{'status'")
# "key=number" inside a tqdm postfix "[..., 2.5s/it, key=number, ...]"
_BRACKET = re.compile(r"\[[^\[\]]*(?:it/s|s/it|\?it/s)[^\[\]]*\]")
_EQ = re.compile(r"(?:^|[\s,\[])([A-Za-z_][\w/.@-]*)=(" + _NUM + r")(?=[,\]])")
_WANDB = re.compile(r"wandb:\s+(\S+)\s+(" + _NUM + r")\s*$")
_NUM_FULL = re.compile(r"^(?:" + _NUM + r")$")
_KEY_CELL = re.compile(r"^[A-Za-z_][^\s]*$")


def loose_keys(line: str) -> list[str]:
    """Metric keys visible in one raw line, by shape alone."""
    keys = []
    if " - " in line or line.rstrip().endswith(" -"):
        # "step" heads the record; "file.py:123 - " is a logging prefix, not a metric
        keys += [k for k, _ in _COLON.findall(line) if k != "step" and not k.endswith(".py")]
    if ":" in line and not _NESTED.search(line) and not _SETTINGS.search(line) \
            and not _STATE.search(line):
        pairs = [m.group(2) for m in _QUOTED.finditer(line)]
        # a dict on one line, or several pairs: one pprint line of a config is not metrics
        if pairs and ("{" in line or len(pairs) > 1):
            keys += pairs
    if "=" in line:
        for seg in _BRACKET.findall(line):
            keys += [k for k, _ in _EQ.findall(seg)]
    if "wandb:" in line:
        m = _WANDB.search(line)
        if m:
            keys.append(m.group(1))
    if "│" in line:
        cells = [c.strip() for c in line.split("│")]
        i = 0
        while i < len(cells) - 1:
            if _KEY_CELL.match(cells[i]) and _NUM_FULL.match(cells[i + 1]):
                keys.append(cells[i])
                i += 2
            else:
                i += 1
    return list(dict.fromkeys(keys))  # a key printed twice in one record is one key


# ------------------------------------------------------------------ what parse recovers
def parse_file(path: Path):
    """(frames as (format, framework, data)) read like `rl-exporter parse FILE`."""
    parser = make_parser("auto")
    asm = LineAssembler()
    out = []
    text = path.read_text(encoding="utf-8", errors="replace")
    for line in text.split("\n"):
        body = asm.feed(clean(line.rstrip("\r")))
        got = parser.feed(body) if body is not None else []
        out += zip(parser.formats, parser.frameworks, [f.data for f in got])
    got = parser.flush()
    out += zip(parser.formats, parser.frameworks, [f.data for f in got])
    return out, text


def _vocab(fw: str, fmt: str, corpus_dir: str) -> str:
    # slime and Miles print the same line shape; the user names which one (--framework miles)
    if fmt in ("slime", "miles") and corpus_dir in ("slime", "miles"):
        return corpus_dir
    # every parser names a catalog vocabulary (ms-swift lines: "swift")
    return fw if fw in FRAMEWORKS else "auto"


@lru_cache(maxsize=None)
def score_file(rel: str):
    frames, text = parse_file(ROOT / rel)
    expected = Counter()
    for line in text.split("\n"):
        expected.update(loose_keys(line))
    recovered = Counter()
    resolved = {}
    corpus_dir = rel.split("/", 1)[0]
    for fmt, fw, data in frames:
        vocab = _vocab(fw, fmt, corpus_dir)
        for k, v in data.items():
            if isinstance(v, str):
                continue
            recovered[k] += 1
            if k not in resolved:
                resolved[k] = CATALOG.resolve(k, vocab)
    matched = Counter({k: min(n, recovered[k]) for k, n in expected.items()})
    unmapped = Counter({k: n for k, n in matched.items()
                        if n and resolved[k].fallback and not resolved[k].deliberate})
    deliberate = Counter({k: n for k, n in matched.items()
                          if n and resolved[k].fallback and resolved[k].deliberate})
    formats = Counter(fmt for fmt, _, _ in frames)
    return {"expected": sum(expected.values()), "matched": sum(matched.values()),
            "missing": +(expected - recovered), "unmapped": unmapped, "deliberate": deliberate,
            "resolved": {k: resolved[k] for k in deliberate},
            "frames": len(frames), "formats": formats}


def table():
    rows = {}
    for rel in FILES:
        fw = rel.split("/", 1)[0]
        s = score_file(rel)
        r = rows.setdefault(fw, {"files": 0, "expected": 0, "matched": 0, "unmapped": Counter(),
                                 "deliberate": Counter(), "formats": set()})
        r["files"] += 1
        r["expected"] += s["expected"]
        r["matched"] += s["matched"]
        r["unmapped"] += s["unmapped"]
        r["deliberate"] += s["deliberate"]
        r["formats"] |= set(s["formats"])
    return rows


def _rates(r):
    """(parse rate, map rate, named rate) of one row."""
    parse = r["matched"] / r["expected"] if r["expected"] else 1.0
    unm = sum(r["unmapped"].values())
    dlb = sum(r["deliberate"].values())
    mapped = 1 - unm / r["matched"] if r["matched"] else 1.0
    named = 1 - (unm + dlb) / r["matched"] if r["matched"] else 1.0
    return parse, mapped, named


def _overall(rows):
    tot = {"expected": 0, "matched": 0, "unmapped": Counter(), "deliberate": Counter()}
    for r in rows.values():
        tot["expected"] += r["expected"]
        tot["matched"] += r["matched"]
        tot["unmapped"] += r["unmapped"]
        tot["deliberate"] += r["deliberate"]
    return tot


def _unmapped_summary() -> str:
    rows = table()
    parts = []
    for fw, r in sorted(rows.items()):
        if r["unmapped"]:
            keys = ", ".join(f"{k}×{n}" for k, n in r["unmapped"].most_common(12))
            more = len(r["unmapped"]) - 12
            parts.append(f"{fw}: {keys}" + (f" (+{more} more)" if more > 0 else ""))
    return "; ".join(parts) or "none"


# ------------------------------------------------------------------ the tests
def test_manifest_names_every_file_with_its_source():
    on_disk = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                     and p.name != "MANIFEST.json")
    assert on_disk == FILES
    for rel, meta in MANIFEST.items():
        assert rel.split("/", 1)[0] in FRAMEWORK_DIRS, rel
        assert meta["source"].startswith("https://"), rel
        assert meta["format"], rel
        assert "release" in meta, rel


def test_corpus_covers_every_framework():
    per = Counter(rel.split("/", 1)[0] for rel in FILES)
    assert len(FILES) >= 50, per
    assert set(per) == set(FRAMEWORK_DIRS), per


@pytest.mark.parametrize("rel", FILES)
def test_each_file_yields_frames(rel):
    s = score_file(rel)
    assert s["frames"] > 0, f"{rel}: no frames ({s['expected']} keys visible)"
    if MANIFEST[rel]["format"] not in CONFIG_FORMATS:  # a start-up config print holds no metrics
        assert s["expected"] > 0, f"{rel}: the loose regex sees no keys: not a metrics excerpt"


PRESENT = sorted({rel.split("/", 1)[0] for rel in FILES})


@pytest.mark.parametrize("fw", PRESENT)
def test_parse_rate(fw):
    r = table()[fw]
    parse = _rates(r)[0]
    missing = Counter()
    for rel in FILES:
        if rel.startswith(fw + "/"):
            missing += score_file(rel)["missing"]
    assert parse >= PARSE_TARGET, (fw, round(parse, 4), missing.most_common(20))


def test_parse_rate_overall():
    parse = _rates(_overall(table()))[0]
    assert parse >= PARSE_TARGET, parse


@pytest.mark.parametrize("fw", PRESENT)
def test_map_rate(fw):
    mapped = _rates(table()[fw])[1]
    assert mapped >= MAP_TARGET, (fw, round(mapped, 4), _unmapped_summary())


def test_map_rate_overall():
    mapped = _rates(_overall(table()))[1]
    assert mapped >= MAP_TARGET, (round(mapped, 4), _unmapped_summary())


def test_deliberate_fallbacks_state_their_reason():
    """A key left on the fallback on purpose counts as decided only with the vocabulary's why."""
    for rel in FILES:
        for key, r in score_file(rel)["resolved"].items():
            assert r.deliberate and r.reason.startswith("left on rl_unmapped_value by "), (rel, key)
            assert len(r.reason.split(": ", 1)[-1]) > 20, (rel, key, r.reason)


if __name__ == "__main__":
    rows = table()
    print(f"{'framework':10} {'files':>5} {'keys':>6} {'parse':>7} {'map':>7} {'named':>7}  formats")
    for fw in FRAMEWORK_DIRS:
        r = rows.get(fw)
        if not r:
            print(f"{fw:10} {0:>5}")
            continue
        p, m, n = _rates(r)
        print(f"{fw:10} {r['files']:>5} {r['expected']:>6} {p:>7.4f} {m:>7.4f} {n:>7.4f}  "
              f"{', '.join(sorted(r['formats']))}")
    tot = _overall(rows)
    p, m, n = _rates(tot)
    print(f"{'overall':10} {len(FILES):>5} {tot['expected']:>6} {p:>7.4f} {m:>7.4f} {n:>7.4f}")
    print()
    for fw in FRAMEWORK_DIRS:
        r = rows.get(fw)
        if r and r["unmapped"]:
            print(f"unmapped {fw}: " + ", ".join(f"{k}×{n}" for k, n in r["unmapped"].most_common()))
    for fw in FRAMEWORK_DIRS:
        r = rows.get(fw)
        if r and r["deliberate"]:
            print(f"deliberate fallback {fw}: "
                  + ", ".join(f"{k}×{n}" for k, n in r["deliberate"].most_common()))
    for rel in FILES:
        s = score_file(rel)
        if s["missing"]:
            print(f"missing {rel}: {dict(s['missing'])}")
