"""rl-exporter demo: a simulated GRPO run served live."""
from __future__ import annotations

import logging
import sys
import time

from ..endpoint import DEFAULT_PORT

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
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any)")
    p.add_argument("--listen", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--otlp-endpoint", default=None,
                   help="also push OTLP http/protobuf here (or set OTEL_EXPORTER_OTLP_ENDPOINT)")
    p.add_argument("--exit-after", action="store_true", help="exit after --steps instead of serving on")
    p.add_argument("--spool", default=None, metavar="PATH",
                   help="also append every frame to this spool JSONL (for `rl-exporter doctor`)")


def run(args) -> int:
    from ..demo import SimulatedRun
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
        step = 0
        while not args.steps or step < args.steps:
            step += 1
            frame = sim.frame(step)
            if frame is not None:
                ex.log(frame, step=step)
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
