#!/usr/bin/env python3
"""The corpus of whole public runs (tests/data/runs/) and doctor's verdict on each.

    python3 scripts/runs_corpus.py sync SRC            # copy the runs verbatim from SRC/<framework>/,
                                                       # merge their MANIFESTs
    python3 scripts/runs_corpus.py table               # doctor every run, rewrite the table in
                                                       # docs/postmortem.md
    python3 scripts/runs_corpus.py check               # exit 1 unless docs/postmortem.md is current

Each MANIFEST entry keeps the fields its collector wrote (source, framework, release, format,
steps, source_says, label "healthy" or "failed:<kind>[+<kind>...]", label_basis, tool_notes) and
may carry `onset_step` (the labelled onset) and `argued` (why a warning on a healthy run is fair,
from the sources' ranges). tests/integration/test_doctor_runs.py asserts the verdicts.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "tests" / "data" / "runs"
MANIFEST = RUNS / "MANIFEST.json"
ARGUED = RUNS / "ARGUED.json"   # rel -> the argument for a warning kept on a healthy run
DOC = REPO / "docs" / "postmortem.md"
BEGIN = "<!-- runs-table:begin (scripts/runs_corpus.py table) -->"
END = "<!-- runs-table:end -->"

# label kind -> the findings that say it (confirmed alerts or point findings). Declared once.
KINDS = {
    "reward_collapse": {"RLRewardCollapse", "RLRewardDeclining", "RLNoInformativeGroups",
                        "RLPointNoRewardVariance", "RLRewardAllZero", "RLRewardConstant"},
    "entropy_collapse": {"RLEntropyCollapse", "RLPointEntropyZero", "RLEntropyAtZero"},
    "grad_explosion": {"RLGradNormExplosion", "RLKLSingleTokenDominates",
                       "RLPointNonFiniteGradNorm", "RLNonFiniteGradSkipped",
                       "RLGradNormFarAboveClip", "RLPointGradNormFarAboveClip"},
    "length_explosion": {"RLResponseTruncationHigh", "RLResponseLengthRunaway", "RLPointTruncationHigh"},
    "truncation": {"RLResponseTruncationHigh", "RLResponseLengthRunaway", "RLPointTruncationHigh"},
    "no_signal": {"RLNoInformativeGroups", "RLGradNormZero", "RLPointNoRewardVariance",
                  "RLPointGradNormZero", "RLRewardAllZero", "RLRewardAllAtMax", "RLRewardConstant"},
    "reward_stuck": {"RLNoInformativeGroups", "RLGradNormZero", "RLPointNoRewardVariance",
                     "RLPointGradNormZero", "RLRewardCollapse", "RLRewardAllZero",
                     "RLRewardAllAtMax", "RLRewardConstant"},
    "nan": {"RLNonFiniteLoss", "RLPointNonFiniteLoss", "RLNonFiniteGradSkipped",
            "RLPointNonFiniteGradNorm", "RLOptimizerNonFiniteSkips"},
    "kl_blowup": {"RLReferenceKLRunaway", "RLPolicyKLSpike", "RLPointPolicyKLHigh",
                  "RLKLSingleTokenDominates", "RLPointReferenceKLHigh"},
    "crash": {"RLRunStalled", "RLRunCrashed"},
    "hang": {"RLRunStalled"},
}
# labelled failures doctor does not find today, and warnings it raises today on runs labelled
# healthy that no source range supports (false alarms), each with the reason (the test expects
# them to fail: it says so the day they are judged right)
MISSES: dict[str, str] = {}
ONSET_TOLERANCE = 20  # steps after the labelled onset within which its alert must fire
SERIOUS = ("warning", "critical")


def load() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8")) if MANIFEST.exists() else {}


def kinds(label: str) -> list[str]:
    return [] if label == "healthy" else label.split(":", 1)[1].split("+")


# ------------------------------------------------------------------ sync
def sync(src: str) -> int:
    """Copy every run under SRC/<framework>/ verbatim, with one merged MANIFEST."""
    merged = {}
    for man in sorted(Path(src).glob("*/MANIFEST.json")):
        fw_dir = man.parent
        entries = json.loads(man.read_text(encoding="utf-8"))
        for rel, entry in entries.items():
            merged[f"{fw_dir.name}/{rel}"] = entry
        dest = RUNS / fw_dir.name
        # the runs the MANIFEST names, and the release key lists mined from them
        for p in [fw_dir / rel for rel in entries] + sorted(fw_dir.glob("KEYS-*.txt")):
            if p.is_file():
                out = dest / p.relative_to(fw_dir)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, out)
    argued = json.loads(ARGUED.read_text(encoding="utf-8")) if ARGUED.exists() else {}
    for rel, why in argued.items():
        if rel in merged:
            merged[rel]["argued"] = why
    missing = [rel for rel in merged if not (RUNS / rel).is_file()]
    if missing:
        print(f"MANIFEST names files that are not there: {missing}", file=sys.stderr)
        return 1
    MANIFEST.write_text(json.dumps(merged, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(merged)} runs in {MANIFEST.relative_to(REPO)}")
    return 0


# ------------------------------------------------------------------ doctor on one run
def doctor_rows(rel: str) -> list[dict]:
    """doctor --json on one run, in process: its rows."""
    from exporter.postmortem import report
    from exporter.postmortem.doctor import doctor
    name = rel.replace("/", "_").rsplit(".", 1)[0]
    out = doctor([str(RUNS / rel)], run=name[:100])
    return [json.loads(line) for line in report.json_lines(out.backfill, out.evaluation).splitlines()]


def verdict(entry: dict, rows: list[dict]) -> dict:
    """What doctor said against the label: ok, and why not."""
    found = [r for r in rows if r.get("alert")]
    first: dict = {}
    for r in found:
        key = r["alert"]
        if key not in first or (r.get("step") is not None and first[key] is not None
                                and r["step"] < first[key]):
            first[key] = r.get("step")
    serious = sorted({r["alert"] for r in found if r["severity"] in SERIOUS})
    problems = []
    if entry["label"] == "healthy":
        if serious and not entry.get("argued"):
            problems.append(f"healthy run raised {', '.join(serious)}")
    else:
        onset = entry.get("onset_step")
        for kind in kinds(entry["label"]):
            want = KINDS.get(kind)
            if want is None:
                problems.append(f"label kind {kind!r} has no alert mapping")
                continue
            # a warning or critical finding: an info observation does not say "failed"
            hits = [(a, s) for a, s in first.items() if a in want and a in serious]
            if not hits:
                problems.append(f"{kind}: none of {sorted(want)} raised")
            elif onset is not None and all(s is None or s > onset + ONSET_TOLERANCE for _, s in hits):
                problems.append(f"{kind}: first raised after step {onset} + {ONSET_TOLERANCE}")
    steps = next((r.get("steps") for r in rows if r.get("alert") is None), None)
    lead = min((r for r in found if r["severity"] in SERIOUS),
               key=lambda r: (r.get("step") is None, r.get("step") or 0), default=None)
    evidence = [] if lead is None else [f"{lead['alert']}: {e['check']}: {e['answer']}"
                                        for e in lead.get("evidence", [])[:2]]
    return {"first": first, "serious": serious, "problems": problems, "steps": steps,
            "evidence": evidence}


# ------------------------------------------------------------------ the table
def _release(entry) -> str:
    r = str(entry.get("release", ""))
    return r.split(" (", 1)[0].split(";", 1)[0][:40]


def _cell(text: str) -> str:
    """Evidence as a table cell: one line, no pipe."""
    return text.replace("|", "/").replace("\n", " ")


def render(results: dict, manifest: dict) -> str:
    lines = [BEGIN, "",
             "| run | framework | release | steps | label | doctor: alerts (first step) | "
             "evidence (the first warning's first checks) | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for rel, res in results.items():
        e = manifest[rel]
        alerts = ", ".join(f"{a} ({s}{'' if a in res['serious'] else ', info'})"
                           for a, s in sorted(res["first"].items(),
                                              key=lambda kv: (kv[1] is None, kv[1] or 0)))
        ok = "ok" if not res["problems"] else "MISS: " + "; ".join(res["problems"])
        if res["problems"] and rel in MISSES:
            ok = ("known false alarm: " if e["label"] == "healthy" else "known miss: ") + MISSES[rel]
        if e.get("argued") and res["serious"]:
            ok += " (argued)"
        ev = "<br>".join(_cell(x) for x in res.get("evidence", [])) or "-"
        lines.append(f"| `{rel}` | {e.get('framework', rel.split('/')[0])} | {_release(e)} | "
                     f"{e.get('steps', '')} | {e['label']} | {alerts or 'none'} | {ev} | {ok} |")
    lines += ["", END]
    return "\n".join(lines)


def table(write: bool = True) -> int:
    manifest = load()
    results = {}
    t0 = time.perf_counter()
    for rel in sorted(manifest):
        results[rel] = verdict(manifest[rel], doctor_rows(rel))
        print(f"{time.perf_counter() - t0:7.1f}s  {rel}: {results[rel]['problems'] or 'ok'}",
              file=sys.stderr)
    block = render(results, manifest)
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN in doc:
        a, b = doc.index(BEGIN), doc.index(END) + len(END)
        new = doc[:a] + block + doc[b:]
    else:
        new = doc.rstrip("\n") + "\n\n## Whole public runs\n\n" + block + "\n"
    if write:
        DOC.write_text(new, encoding="utf-8")
    return 0 if new == doc or write else 1


def current_block() -> str | None:
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN not in doc:
        return None
    return doc[doc.index(BEGIN):doc.index(END) + len(END)]


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("PYTHONPATH", str(REPO))
    verb = sys.argv[1] if len(sys.argv) > 1 else "table"
    if verb == "sync":
        if len(sys.argv) < 3:
            sys.exit("usage: runs_corpus.py sync SRC (a folder of <framework>/ folders, each with a MANIFEST.json)")
        sys.exit(sync(sys.argv[2]))
    if verb == "table":
        sys.exit(table(write=True))
    if verb == "check":
        sys.exit(table(write=False))
    print(__doc__)
    sys.exit(2)
