"""``ringcast live``: run a scenario on real node processes (see ``docs/live.md``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ringcast.cli.main import CliError
from ringcast.references.live import RINGCAST, systems


def _cmd_live(args: argparse.Namespace) -> int:
    from ringcast.core.units import parse_duration
    from ringcast.live.driver import Interrupted, run_live
    from ringcast.live.settle import settled
    from ringcast.live.tools import LiveError
    from ringcast.sim import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as e:
        raise CliError(str(e)) from None
    seed = args.seed if args.seed is not None else scenario.seed
    try:
        settle = parse_duration(args.settle, "--settle")
    except ValueError as e:
        raise CliError(str(e)) from None
    scenario = settled(scenario, settle)

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"{scenario.name} seed {seed}: {msg}", file=sys.stderr)

    try:
        run = run_live(
            scenario,
            seed,
            args.out,
            real_latency=args.real_latency,
            say=say,
            system=args.system,
        )
    except LiveError as e:
        raise CliError(str(e)) from None
    except Interrupted as e:
        print(
            f"ringcast live: interrupted by {e}; every node and namespace removed", file=sys.stderr
        )
        return 130
    s = run.summary
    if not args.quiet:
        worst = max((a.lag_ns for a in run.applied), default=0)
        print(
            f"{scenario.name} seed {seed} live ({s['system']}): {s['events']} trace events, "
            f"{s['deliveries']} deliveries, {len(run.applied)} faults (latest "
            f"{worst / 1e6:.1f} ms after asked), {len(s['findings'])} findings, "
            f"{s['wall_s']:.1f}s wall -> {args.out / 'trace.parquet'}"
        )
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser(
        "live",
        help="run one scenario on real node processes in network namespaces (needs root)",
    )
    s.add_argument("scenario", type=Path, help="scenario TOML file (as for `ringcast sim`)")
    s.add_argument("--seed", type=int, default=None, help="seed (default: the file's)")
    s.add_argument("--out", type=Path, required=True, help="output directory")
    s.add_argument(
        "--real-latency",
        action="store_true",
        help="run on the bridges' own latency in place of the scenario's latency model "
        "(adding delay needs tc netem)",
    )
    s.add_argument(
        "--system",
        choices=systems(),
        default=RINGCAST,
        help="whose nodes run the scenario: ringcast's (default) or a reference system's, "
        "recorded in the same trace schema (docs/references.md)",
    )
    s.add_argument(
        "--settle",
        default="0s",
        metavar="DURATION",
        help="move the scenario's workloads, faults and end this much later (e.g. 5s), "
        "so that the nodes form their group first (the nodes still boot at 0)",
    )
    s.add_argument("-q", "--quiet", action="store_true")
    s.set_defaults(func=_cmd_live)
