"""Seeded random Raincore scenarios: crashes, restarts with kept state, partitions and
heals, message loss and duplication, multicast and lock workloads."""

from __future__ import annotations

import random
from typing import Any

from ringcast.sim import Scenario, parse_scenario

NAMES = "ABCDE"
SETTLE_MS = 700  # quiet time after the last fault: enough to rejoin and commit


def _ms(v: float) -> str:
    return f"{v:g}ms"


def random_scenario(seed: int) -> tuple[Scenario, list[tuple[int, int]], set[str]]:
    """A scenario, its fault windows (ns), and the nodes up at its end."""
    rng = random.Random(seed)
    n = rng.choice((3, 4, 5))
    nodes = list(NAMES[:n])
    hungry = 120
    t = rng.randint(40, 120)
    nemesis: list[dict[str, Any]] = []
    windows: list[tuple[int, int]] = []
    down: set[str] = set()
    for _ in range(rng.choice((1, 2, 2, 3))):
        kind = rng.choice(("crash", "restart", "partition", "partition", "restart"))
        length = rng.randint(20, 250)
        if kind == "partition":
            shuffled = nodes[:]
            rng.shuffle(shuffled)
            k = rng.randint(1, n - 1)
            groups = [sorted(shuffled[:k]), sorted(shuffled[k:])]
            nemesis.append({"at": _ms(t), "action": "partition", "groups": groups})
            nemesis.append({"at": _ms(t + length), "action": "heal"})
        else:
            up = [x for x in nodes if x not in down]
            # At most one node stays down, so the survivors can still commit a view.
            if down:
                kind = "restart"
            victim = rng.choice(up)
            nemesis.append({"at": _ms(t), "action": "crash", "node": victim})
            if kind == "restart":
                nemesis.append({"at": _ms(t + length), "action": "restart", "node": victim})
            else:
                down.add(victim)
        windows.append((t, t + length + 2 * hungry + 200))
        t += length + rng.randint(250, 350)  # let each episode settle
    duration = t + SETTLE_MS
    doc: dict[str, Any] = {
        "name": f"raincore_random_{seed}",
        "protocol": "raincore",
        "nodes": nodes,
        "duration": _ms(duration),
        "settings": {
            "eating_timeout": "2ms",
            "hungry_timeout": _ms(hungry),
            "starving_timeout": "40ms",
            "rto": "4ms",
            "max_tries": 4,
            "rto_max": "4ms",  # the fixed wait these runs were tuned with (no back-off)
            "lock_max_hold": "5ms",
            "max_token_messages": 32,
            # Half the runs hold a busy token as long as an idle one (and run faster).
            "busy_eating_timeout": "1ms" if seed % 2 else "2ms",
        },
        "network": {
            "latency": {"dist": "uniform", "low": "0.3ms", "high": "1.5ms"},
            "loss": rng.choice((0.0, 0.01, 0.03)),
            "duplication": rng.choice((0.0, 0.02)),
        },
        "workload": [
            {
                "nodes": "all",
                "kind": "multicast",
                "rate": 100.0,
                "size": 8,
                "start": "5ms",
                "duration": _ms(duration - 300),
            },
            {
                "nodes": nodes[:2],
                "kind": "lock",
                "rate": 40.0,
                "hold": "2ms",
                "start": "10ms",
                "duration": _ms(duration - 300),
            },
        ],
        "nemesis": nemesis,
    }
    sc = parse_scenario(doc, f"raincore_random_{seed}")
    ns = [(a * 1_000_000, b * 1_000_000) for a, b in windows]
    return sc, ns, set(nodes) - down
