"""rl-exporter parse FILE... [--format auto|NAME] [--json]"""
from __future__ import annotations

import json
import sys

HELP = ("parse trainer logs and show each frame: step, format, raw key/values and the "
        "canonical series each key becomes (or why it falls back)")


def add_arguments(p):
    from ..logs.registry import names
    p.add_argument("files", nargs="+", metavar="FILE", help="log files ('-' for stdin)")
    p.add_argument("--format", default="auto",
                   help=f"auto (detect each line's format; default) or a format (aliases in "
                        f"parentheses): {names()}")
    p.add_argument("--framework", default=None,
                   help="vocabulary to resolve keys with (default: the format's framework)")
    p.add_argument("--json", action="store_true", help="one JSON object per frame per line")
    p.add_argument("--summary", action="store_true",
                   help="only what did not map, per file: each key that fell back to "
                        "rl_unmapped_value or is ignored, with why and in how many frames "
                        "(\"why doesn't my metric show up?\"); with --json one object per file")


def _open(path):
    if path == "-":
        return sys.stdin
    return open(path, encoding="utf-8", errors="replace", newline="\n")


def _jsonable(v):
    from ..logs.spool import encode_value
    return encode_value(v)


def run(args) -> int:
    from ..catalog import CATALOG, FRAMEWORK_ALIASES, FRAMEWORKS
    from ..logs import canonical_format, clean, near_miss, read_text
    try:
        fmt_arg = canonical_format(args.format)
    except ValueError as e:
        print(f"rl-exporter parse: {e}", file=sys.stderr)
        return 2
    if args.framework:
        args.framework = FRAMEWORK_ALIASES.get(args.framework, args.framework)
    if args.framework and args.framework not in ("auto",) + FRAMEWORKS:
        print(f"rl-exporter parse: unknown framework {args.framework!r}", file=sys.stderr)
        return 2
    status = 0
    total = 0
    for path in args.files:
        try:
            with _open(path) as fh:
                text = fh.read()
        except OSError as e:
            print(f"rl-exporter parse: {path}: {e}", file=sys.stderr)
            status = 1
            continue
        reader, reads = read_text(text, fmt_arg, path=None if path == "-" else path)
        fmt = reader.format
        rejected, skipped = reader.rejected, reader.skipped
        if not reads and not text.strip():
            print(f"rl-exporter parse: {path}: the file is empty"
                  + (" (blank lines only)" if text else ""), file=sys.stderr)
            status = 1
            continue
        if not reads and fmt_arg == "auto":
            hint = near_miss(clean(line) for line in text.split("\n"))
            msg = f"rl-exporter parse: {path}: no known metrics format found"
            if hint:
                near_fmt, near_no, near_line = hint
                msg += (f"; closest: {near_fmt}, line {near_no}: {near_line.strip()[:160]!r} "
                        f"(not in the {near_fmt} shape; try --format {near_fmt})")
            else:
                msg += " (try --format NAME)"
            print(msg, file=sys.stderr)
            status = 1
            continue
        cache: dict = {}
        ours = _ours()
        formats: dict = {}
        seen: dict = {}   # (key, framework) -> [frames, first value]: --summary
        for line_no, fr, fr_fmt, fr_fw, _starts in reads:
            total += 1
            formats[fr_fmt] = formats.get(fr_fmt, 0) + 1
            framework = args.framework or fr_fw  # a spool's: its records' (SpoolParser)
            series = {}
            for k in fr.data:
                if k in ours:
                    continue
                r = cache.get((k, framework))
                if r is None:
                    r = cache[(k, framework)] = CATALOG.resolve(k, framework)
                series[k] = r
                if args.summary:
                    seen.setdefault((k, framework), [0, fr.data[k]])[0] += 1
            if args.summary:
                continue
            if args.json:
                print(json.dumps({
                    "file": path, "line": line_no, "format": fr_fmt, "framework": framework,
                    "step": fr.step, "data": {k: _jsonable(v) for k, v in fr.data.items()},
                    "series": {k: _series(r) for k, r in series.items()}},
                    ensure_ascii=False, allow_nan=False))
            else:
                where = f"{path}:{line_no}" if line_no else path
                print(f"{where} step={fr.step} format={fr_fmt} framework={framework}")
                for k, v in fr.data.items():
                    print(f"  {k} = {v!r} -> {ours[k](v) if k in ours else _describe(series[k])}")
        summary = {"file": path, "format": fmt, "frames": len(reads), "formats": formats,
                   "rejected": dict(rejected), "skipped_lines": skipped}
        if args.summary:
            _print_unmapped(path, seen, cache, summary, args.json)
        print(("rl-exporter parse: " + json.dumps(summary)), file=sys.stderr)
    if total == 0 and status == 0:
        status = 1
    return status


def _print_unmapped(path: str, seen: dict, cache: dict, summary: dict, as_json: bool) -> None:
    """--summary: the keys that did not map to a catalog series (fallback or ignored), the
    lines no parser took, and how many keys did map."""
    missed = sorted(((k, fw, n, v, cache[(k, fw)]) for (k, fw), (n, v) in seen.items()
                     if cache[(k, fw)].fallback or cache[(k, fw)].ignored), key=lambda x: (-x[2], x[0]))
    mapped = len(seen) - len(missed)
    if as_json:
        print(json.dumps({"file": path, "frames": summary["frames"], "formats": summary["formats"],
                          "keys": len(seen), "mapped": mapped,
                          "unmapped": [{"key": k, "framework": fw, "frames": n,
                                        "example": _jsonable(v), "series": _series(r)}
                                       for k, fw, n, v, r in missed],
                          "rejected": summary["rejected"]}, ensure_ascii=False, allow_nan=False))
        return
    fmts = ", ".join(f"{f} {n}" for f, n in summary["formats"].items())
    print(f"{path}: {summary['frames']} frames ({fmts}); {len(seen)} keys, {mapped} mapped to "
          f"catalog series, {len(missed)} did not" + (":" if missed else ""))
    width = max((len(k) for k, *_ in missed), default=0)
    for k, fw, n, v, r in missed:
        example = f"{v:.4g}" if isinstance(v, float) else repr(v)[:24]
        print(f"  {k:<{width}}  {n:>5} frames  e.g. {example:<10} -> {_describe(r)}")
    rejected = {k: n for k, n in summary["rejected"].items() if n}
    if rejected:
        print("  lines no parser took: " + ", ".join(f"{n} {k}" for k, n in sorted(rejected.items())))



def _ours() -> dict:
    """The keys a spool's own records become (no trainer logs them), and what the worker
    makes of each."""
    from ..core.lifecycle import EVENT
    from ..spool import SETTINGS_KEY
    return {
        EVENT: lambda v: f"rl_run_state  [a lifecycle event: the run {v}]",
        SETTINGS_KEY: lambda v: ", ".join(f'rl_config_value{{parameter="{p}"}}' for p in v)
        + "  [the run's settings record]",
    }


def _series(r) -> dict:
    d = r.as_dict()
    return {"metric": d["metric"], "labels": d["labels"], "fallback": d["fallback"],
            "ignored": d["ignored"], "step": d["step"], "scale": d["scale"], "reason": d["reason"]}


def _describe(r) -> str:
    if r.ignored:
        return f"ignored ({r.reason})"
    labels = ",".join(f'{k}="{v}"' for k, v in r.labels)
    target = f"{r.metric.name}{{{labels}}}" if labels else r.metric.name
    if r.fallback:
        return f"{target}  [FALLBACK: {r.reason}]"
    scale = f" x{r.scale:g}" if r.scale != 1 else ""
    return f"{target}{scale}  [{r.reason}]"
