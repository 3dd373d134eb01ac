"""rl-exporter serve --source FORMAT:PATH ... : the sidecar."""
from __future__ import annotations

import ipaddress
import logging
import os
import signal
import sys
import threading

from ..core.endpoint import DEFAULT_PORT
from . import add_listen, port_number

HELP = ("follow an unmodified trainer's logs (tail -F, exactly once across restarts) and serve "
        "the same canonical series the hook exports; optional POST /ingest")
log = logging.getLogger("rl_exporter.serve")
TOKEN_ENV = "RL_EXPORTER_INGEST_TOKEN"


def add_arguments(p):
    from ..logs.registry import known
    p.add_argument("--source", action="append", default=[], metavar="FORMAT:PATH[,run=RUN]",
                   help=f"a log to follow (repeatable; PATH may be a glob). FORMAT (aliases in "
                        f"parentheses): {known()}")
    p.add_argument("--run", default=None,
                   help="run label (default: $RL_EXPORTER_RUN or run-<date>); ',run=' on a "
                        "--source overrides it for that source")
    p.add_argument("--algorithm", default=None, help="rl_run_info algorithm label")
    p.add_argument("--model", default=None, help="rl_run_info model label")
    add_listen(p)
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0 = any)")
    p.add_argument("--bind-wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait up to this long for a port in use to be freed (a previous serve "
                        "still stopping), saying so at once (default 0: fail at once)")
    p.add_argument("--state-file", default=None,
                   help="where to checkpoint each file's identity and offset (put it on the same "
                        "volume as the logs); without it a restart re-reads every file")
    p.add_argument("--poll-interval", type=float, default=0.25,
                   help="seconds between looks at idle files (default 0.25)")
    p.add_argument("--checkpoint-interval", type=float, default=1.0,
                   help="seconds between state-file writes (default 1)")
    p.add_argument("--idle-flush", type=float, default=0.5,
                   help="seconds an open multi-line record may wait for its continuation (default 0.5)")
    p.add_argument("--crash-quiet", type=float, default=60.0,
                   help="seconds a log ending in a bare traceback must stay quiet before the "
                        "run reads as crashed (a marker, a kill or a job error: at once; "
                        "default 60)")
    p.add_argument("--max-line-bytes", type=int, default=1 << 20,  # logs.read.MAX_LINE_BYTES
                   help="longer lines are skipped and counted (default 1 MiB, the cap doctor "
                        "and backfill apply too)")
    p.add_argument("--spool-out", default=None,
                   help="also append every frame to this spool JSONL (replayable with "
                        "`--source spool:PATH`; keeps frames exactly once across crashes)")
    p.add_argument("--ingest", action="store_true", help="enable POST /ingest (off by default)")
    p.add_argument("--ingest-token-file", default=None,
                   help=f"file holding the bearer token for /ingest (or set ${TOKEN_ENV}); "
                        "required when --listen is not a loopback address")
    p.add_argument("--ingest-max-bytes", type=int, default=1 << 20,
                   help="largest /ingest body accepted (default 1 MiB; larger gets 413)")
    p.add_argument("--ingest-framework", default="auto",
                   help="vocabulary of the keys pushed to /ingest (default auto)")
    p.add_argument("--otlp-endpoint", default=None, help="also push OTLP http/protobuf here")
    p.add_argument("--gpu", default="auto", choices=["auto", "on", "off", "local"],
                   help="NVML GPU sampling (default auto: on when a driver is visible)")
    p.add_argument("--gpu-interval", type=float, default=5.0, help="seconds between GPU samples")
    p.add_argument("--pid", type=int, default=None,
                   help="the trainer's pid, for a py-spy stack dump when the run stalls (default: "
                        "the process writing a --source file, found in /proc; in Kubernetes the "
                        "pod needs shareProcessNamespace: true)")
    p.add_argument("--py-spy", default="py-spy", metavar="PATH",
                   help="the py-spy executable (default py-spy on PATH)")
    p.add_argument("--no-stack-dumps", action="store_true",
                   help="never run py-spy on a stalled trainer")
    p.add_argument("--exit-when-idle", action="store_true",
                   help="exit once every file is read to its end, a last line without its "
                        "newline included (batch catch-up, benchmarks); exit 1 if no source "
                        "gave a frame (missing, empty, or in no known format)")


def _is_loopback(addr: str) -> bool:
    if addr in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


def _token(args) -> tuple[str | None, str | None]:
    """(token, error)"""
    if args.ingest_token_file:
        try:
            with open(args.ingest_token_file, encoding="utf-8") as f:
                tok = f.read().strip()
        except OSError as e:
            return None, f"cannot read --ingest-token-file: {e}"
        if not tok:
            return None, f"--ingest-token-file {args.ingest_token_file} is empty"
        return tok, None
    tok = os.environ.get(TOKEN_ENV, "").strip()
    return (tok or None), None


def run(args) -> int:
    from ..hook import default_run
    from ..sidecar.sidecar import Sidecar
    from ..sidecar.source import SourceSpec
    run_label = args.run or default_run()
    if not args.source and not args.ingest:
        print("rl-exporter serve: give at least one --source FORMAT:PATH (or --ingest)",
              file=sys.stderr)
        return 2
    try:
        specs = [SourceSpec(s, run_label) for s in args.source]
    except ValueError as e:
        print(f"rl-exporter serve: {e}", file=sys.stderr)
        return 2
    ingest = None
    if args.ingest:
        token, err = _token(args)
        if err:
            print(f"rl-exporter serve: {err}", file=sys.stderr)
            return 2
        if not _is_loopback(args.listen) and token is None:
            print(f"rl-exporter serve: refusing to accept /ingest on {args.listen} without a "
                  f"bearer token: pass --ingest-token-file FILE or set ${TOKEN_ENV} "
                  "(or --listen 127.0.0.1)", file=sys.stderr)
            return 2
        ingest = {"token": token, "max_bytes": args.ingest_max_bytes,
                  "framework": args.ingest_framework}
    kw = {"algorithm": args.algorithm, "model": args.model}
    if args.otlp_endpoint:
        kw["otlp_endpoint"] = args.otlp_endpoint
    try:
        sc = Sidecar(specs, run=run_label, addr=args.listen, port=args.port,
                     state_path=args.state_file, poll_interval=args.poll_interval,
                     checkpoint_interval=args.checkpoint_interval, idle_flush=args.idle_flush,
                     max_line_bytes=args.max_line_bytes, spool_out=args.spool_out,
                     ingest=ingest, exporter_kwargs=kw, gpu=args.gpu,
                     gpu_interval=args.gpu_interval, bind_retry_s=args.bind_wait,
                     crash_quiet=args.crash_quiet,
                     stack_dumps=None if args.no_stack_dumps else {"pid": args.pid,
                                                                   "py_spy": args.py_spy})
    except OSError as e:
        print(f"rl-exporter serve: cannot serve on {args.listen}:{args.port}: {e}", file=sys.stderr)
        return 1
    print(f"rl-exporter serve: scrape {sc.url}"
          + (" (POST /ingest enabled)" if ingest else ""), flush=True)
    if args.state_file is None:
        log.warning("no --state-file: a restart re-reads every file from its start")

    def _term(signum, frame):
        sc.stop()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _term)
    try:
        if args.exit_when_idle:
            sc.run_until_idle()
        else:
            sc.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        sc.close()
    if args.exit_when_idle:
        why = sc.nothing_read()
        for line in why:
            print(f"rl-exporter serve: {line}", file=sys.stderr)
        if why:
            print("rl-exporter serve: no frame read from any source", file=sys.stderr)
            return 1
    return 0
