"""``ringcast``: one entry point, one sub-command per job.

Every sub-command prints a one-line error and exits non-zero (2) on bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ringcast.cli.progress import ProgressBar

EXIT_BAD_INPUT = 2
PLUGINS = ("ringcast.cli.lab", "ringcast.cli.runtime", "ringcast.cli.bench", "ringcast.cli.live")


class CliError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def _cmd_sim(args: argparse.Namespace) -> int:
    from ringcast.sim import ScenarioError, Simulation, load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as e:
        raise CliError(str(e)) from None
    if args.format not in ("parquet", "jsonl"):
        raise CliError(f"--format: expected parquet or jsonl, got {args.format!r}")
    seed = args.seed if args.seed is not None else scenario.seed
    if args.trace_packets:
        scenario = dataclasses.replace(scenario, trace_packets=True)
    sim = Simulation(scenario, seed)
    bar = ProgressBar(f"{scenario.name} seed {seed}")
    result = sim.run(progress=None if args.quiet else bar)
    path = result.write(args.out, args.format)
    s = result.summary
    if not args.quiet:
        print(
            f"{scenario.name} seed {seed}: {s['events']} trace events, "
            f"{s['deliveries']} deliveries, "
            f"{s['simulated_ns'] / 1e9:g}s simulated in {s['wall_s']:.2f}s wall "
            f"({s['events_per_wall_second'] or 0:,} sim events/s) -> {path}"
        )
    return 0


def _cmd_protocols(args: argparse.Namespace) -> int:
    from ringcast.core.units import format_duration
    from ringcast.protocols import registry

    for name in registry.names():
        spec = registry.get(name)
        first = (spec.doc.strip().splitlines() or [""])[0]
        print(f"{name}: {first}")
        if args.verbose:
            for key, st in spec.settings.items():
                default = format_duration(st.default) if st.kind == "duration" else st.default
                print(f"    {key} ({st.kind}, default {default}): {st.doc}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from ringcast.sim import ScenarioError, load_scenario

    for path in args.scenarios:
        try:
            sc = load_scenario(path)
        except ScenarioError as e:
            raise CliError(str(e)) from None
        print(json.dumps({"file": str(path), "name": sc.name, "protocol": sc.protocol, "ok": True}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ringcast", description=__doc__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("sim", help="run one scenario in the deterministic simulator")
    s.add_argument("scenario", type=Path, help="scenario TOML file")
    s.add_argument("--seed", type=int, default=None, help="random seed (default: the file's)")
    s.add_argument("--out", type=Path, required=True, help="output directory")
    s.add_argument("--format", default="parquet", help="parquet (default) or jsonl")
    s.add_argument(
        "--trace-packets",
        action="store_true",
        help="trace every packet sent, received and lost, with its network (as the "
        "scenario key trace_packets = true)",
    )
    s.add_argument("-q", "--quiet", action="store_true")
    s.set_defaults(func=_cmd_sim)

    s = sub.add_parser("protocols", help="list the protocols and their settings")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(func=_cmd_protocols)

    s = sub.add_parser("validate", help="check scenario files and report the first error")
    s.add_argument("scenarios", nargs="+", type=Path)
    s.set_defaults(func=_cmd_validate)

    # Sub-command families living in their own modules: each has register(sub).
    for mod in PLUGINS:
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
            continue
        module.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except CliError as e:
        print(f"ringcast {args.command}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    # through the package's module, not this __main__ copy of it: the subcommands raise
    # ringcast.cli.main.CliError, which a second copy of the class would not catch
    from ringcast.cli.main import main as _main

    sys.exit(_main())
