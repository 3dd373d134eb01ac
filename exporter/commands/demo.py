"""rl-exporter demo: a simulated GRPO run served live."""
from __future__ import annotations

import logging
import sys
import time

from ..core.endpoint import DEFAULT_PORT

HELP = "run a simulated GRPO run and serve its metrics live until Ctrl-C"
log = logging.getLogger("rl_exporter.demo")


def add_arguments(p):
    from ..demo import SCENARIOS
    p.add_argument("--scenario", default="healthy", choices=sorted(SCENARIOS),
                   help="failure to simulate from --onset on (default healthy)")
    p.add_argument("--steps", type=int, default=0,
                   help="steps to simulate, then keep serving (default 0: run forever)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between steps (default 2)")
    p.add_argument("--onset", type=int, default=20, help="step at which the scenario starts (default 20)")
    p.add_argument("--val-every", type=int, default=10, help="validation every N steps (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--run", default=None, help="run label (default demo-<scenario>)")
    p.add_argument("--port", type=int, default=None,
                   help=f"port (default {DEFAULT_PORT}; 0 = any); with --runs the first of consecutive "
                        "ports, one per rank (default: any free ports)")
    p.add_argument("--listen", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--otlp-endpoint", default=None,
                   help="also push OTLP http/protobuf here (or set OTEL_EXPORTER_OTLP_ENDPOINT)")
    p.add_argument("--exit-after", action="store_true", help="exit after --steps instead of serving on")
    p.add_argument("--start-on-scrape", action="store_true",
                   help="hold step 1 until the first scrape of /metrics, so a Prometheus started "
                        "after the demo still sees the run's healthy start before --onset")
    p.add_argument("--spool", default=None, metavar="PATH",
                   help="also append every frame to this spool JSONL (for `rl-exporter doctor`)")
    fleet = p.add_argument_group("fleet (many simulated runs and ranks in this one process)")
    fleet.add_argument("--runs", type=int, default=0,
                       help="simulate this many runs (mixed frameworks; mostly healthy, some "
                            "failing, finished, restarting, stalled)")
    fleet.add_argument("--ranks", type=int, default=1, help="ranks (scrape targets) per run (default 1)")
    fleet.add_argument("--gpus", type=int, default=8,
                       help="GPUs per rank, sampled through the fake NVML (default 8; 0 = none)")
    fleet.add_argument("--scrape-config", default=None,
                       help="write a Prometheus/vmagent scrape config for every target here "
                            "(default: print it)")
    fleet.add_argument("--scrape-interval", default="15s", help="scrape interval in that config")


def run(args) -> int:
    if args.runs:
        return run_fleet(args)
    if args.port is None:
        args.port = DEFAULT_PORT
    from ..demo import SimulatedRun
    from ..demo.scenarios import BLOCKING
    from ..hook import Exporter
    sim = SimulatedRun(args.scenario, seed=args.seed, onset=args.onset, val_every=args.val_every,
                       total_steps=args.steps or 300)
    ex = Exporter(run=args.run or f"demo-{args.scenario}", framework="auto", algorithm="grpo",
                  model="simulated-qwen2.5-3b", port=args.port, addr=args.listen,
                  otlp_endpoint=args.otlp_endpoint, spool=args.spool)
    if ex.url is None:
        ex.close()
        print(f"rl-exporter demo: cannot listen on {args.listen}:{args.port} (in use?); "
              "pick another with --port, or --port 0 for any free port", file=sys.stderr)
        return 1
    sim.attach(ex)  # simulated NVML sampler and run-configuration series
    print(f"rl-exporter demo ({args.scenario}): scrape {ex.url}", flush=True)
    try:
        if args.start_on_scrape:
            ex.endpoint.scraped.wait()
        step = 0
        while not args.steps or step < args.steps:
            step += 1
            frame = sim.frame(step)
            if frame is not None:  # the frame's own step: crash-loop resumes at an older one
                ex.log(frame, step=frame.get("training/global_step", step))
            elif args.scenario in BLOCKING:  # hang: stuck for good inside a phase
                BLOCKING[args.scenario](ex, args.interval)
            time.sleep(args.interval)
        if not args.exit_after:
            print(f"simulated {step} steps; still serving {ex.url} (Ctrl-C to stop)", flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        ex.close()
    return 0


def run_fleet(args) -> int:
    import yaml

    from ..demo.fleet import Fleet
    try:
        fleet = Fleet(args.runs, args.ranks, gpus=args.gpus, seed=args.seed, listen=args.listen,
                      base_port=args.port or 0, onset=min(args.onset, 5))
    except ValueError as e:
        print(f"rl-exporter demo: {e}", file=sys.stderr)
        return 2
    try:
        fleet.start()
    except OSError as e:
        fleet.close()
        print(f"rl-exporter demo: cannot listen on {args.listen} ({e}); pick another --port, "
              "or --port 0 for any free ports", file=sys.stderr)
        return 1
    text = yaml.safe_dump(fleet.scrape_config(interval=args.scrape_interval), sort_keys=False)
    if args.scrape_config:
        with open(args.scrape_config, "w") as f:
            f.write(text)
    kinds = {}
    for r in fleet.runs:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    print(f"rl-exporter demo: {len(fleet.runs)} runs x {args.ranks} ranks = {len(fleet.targets)} "
          f"targets ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})", flush=True)
    if args.scrape_config:
        print(f"scrape config: {args.scrape_config}", flush=True)
    else:
        print(text, end="", flush=True)
    try:
        n = 0
        while not args.steps or n < args.steps:
            time.sleep(args.interval)
            fleet.tick()
            n += 1
        if not args.exit_after:
            print(f"simulated {n} steps; still serving (Ctrl-C to stop)", flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fleet.close()
    return 0
