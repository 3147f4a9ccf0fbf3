"""Seeded random fault scenarios for Totem (crash, restart, partition and merge, loss,
duplication, reordering), run in the simulator and checked with :mod:`ringcast.lab.reference`."""

from __future__ import annotations

import random
from typing import Any

from ringcast.sim import Simulation, parse_scenario

MS = 1_000_000
QUIET_FROM = 900 * MS  # no fault after this: the rest of the run is for convergence
DURATION = 1_700 * MS

FAST = {
    "token_timeout": "80ms",
    "token_retransmit_timeout": "8ms",
    "token_hold": "1ms",
    "join_timeout": "6ms",
    "consensus_timeout": "90ms",
    "merge_detect_timeout": "30ms",
    "fail_to_recv_const": 20,
}


def random_scenario(seed: int) -> tuple[dict[str, Any], set[str], int]:
    """A scenario document, the nodes alive at the end, and the time of the last fault."""
    rng = random.Random(seed)
    n = rng.randint(3, 5)
    nodes = [f"N{i}" for i in range(1, n + 1)]
    settings: dict[str, Any] = dict(FAST)
    if rng.random() < 0.3:
        settings["frame_size"] = rng.choice([200, 400])
    if rng.random() < 0.3:
        settings["window_size"] = rng.choice([8, 20])
        settings["max_messages"] = rng.choice([3, 6])
    net = {
        "latency": {"dist": "uniform", "low": "100us", "high": "600us"},
        "loss": rng.choice([0.0, 0.0, 0.01, 0.05, 0.1, 0.2]),
        "duplication": rng.choice([0.0, 0.02, 0.05]),
        "reorder": rng.choice([0.0, 0.05]),
        "reorder_delay": "1ms",
    }
    workloads = [
        {
            "nodes": "all",
            "rate": rng.choice([50.0, 150.0]),
            "size": rng.choice([40, 100, 900]),
            "order": order,
            "start": "20ms",
            "duration": "1500ms",
        }
        for order in ("agreed", "safe")
    ]
    nemesis: list[dict[str, Any]] = []
    alive = set(nodes)
    crashed: set[str] = set()
    t = rng.randint(150, 300)
    last = 0
    for _ in range(rng.randint(1, 3)):
        if t * MS >= QUIET_FROM:
            break
        kind = rng.choice(["crash", "restart", "partition"])
        at = f"{t}ms"
        if kind == "crash" and len(alive) > 2:
            victim = rng.choice(sorted(alive))
            nemesis.append({"at": at, "action": "crash", "node": victim})
            alive.discard(victim)
            crashed.add(victim)
        elif kind == "restart" and crashed:
            victim = rng.choice(sorted(crashed))
            nemesis.append({"at": at, "action": "restart", "node": victim})
            crashed.discard(victim)
            alive.add(victim)
        else:
            shuffled = sorted(nodes)
            rng.shuffle(shuffled)
            cut = rng.randint(1, len(shuffled) - 1)
            nemesis.append(
                {"at": at, "action": "partition", "groups": [shuffled[:cut], shuffled[cut:]]}
            )
            heal = t + rng.randint(80, 250)
            nemesis.append({"at": f"{heal}ms", "action": "heal"})
            t = heal
        last = t
        t += rng.randint(100, 300)
    doc = {
        "name": f"totem_random_{seed}",
        "protocol": "totem",
        "nodes": nodes,
        "duration": f"{DURATION // MS}ms",
        "count_bytes": False,
        "settings": settings,
        "network": net,
        "workload": workloads,
        "nemesis": nemesis,
    }
    return doc, alive, last * MS


def run(seed: int) -> tuple[list[dict[str, Any]], set[str], int]:
    doc, alive, last = random_scenario(seed)
    sc = parse_scenario(doc, f"random:{seed}")
    res = Simulation(sc, seed=seed).run()
    return res.events(), alive, last
