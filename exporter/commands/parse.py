"""rl-exporter parse FILE... [--format auto|NAME] [--json]"""
from __future__ import annotations

import json
import sys

HELP = ("parse trainer logs and show each frame: step, format, raw key/values and the "
        "canonical series each key becomes (or why it falls back)")


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE", help="log files ('-' for stdin)")
    p.add_argument("--format", default="auto",
                   help="auto (detect; default), verl_console, verl_jsonl, hf, hf_state, openrlhf, "
                        "slime, miles, areal, spool")
    p.add_argument("--framework", default=None,
                   help="vocabulary to resolve keys with (default: the format's framework)")
    p.add_argument("--json", action="store_true", help="one JSON object per frame per line")


def _open(path):
    if path == "-":
        return sys.stdin
    return open(path, encoding="utf-8", errors="replace", newline="\n")


def _jsonable(v):
    from ..sources.spool import encode_value
    return encode_value(v)


def run(args) -> int:
    from ..catalog import CATALOG, FRAMEWORKS
    from ..sources import (DOCUMENT_FORMATS, LineAssembler, canonical_format, clean, detect,
                           make_parser)
    try:
        fmt_arg = canonical_format(args.format)
    except ValueError as e:
        print(f"rl-exporter parse: {e}", file=sys.stderr)
        return 2
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
        lines = text.split("\n")
        fmt = fmt_arg
        if fmt == "auto":
            fmt = detect(lines[:2000], path=path) or detect(lines, path=path)
            if fmt is None:
                print(f"rl-exporter parse: {path}: no known metrics format found "
                      "(try --format NAME)", file=sys.stderr)
                status = 1
                continue
        parser = make_parser(fmt)
        if fmt in DOCUMENT_FORMATS:
            frames = [(None, f) for f in parser.feed_document(text)]
            rejected, skipped = parser.rejected, parser.skipped
        else:
            frames = []
            asm = LineAssembler()
            n, open_line = 0, 0
            for n, line in enumerate(lines[:-1] if text.endswith("\n") else lines, 1):
                was_open = parser.pending or asm.pending
                body = asm.feed(clean(line.rstrip("\r")))
                got = parser.feed(body) if body is not None else []
                if got:  # frames of the record opened at open_line (or this line)
                    frames.extend((open_line if was_open else n, f) for f in got)
                if (parser.pending or asm.pending) and (got or not was_open):
                    open_line = n
            frames.extend((open_line, f) for f in parser.flush())
            rejected, skipped = parser.rejected, parser.skipped
        framework = args.framework or _framework(fmt, text)
        cache: dict = {}
        for line_no, fr in frames:
            total += 1
            series = {}
            for k in fr.data:
                r = cache.get(k)
                if r is None:
                    r = cache[k] = CATALOG.resolve(k, framework)
                series[k] = r
            if args.json:
                print(json.dumps({
                    "file": path, "line": line_no, "format": fmt, "framework": framework,
                    "step": fr.step, "data": {k: _jsonable(v) for k, v in fr.data.items()},
                    "series": {k: _series(r) for k, r in series.items()}},
                    ensure_ascii=False, allow_nan=False))
            else:
                where = f"{path}:{line_no}" if line_no else path
                print(f"{where} step={fr.step} format={fmt} framework={framework}")
                for k, v in fr.data.items():
                    print(f"  {k} = {v!r} -> {_describe(series[k])}")
        summary = {"file": path, "format": fmt, "frames": len(frames),
                   "rejected": dict(rejected), "skipped_lines": skipped}
        print(("rl-exporter parse: " + json.dumps(summary)), file=sys.stderr)
    if total == 0 and status == 0:
        status = 1
    return status


def _framework(fmt: str, text: str) -> str:
    from ..sources import FORMATS
    fw = FORMATS[fmt].framework
    if fw == "auto" and fmt == "spool":
        for line in text.split("\n", 50)[:50]:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("framework"), str):
                return rec["framework"]
    return fw


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
