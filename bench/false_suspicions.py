"""False suspicions of the all-to-all heartbeat detectors as the group grows.

GMS and basic suspect a peer through ``ringcast.layers.HeartbeatDetector``, Tribes drops
one through its own membership (``member_drop_time``); every node watches every other
one, so the group watches n x (n - 1) links. Each run boots ``--sizes`` nodes on a
network losing ``--losses`` of its packets (independently on every link), with no fault
and no workload (``--rate``: multicasts a second from every node; any message is a sign
of life, so traffic hides lost heartbeats), for ``--seconds``. Reported: how many times
a node suspected (GMS, basic) or dropped (Tribes) a live peer, per simulated second, and
the view rows written. With ``--crash`` the last node crashes about halfway, 27 ms after
a heartbeat, and the run also reports when the last live node suspected it (ms after
the crash). ``--set KEY=VALUE`` sets a protocol setting (repeatable).

    python bench/false_suspicions.py --protocol basic --sizes 4,8,16,24,32 --seconds 10
    python bench/false_suspicions.py --protocol tribes --sizes 8,16,32 --losses 0,0.2 --crash
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ring_formation import lossy_group_doc
from ringcast.core.events import Suspected
from ringcast.layers import HeartbeatDetector
from ringcast.protocols import registry
from ringcast.protocols.tribes._membership import Membership
from ringcast.sim import Simulation, parse_scenario
from ringcast.sim.scenario import NODE_NAMES
from runtime_throughput import _setting

SUSPICIONS: list[tuple[int, str, str]] = []
"""(time, watcher, peer) of every suspicion of the run being simulated."""


def _watch() -> None:
    """Count suspicions where they are made: the detector's tick, Tribes' expiry."""
    tick = HeartbeatDetector.tick
    expire = Membership.expire

    def counted_tick(self: HeartbeatDetector, now: int) -> Any:
        up, effects = tick(self, now)
        SUSPICIONS.extend((now, self.node_id, e.node) for e in up if isinstance(e, Suspected))
        return up, effects

    def counted_expire(self: Membership, now: int) -> list[str]:
        gone = expire(self, now)
        SUSPICIONS.extend((now, self.me, n) for n in gone)
        return gone

    HeartbeatDetector.tick = counted_tick  # type: ignore[method-assign]
    Membership.expire = counted_expire  # type: ignore[method-assign,assignment]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", default="basic", choices=["basic", "gms", "tribes"])
    ap.add_argument("--sizes", default="4,8,16,32")
    ap.add_argument("--losses", default="0.2,0.3")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=0.0, help="multicasts/s a node (0: none)")
    ap.add_argument("--crash", action="store_true", help="crash the last node halfway")
    ap.add_argument("--set", type=_setting, action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    _watch()
    settings = dict(a.set)
    registry.get(a.protocol).resolve_settings(settings)  # a bad --set fails here
    print(f"{a.protocol}, seed {a.seed}, {a.seconds:g} s, settings {settings or 'default'}")
    crash = " | last suspicion of the crashed node, ms |" if a.crash else " |"
    print(f"| nodes | loss | false suspicions | per s | view rows{crash} wall s |")
    print("|---|---|---|---|---|" + ("---|" if a.crash else "") + "---|")
    # Halfway, off the heartbeat ticks (every node boots at 0 and beats on a 50 ms grid
    # by default): the crashed node's last heartbeat went out 27 ms before.
    half = round(a.seconds * 500) + 27
    for n in (int(x) for x in a.sizes.split(",")):
        for loss in (float(x) for x in a.losses.split(",")):
            names = list(NODE_NAMES[:n])
            doc = lossy_group_doc(
                "false_suspicions", a.protocol, names, loss, a.seconds, settings, a.rate
            )
            victim = names[-1]
            if a.crash:
                doc["nemesis"] = [{"at": f"{half}ms", "action": "crash", "node": victim}]
            SUSPICIONS.clear()
            t0 = time.monotonic()
            rows = Simulation(parse_scenario(doc), a.seed).run().events()
            wall = time.monotonic() - t0
            crashed_at = half * 1_000_000 if a.crash else None
            false = [
                s
                for s in SUSPICIONS
                if crashed_at is None or s[0] < crashed_at or victim not in s[1:]
            ]
            views = sum(r["kind"] == "view" for r in rows)
            cells = [f"{n}", f"{loss:.0%}", f"{len(false)}", f"{len(false) / a.seconds:.1f}"]
            cells.append(f"{views}")
            if crashed_at is not None:
                first: dict[str, int] = {}
                for t, who, peer in SUSPICIONS:
                    if peer == victim and t >= crashed_at and who not in first:
                        first[who] = t
                live = set(names) - {victim}
                cells.append(
                    f"{(max(first.values()) - crashed_at) / 1e6:.0f}"
                    if set(first) == live
                    else f"not by {len(live - set(first))} nodes"
                )
            cells.append(f"{wall:.1f}")
            print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
