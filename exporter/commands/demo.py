"""rl-exporter demo: a simulated GRPO run served live."""
from __future__ import annotations

import logging
import os
import sys
import time

from ..core.endpoint import DEFAULT_PORT
from . import add_listen, port_number

HELP = "run a simulated GRPO run and serve its metrics live until Ctrl-C"
log = logging.getLogger("rl_exporter.demo")


def add_arguments(p):
    from ..demo import SCENARIOS
    p.add_argument("--scenario", default="healthy", choices=sorted(SCENARIOS), metavar="SCENARIO",
                   help="failure to simulate from --onset on, one per alert (default healthy): "
                        + ", ".join(sorted(SCENARIOS)))
    p.add_argument("--steps", type=int, default=0,
                   help="steps to simulate, then keep serving (default 0: run forever)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between steps (default 2)")
    p.add_argument("--onset", type=int, default=20, help="step at which the scenario starts (default 20)")
    p.add_argument("--val-every", type=int, default=10, help="validation every N steps (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--run", default=None, help="run label (default demo-<scenario>)")
    p.add_argument("--port", type=port_number, default=None,
                   help=f"port (default {DEFAULT_PORT}; 0 = any); the engine and ranks a scenario "
                        "serves beside it, and with --runs every rank, take the next ports "
                        "(default with --runs: any free ports)")
    add_listen(p)
    p.add_argument("--otlp-endpoint", default=None,
                   help="also push OTLP http/protobuf here (or set OTEL_EXPORTER_OTLP_ENDPOINT)")
    p.add_argument("--exit-after", action="store_true", help="exit after --steps instead of serving on")
    p.add_argument("--start-on-scrape", action="store_true",
                   help="hold step 1 until the first scrape of /metrics, so a Prometheus started "
                        "after the demo still sees the run's healthy start before --onset")
    p.add_argument("--spool", default=None, metavar="PATH",
                   help="also append every frame to this spool JSONL (for `rl-exporter doctor`)")
    p.add_argument("--scrape-config", default=None, metavar="FILE",
                   help="write how Prometheus scrapes every target the demo serves (the trainer, "
                        "and the engine or other ranks of scenarios that have them): FILE.json "
                        "gets Prometheus file_sd target groups, any other name a scrape_configs "
                        "YAML (fleet: printed when not given)")
    p.add_argument("--scrape-interval", default="15s", help="scrape interval in that config")
    p.add_argument("--scrape-host", default=None, metavar="HOST",
                   help="the host name Prometheus reaches the demo by, in --scrape-config "
                        "(default: the --listen address; 127.0.0.1 for 0.0.0.0)")
    fleet = p.add_argument_group("fleet (many simulated runs and ranks in this one process)")
    fleet.add_argument("--runs", type=int, default=0,
                       help="simulate this many runs (mixed frameworks; mostly healthy, some "
                            "failing, finished, restarting, stalled)")
    fleet.add_argument("--ranks", type=int, default=1, help="ranks (scrape targets) per run (default 1)")
    fleet.add_argument("--gpus", type=int, default=8,
                       help="GPUs per rank, sampled through the fake NVML (default 8; 0 = none)")


PROGRESS_EVERY_S = 30.0   # at most one progress line this often: a teaching aid, not a log flood


def scrape_host(args) -> str:
    if args.scrape_host:
        return args.scrape_host
    return "127.0.0.1" if args.listen in ("0.0.0.0", "", "::") else args.listen


def write_scrape_config(path: str, groups: list[dict], interval: str, job: str) -> None:
    """FILE.json: file_sd target groups; else a scrape_configs YAML with the same groups."""
    import json

    import yaml

    from ..demo.beside import ENGINE_METRIC_RELABEL
    if path.endswith(".json"):
        text = json.dumps(groups, indent=1) + "\n"
    else:
        text = yaml.safe_dump({"scrape_configs": [{
            "job_name": job, "scrape_interval": interval, "static_configs": groups,
            "metric_relabel_configs": ENGINE_METRIC_RELABEL}]}, sort_keys=False)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:  # file_sd readers never see half a file
        f.write(text)
    os.replace(tmp, path)


def first_screen(args, url: str, pathology, beside, scenarios: int) -> list[str]:
    """The demo's first lines: what it is, and the next steps."""
    base = url[: -len("/metrics")]
    pace = f"one step every {args.interval:g} s" if args.interval else "steps as fast as it can"
    out = [f"rl-exporter demo ({args.scenario}): scrape {url}",
           f"  a simulated GRPO run ({pace}); its GPU series are simulated too, no GPU needed"]
    out += beside.lines()
    if pathology.alerts:
        out.append(f"  from step {args.onset}: {pathology.source}")
        out.append(f"  fires {', '.join(pathology.alerts)} in a Prometheus with the shipped rules "
                   "(exporter/rules/rl-exporter.rules.yaml)")
    else:
        out.append(f"  a failing run:   rl-exporter demo --scenario entropy-collapse   "
                   f"({scenarios} scenarios, one per alert: rl-exporter demo --help)")
    out.append(f"  where it is:     rl-exporter status {base}")
    out.append("  dashboards and alerts on this machine: docker compose -f deploy/compose/compose.yaml "
               "up (from a clone; README, \"Local stack\")")
    out.append("  Ctrl-C to stop")
    return out


def progress(step: int, frame: dict | None, scenario: str, onset: int) -> str:
    state = "healthy" if scenario == "healthy" or step < onset else f"{scenario} since step {onset}"
    if frame is None:
        return f"step {step}: {state}; the trainer logs nothing"
    shown = [(name, frame.get(key)) for name, key in (("reward", "critic/score/mean"),
                                                      ("entropy", "actor/entropy"),
                                                      ("grad norm", "actor/grad_norm"))]
    vals = ", ".join(f"{n} {v:.3g}" for n, v in shown if isinstance(v, (int, float)))
    return f"step {step}: {state}" + (f"; {vals}" if vals else "")


def run(args) -> int:
    if args.runs:
        return run_fleet(args)
    if args.port is None:
        args.port = DEFAULT_PORT
    from ..demo import SCENARIOS, SimulatedRun
    from ..demo.beside import Beside
    from ..demo.scenarios import BLOCKING
    from ..hook import Exporter
    sim = SimulatedRun(args.scenario, seed=args.seed, onset=args.onset, val_every=args.val_every,
                       total_steps=args.steps or 300)
    run_label = args.run or f"demo-{args.scenario}"
    # gpu=False: the demo's GPU series are simulated (side series), not this machine's
    ex = Exporter(run=run_label, framework="auto", algorithm="grpo",
                  model="simulated-qwen2.5-3b", serve=False, gpu=False,
                  otlp_endpoint=args.otlp_endpoint, spool=args.spool)
    pathology = SCENARIOS[args.scenario]
    beside = Beside(pathology, run_label, listen=args.listen,
                    port=args.port + 1 if args.port else 0, onset=args.onset, seed=args.seed)
    try:
        url = ex.listen(args.listen, args.port)
        beside.start()
    except (OSError, OverflowError) as e:
        beside.close()
        ex.close()
        where = f"{args.listen}:{args.port}" if ex.url is None else "the next ports"
        print(f"rl-exporter demo: cannot listen on {where}: {e}; pick another with --port, "
              "or --port 0 for any free port", file=sys.stderr)
        return 1
    sim.attach(ex)  # simulated NVML sampler and run-configuration series
    host = scrape_host(args)
    if args.scrape_config:
        trainer = f"{host}:{ex.endpoint.port}"
        write_scrape_config(args.scrape_config, beside.targets(trainer, host), args.scrape_interval,
                            "rl-exporter-demo")
    print("\n".join(first_screen(args, url, pathology, beside, len(SCENARIOS))), flush=True)
    if args.scrape_config:
        print(f"scrape config: {args.scrape_config}", flush=True)
    crashed = False
    try:
        if args.start_on_scrape:
            ex.endpoint.scraped.wait()
        step, said = 0, time.monotonic()
        while not args.steps or step < args.steps:
            step += 1
            frame = sim.frame(step)
            if step == args.onset and pathology.alerts:
                print(f"step {step}: {args.scenario} starts now", flush=True)
            if args.scenario == "crash" and step >= args.onset:
                # the trainer dies as a real one does: an exception nobody catches (the hook's
                # chained excepthook reports it, holds /metrics for one last scrape, and exits)
                crashed = True
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (the demo's "
                                   "crash scenario)")
            if frame is not None:  # the frame's own step: crash-loop resumes at an older one
                ex.log(frame, step=frame.get("training/global_step", step))
            beside.step(step, frame, sim.rng)
            if frame is None and args.scenario in BLOCKING:  # hang: stuck for good inside a phase
                BLOCKING[args.scenario](ex, args.interval)
            if time.monotonic() - said >= PROGRESS_EVERY_S:
                said = time.monotonic()
                print(progress(step, frame, args.scenario, args.onset), flush=True)
            time.sleep(args.interval)
        if not args.exit_after:
            print(f"simulated {step} steps; still serving {url} (Ctrl-C to stop)", flush=True)
            while True:
                time.sleep(3600)
        if pathology.stop:
            # a trainer that stopped stepping does not end of its own: --exit-after stops it
            # from outside, as a person or a scheduler would (SIGTERM), not as a finished run
            ex.lifecycle.crashed("SIGTERM", "stopped after it stopped stepping (the demo's "
                                 f"{args.scenario} scenario, --exit-after)", final=True)
    except KeyboardInterrupt:
        # Ctrl-C (SIGINT) stops the run from outside, as it does a trainer: no finished run
        ex.lifecycle.crashed("KeyboardInterrupt", "stopped by Ctrl-C (SIGINT)", final=True)
    finally:
        beside.close()
        if not crashed:   # a crash is the run's end: close() would call it finished
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
    host = scrape_host(args)
    for t in fleet.targets:
        t.host = host
    config = fleet.scrape_config(interval=args.scrape_interval)
    text = yaml.safe_dump(config, sort_keys=False)
    if args.scrape_config:
        job = config["scrape_configs"][0]
        write_scrape_config(args.scrape_config, [{**g, "labels": {"job": job["job_name"]}}
                                                 for g in job["static_configs"]],
                            args.scrape_interval, job["job_name"])
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
