"""How long a group of N takes to form at a loss rate, without any fault.

Each run boots ``--sizes`` nodes (named as the hostile generator names them) on a
network losing ``--losses`` of its packets, with a light workload, for ``--seconds``;
reported: when every node first stood in one view of all of them, in the protocol's
failure-detection timeouts *T* ("never": not within the run), and how many view rows
the run wrote. ``--set KEY=VALUE`` sets a protocol setting (repeatable).

    python bench/ring_formation.py --protocol totem --sizes 16,32,64 --losses 0.15,0.25
    python bench/ring_formation.py --protocol totem --sizes 64 --losses 0.25 \
        --set token_per_member=0ms
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ringcast.protocols import registry
from ringcast.sim import Simulation, parse_scenario
from ringcast.sim.garble import detection_timeout
from ringcast.sim.scenario import NODE_NAMES
from runtime_throughput import _setting


def formed_at(rows: list[dict[str, Any]], names: list[str]) -> int | None:
    """When every node first stood in one view of all of them (ns), or None."""
    current: dict[str, tuple[str, frozenset[str]]] = {}
    everyone = frozenset(names)
    for r in rows:
        if r["kind"] != "view" or r.get("transitional"):
            continue
        current[r["node"]] = (r["view"], frozenset(r["members"] or ()))
        if len(current) == len(names) and {current[n] for n in names} == {(r["view"], everyone)}:
            return int(r["t"])
    return None


def lossy_group_doc(
    name: str,
    protocol: str,
    names: list[str],
    loss: float,
    seconds: float,
    settings: dict[str, Any],
    rate: float = 0.0,
) -> dict[str, Any]:
    """A scenario ``name``: ``names`` for ``seconds`` on a network of 0.3-1.5 ms latency losing
    ``loss`` of its packets, each node multicasting ``rate`` 8-byte messages a second
    from 5 ms on (0: no workload)."""
    doc: dict[str, Any] = {
        "name": name,
        "protocol": protocol,
        "nodes": names,
        "duration": f"{round(seconds * 1000)}ms",
        "settings": settings,
        "network": {
            "latency": {"dist": "uniform", "low": "0.3ms", "high": "1.5ms"},
            "loss": loss,
        },
    }
    if rate:
        doc["workload"] = [
            {"nodes": "all", "kind": "multicast", "rate": rate, "size": 8, "start": "5ms"}
        ]
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", default="totem", choices=registry.builtin_names())
    ap.add_argument("--sizes", default="16,32,64")
    ap.add_argument("--losses", default="0.0,0.15,0.25")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--set", type=_setting, action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    settings = dict(a.set)
    unit = detection_timeout(a.protocol)
    print(f"| nodes | loss | formed (T = {unit / 1e6:.0f} ms) | view rows | wall s |")
    print("|---|---|---|---|---|")
    for n in (int(x) for x in a.sizes.split(",")):
        for loss in (float(x) for x in a.losses.split(",")):
            names = list(NODE_NAMES[:n])
            doc = lossy_group_doc(
                "ring_formation", a.protocol, names, loss, a.seconds, settings, rate=50.0
            )
            t0 = time.monotonic()
            rows = Simulation(parse_scenario(doc), a.seed).run().events()
            at = formed_at(rows, names)
            views = sum(r["kind"] == "view" for r in rows)
            shown = "never" if at is None else f"{at / unit:.1f}"
            print(
                f"| {n} | {loss:.0%} | {shown} | {views} | {time.monotonic() - t0:.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
