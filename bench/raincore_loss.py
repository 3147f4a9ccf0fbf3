"""Raincore under sustained message loss, no other fault: where does it stop settling?

python bench/raincore_loss.py                      # sizes 3, 5, 8; loss 10-60%
python bench/raincore_loss.py --sizes 5 --loss 0.2,0.3 --seeds 5

Each run: ``n`` nodes, uniform loss ``p`` on every link for 50 token timeouts (the
hostile soak's settings: ``hungry_timeout`` 120ms, ``rto`` 4ms x ``max_tries`` 4,
``eating_timeout`` 2ms) under a multicast workload. The group is *settled* while every
node is in Agreement on the same globalView entry holding all ``n`` nodes. A run
*settles* when no unsettled period (a false failure-on-delivery, the rotations to
commit the shrunk ring, the dropped node's starving and rejoining) lasts longer than
the bound, 10 token timeouts (1.2 s); a period still open at the end counts with the
length it has reached. A loss rate settles when every seed's run does. Printed per
size: the longest unsettled period per loss rate (in token timeouts), the share of
time settled, and the first loss rate that does not settle.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.raincore.hostile import SETTINGS, TOKEN_TIMEOUT

from ringcast.lab import reference as checks
from ringcast.sim import Simulation, parse_scenario

BOUND = 10  # token timeouts
LENGTH = 50  # token timeouts


def run(n: int, loss: float, seed: int) -> tuple[float, float]:
    """(longest unsettled period in token timeouts, share of the run settled)."""
    nodes = list("ABCDEFGH"[:n])
    end = LENGTH * TOKEN_TIMEOUT
    doc = {
        "name": f"raincore_loss_{n}_{loss}",
        "protocol": "raincore",
        "nodes": nodes,
        "duration": end,
        "count_bytes": False,
        "settings": SETTINGS,
        "network": {"latency": {"dist": "uniform", "low": "0.3ms", "high": "1.5ms"}, "loss": loss},
        "workload": [{"nodes": "all", "kind": "multicast", "rate": 50.0, "size": 8}],
    }
    rows = Simulation(parse_scenario(doc, "bench"), seed=seed).run().events()
    spans = checks.unsettled_spans(rows, set(nodes), end)
    # a period still open at the end counts with the length it has reached
    worst = max((b - a for a, b in spans), default=0)
    settled = 1 - sum(b - a for a, b in spans) / end
    return worst / TOKEN_TIMEOUT, settled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="3,5,8")
    ap.add_argument("--loss", default="0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.5,0.6")
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    losses = [float(x) for x in args.loss.split(",")]
    for n in (int(x) for x in args.sizes.split(",")):
        first_bad = None
        print(f"{n} nodes: loss -> longest unsettled (token timeouts, worst seed), time settled")
        for p in losses:
            results = [run(n, p, seed) for seed in range(1, args.seeds + 1)]
            worst = max(r[0] for r in results)
            share = sum(r[1] for r in results) / len(results)
            ok = worst <= BOUND
            if not ok and first_bad is None:
                first_bad = p
            print(
                f"  {p:4.0%}  {worst:6.1f}  {share:6.1%}  {'settles' if ok else 'does not settle'}"
            )
        print(
            f"  => {n} nodes stop settling at {first_bad:.0%} loss"
            if first_bad
            else "  => settles at every rate tried"
        )


if __name__ == "__main__":
    main()
