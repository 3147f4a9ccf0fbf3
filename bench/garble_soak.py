"""Every protocol against a member gone bad (nemesis ``garble``), over many seeds.

Each seed is one simulated run: ``--nodes`` nodes (4) multicasting at 50/s; at 4
failure-detection timeouts *T* ``--garblers`` members (1) start sending a ``--share`` of
their messages with one field set
to a hostile value (``ringcast.sim.garble``: what a buggy or compromised member whose
packets pass authentication would send), for 8 *T*; then 28 *T* of a quiet network.
Reported per protocol: runs that raised (a node that fails on a message), runs not
converged at the end (the live nodes not in one view of all of them), and runs where some
node delivered nothing of some sender in the last 8 *T* (a group that converged but
stopped delivering).

    python bench/garble_soak.py [--protocol P ...] [--seeds 0-200] [--share 0.3]
        [--nodes 4] [--garblers 1]

``--hostile`` runs each seed of the hostile generator (``ringcast.sim.hostile``: crashes,
restarts, pauses, flapping partitions on a lossy network; here with 20 *T* of quiet at
the end and the workload going on to it) twice, as drawn and with one or two members
garbling among those faults (``Harshness.garble``), and reports the runs that end
converged, and delivering every live sender's messages in the last 6 *T*, without the
garbling but not with it: what the corrupted messages cost beyond the faults
themselves.

    python bench/garble_soak.py --hostile [--protocol P ...] [--seeds 0-200] [--share 0.3]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.soakrun import parse_seeds

from ringcast.lab import reference as checks
from ringcast.protocols import registry
from ringcast.sim import Simulation, parse_scenario
from ringcast.sim.garble import detection_timeout, garble_scenario
from ringcast.sim.hostile import HOSTILE, hostile_scenario

QUIET = 20  # failure-detection timeouts of quiet at the end, the workload going on
TAIL = 6  # the last timeouts of the run, in which every live sender must be delivered


def hostile_outcome(protocol: str, seed: int, share: float) -> tuple[bool, bool]:
    """(converged, delivering at the end) of one hostile run whose workload goes on to
    its end (the generator's stops 2 timeouts after the last fault)."""
    timeout = detection_timeout(protocol)
    h = dataclasses.replace(HOSTILE, garble=share, quiet=QUIET)
    run = hostile_scenario(seed, protocol, token_timeout=timeout, harshness=h)
    end_ms = run.scenario.duration // 1_000_000
    for w in run.doc["workload"]:
        w["duration"] = f"{end_ms - int(w['start'].removesuffix('ms')) - 1}ms"
    sc = parse_scenario(run.doc)
    rows = Simulation(sc, seed).run().events()
    live = set(run.live)
    return (
        not checks.convergence(rows, live),
        not checks.delivery_stalls(rows, live, sc.duration - TAIL * timeout),
    )


def hostile_soak(protocol: str, seeds: list[int], share: float) -> None:
    t0 = time.monotonic()
    worse: dict[str, list[int]] = {"converged": [], "delivering": []}
    raised: list[int] = []
    for seed in seeds:
        base = hostile_outcome(protocol, seed, 0.0)
        try:
            bad = hostile_outcome(protocol, seed, share)
        except Exception as e:  # a machine that fails on a message
            raised.append(seed)
            print(f"{protocol} seed {seed}: {type(e).__name__}: {e}", flush=True)
            continue
        for name, before, after in zip(worse, base, bad, strict=True):
            if before and not after:
                worse[name].append(seed)
    print(
        f"{protocol}: {len(seeds)} hostile runs, garbling share {share}, "
        f"{time.monotonic() - t0:.0f} s; raised {len(raised)} {raised[:10]}; "
        f"converged only without garbling {len(worse['converged'])} {worse['converged'][:10]}; "
        f"delivering only without garbling {len(worse['delivering'])} "
        f"{worse['delivering'][:10]}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", action="append", choices=registry.builtin_names())
    ap.add_argument("--seeds", default="0-200", help="a range, e.g. 0-200")
    ap.add_argument("--share", type=float, default=0.3)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--garblers", type=int, default=1, help="members garbling at once")
    ap.add_argument("--hostile", action="store_true", help="among the hostile generator's faults")
    args = ap.parse_args()
    for protocol in args.protocol or registry.builtin_names():
        if args.hostile:
            hostile_soak(protocol, list(parse_seeds(args.seeds)), args.share)
            continue
        doc = garble_scenario(protocol, args.share, nodes=args.nodes, garblers=args.garblers)
        sc = parse_scenario(doc)
        raised: list[int] = []
        unconverged: list[int] = []
        stalled: list[int] = []
        since = 32 * detection_timeout(protocol)
        t0 = time.monotonic()
        seeds = list(parse_seeds(args.seeds))
        for seed in seeds:
            try:
                rows = Simulation(sc, seed).run().events()
            except Exception as e:  # a machine that fails on a message
                raised.append(seed)
                print(f"{protocol} seed {seed}: {type(e).__name__}: {e}", flush=True)
                continue
            if checks.convergence(rows, set(doc["nodes"])):
                unconverged.append(seed)
            if checks.delivery_stalls(rows, set(doc["nodes"]), since):
                stalled.append(seed)
        print(
            f"{protocol}: {len(seeds)} runs in {time.monotonic() - t0:.0f} s; "
            f"raised {len(raised)} {raised[:10]}; "
            f"not converged at the end {len(unconverged)} {unconverged[:10]}; "
            f"stopped delivering {len(stalled)} {stalled[:10]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
