"""rl-exporter explain KEY... [--framework F] [--release R] [--json]"""
from __future__ import annotations

import json

HELP = "say which canonical series each raw key becomes, with which labels, and why"


def add_arguments(p):
    p.add_argument("keys", nargs="+", metavar="KEY")
    p.add_argument("--framework", default="auto",
                   help="vocabulary to use (default auto: try each in turn)")
    p.add_argument("--release", metavar="R",
                   help="also say whether that release of the framework emitted the key "
                        "(e.g. 0.2 or v0.4.1; needs --framework)")
    p.add_argument("--json", action="store_true", help="one JSON object per key per line")


def release_answer(catalog, framework: str, key: str, release: str) -> dict:
    """emitted: True/False, or None where that release was not mined; releases: where it was."""
    rel = catalog.releases
    ranges = rel.ranges(framework, key)
    return {"release": release, "emitted": rel.emitted_in(framework, key, release),
            "releases": rel.describe(framework, ranges),
            "mined_releases": rel.tags(framework)}


def run(args) -> int:
    from ..catalog import CATALOG, FRAMEWORK_ALIASES, FRAMEWORKS
    framework = FRAMEWORK_ALIASES.get(args.framework, args.framework)
    if framework not in ("auto",) + FRAMEWORKS:
        print(f"unknown framework {args.framework!r}; known: auto, {', '.join(FRAMEWORKS)}")
        return 2
    if args.release and framework == "auto":
        print("--release needs --framework")
        return 2
    if args.release and not CATALOG.releases.release_indices(framework, args.release):
        tags = CATALOG.releases.tags(framework)
        print(f"no mined release {args.release!r} of {framework}; mined: "
              + (", ".join(tags) if tags else "none"))
        return 2
    for key in args.keys:
        r = CATALOG.resolve(key, framework)
        rel = release_answer(CATALOG, framework, key, args.release) if args.release else None
        if args.json:
            d = r.as_dict()
            if rel is not None:
                d.update(rel)
            print(json.dumps(d, ensure_ascii=False))
            continue
        note = ""
        if rel is not None:
            where = f"emitted in {rel['releases']}" if rel["releases"] else "in no mined release"
            note = (f"  ({framework} {args.release} emits it)" if rel["emitted"] else
                    f"  (NOT emitted by {framework} {args.release}: {where})")
        if r.ignored:
            print(f"{key}: ignored ({r.reason}){note}")
            continue
        labels = ",".join(f'{k}="{v}"' for k, v in r.labels)
        target = f"{r.metric.name}{{{labels}}}" if labels else r.metric.name
        extra = f" x{r.scale:g}" if r.scale != 1 else ""
        print(f"{key} -> {target}{extra}  [{r.framework}; agg={r.agg}; {r.reason}]{note}")
    return 0
