"""Tribes in the simulator: time from a membership change to one agreed coordinator.

python bench/tribes_agreement.py                       # 5, 16, 64 nodes, 3 seeds each
python bench/tribes_agreement.py --sizes 5 --seeds 1   # a quick look
python bench/tribes_agreement.py --tomcat-timing       # Tomcat's heartbeat and drop time

For each change (a member crashes, the coordinator crashes, a member joins, a partition
in two halves heals) it measures, in virtual time, from the change to the moment every
live node has installed the one view they all end with (same id, same coordinator):

* ``detect``: from the change to the first token sent for it (the membership layer's
  detection: ``member_drop_time`` plus at most one beacon interval for a crash, the first
  beacon for a join or a heal);
* ``elect``: from that first token to agreement at every node;
* the goal: ``detect`` + two token circulations (N hops each) + one ``COORD_CONF``, at
  the mean hop latency (1 ms).

The Tomcat column is computed from Tomcat's defaults, not measured (see
docs/benchmarks.md): McastService ``frequency`` 500 ms and ``dropTime`` 3000 ms,
``NonBlockingCoordinator.waitForCoordMsgTimeout`` 15 s, and ``SimpleCoordinator``'s
2.5 s quiet period.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from ringcast.sim import Simulation, parse_scenario

HOP_MS = 1.0
CHANGE_AT_MS = 1000


SETTINGS: dict[str, str] = {}
TOMCAT_TIMING = {"heartbeat_interval": "500ms", "member_drop_time": "3s"}


def scenario(n: int, change: str) -> tuple[Any, int]:
    """The scenario of ``change`` at ``n`` nodes, and the time (ns) of the change."""
    nodes = [f"n{i:02d}" for i in range(n)]
    doc: dict[str, Any] = {
        "name": f"tribes_bench_{change}_{n}",
        "protocol": "tribes",
        "nodes": nodes,
        "duration": "2.5s" if not SETTINGS else "8s",
        "count_bytes": False,
        "settings": dict(SETTINGS),
        "network": {"latency": {"dist": "normal", "mean": "1ms", "stddev": "100us"}},
    }
    at = CHANGE_AT_MS if not SETTINGS else 4000  # a partition must outlast the drop time
    if change == "crash":
        doc["nemesis"] = [{"at": f"{at}ms", "action": "crash", "node": nodes[n // 2]}]
    elif change == "crash coordinator":
        doc["nemesis"] = [{"at": f"{at}ms", "action": "crash", "node": nodes[0]}]
    elif change == "join":
        doc["nodes"] = nodes[:-1]
        doc["joiners"] = [nodes[-1]]
        doc["nemesis"] = [{"at": f"{at}ms", "action": "join", "node": nodes[-1]}]
    elif change == "partition heal":
        half = n // 2
        doc["duration"] = "3s" if not SETTINGS else "8s"
        doc["nemesis"] = [
            {"at": "500ms", "action": "partition", "groups": [nodes[:half], nodes[half:]]},
            {"at": f"{at}ms", "action": "heal"},
        ]
    else:
        raise ValueError(f"unknown change {change!r}")
    return parse_scenario(doc, "bench"), at * 1_000_000


def measure(n: int, change: str, seed: int) -> tuple[float, float]:
    """(detect, elect) in ms for one run; raises if the run did not agree."""
    sc, t0 = scenario(n, change)
    res = Simulation(sc, seed=seed).run()
    live = {r["node"] for r in res.events(kind="stats") if r["detail"]["state"] == "up"}
    final: dict[str, tuple[str, int]] = {}
    for r in res.events(kind="view"):
        final[r["node"]] = (r["view"], r["t"])
    views = {final[x][0] for x in live}
    if len(views) != 1:
        raise RuntimeError(f"{sc.name} seed {seed}: no agreement: {views}")
    agreed = max(final[x][1] for x in live)
    first = min(
        r["t"]
        for r in res.events(kind="coord")
        if r["t"] >= t0 and r["detail"].get("op") == "request"
    )
    return (first - t0) / 1e6, (agreed - first) / 1e6


TOMCAT_MS = {
    # detection by McastService (dropTime, up to one frequency late for a crash; the next
    # heartbeat for a join or a heal), then NonBlockingCoordinator's rounds, or
    # SimpleCoordinator's quiet period after the last change.
    "crash": ("3000-3500 + rounds", "5500-6000"),
    "crash coordinator": ("3000-3500 + rounds", "5500-6000"),
    "join": ("0-500 + rounds; 15000 then gives up if the leader misses it", "2500-3000"),
    "partition heal": ("0-500 + rounds", "2500-3000"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 16, 64])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--tomcat-timing",
        action="store_true",
        help="Tomcat's McastService defaults: heartbeat every 500 ms, dropped after 3 s",
    )
    args = ap.parse_args()
    if args.tomcat_timing:
        SETTINGS.update(TOMCAT_TIMING)
    changes = ["crash", "crash coordinator", "join", "partition heal"]
    print(
        f"{'change':<18} {'N':>3} {'detect ms':>10} {'elect ms':>9} {'total ms':>9} "
        f"{'goal ms':>8} {'within':>6}"
    )
    for change in changes:
        for n in args.sizes:
            runs = [measure(n, change, seed) for seed in range(1, args.seeds + 1)]
            detect = statistics.median(d for d, _ in runs)
            elect = statistics.median(e for _, e in runs)
            worst = max(e for _, e in runs)
            goal = (2 * n + 1) * HOP_MS
            ok = "yes" if worst <= goal else "NO"
            print(
                f"{change:<18} {n:>3} {detect:>10.1f} {elect:>9.1f} {detect + elect:>9.1f} "
                f"{detect + goal:>8.1f} {ok:>6}"
            )
    print()
    print("Tomcat defaults (computed, ms): NonBlockingCoordinator | SimpleCoordinator")
    for change, (nbc, simple) in TOMCAT_MS.items():
        print(f"  {change:<18} {nbc} | {simple}")


if __name__ == "__main__":
    main()
