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
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.gms import checks
from tests.protocols.soakrun import parse_seeds

from ringcast.protocols import registry
from ringcast.sim import Simulation, parse_scenario
from ringcast.sim.garble import garble_scenario


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", action="append", choices=registry.builtin_names())
    ap.add_argument("--seeds", default="0-200", help="a range, e.g. 0-200")
    ap.add_argument("--share", type=float, default=0.3)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--garblers", type=int, default=1, help="members garbling at once")
    args = ap.parse_args()
    for protocol in args.protocol or registry.builtin_names():
        doc = garble_scenario(protocol, args.share, nodes=args.nodes, garblers=args.garblers)
        sc = parse_scenario(doc)
        raised: list[int] = []
        unconverged: list[int] = []
        stalled: list[int] = []
        since = 32 * (registry.get(protocol).timeout_ns() or 200_000_000)
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
