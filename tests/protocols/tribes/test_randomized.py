"""Random fault schedules (crashes, restarts, partitions and heals, flapping links,
pauses) on lossy networks: every claim holds and no transition leaves the table."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ringcast.lab.reference import tribes_check_all
from ringcast.sim import Simulation, parse_scenario


def random_scenario(seed: int, n: int) -> Any:
    rng = random.Random(seed)
    nodes = [chr(65 + i) for i in range(n)]
    state = dict.fromkeys(nodes, "up")
    nem: list[dict[str, Any]] = []
    t = 300
    split = False
    for _ in range(rng.randint(2, 7)):
        t += rng.randint(20, 600)
        act = rng.choice(["crash", "restart", "partition", "heal", "flap", "pause"])
        up = [x for x in nodes if state[x] == "up"]
        if act == "crash" and len(up) > 2:
            x = rng.choice(up)
            state[x] = "crashed"
            nem.append({"at": f"{t}ms", "action": "crash", "node": x})
        elif act == "restart" and "crashed" in state.values():
            x = rng.choice([x for x in nodes if state[x] == "crashed"])
            state[x] = "up"
            nem.append({"at": f"{t}ms", "action": "restart", "node": x})
        elif act == "partition":
            order = nodes[:]
            rng.shuffle(order)
            k = rng.randint(1, n - 1)
            nem.append({"at": f"{t}ms", "action": "partition", "groups": [order[:k], order[k:]]})
            split = True
        elif act == "heal" and split:
            nem.append({"at": f"{t}ms", "action": "heal"})
            split = False
        elif act in ("flap", "pause") and up:
            x = rng.choice(up)
            down, back = ("link_down", "link_up") if act == "flap" else ("pause", "resume")
            nem.append({"at": f"{t}ms", "action": down, "node": x})
            t += rng.randint(20, 600)
            nem.append({"at": f"{t}ms", "action": back, "node": x})
    if split:
        t += rng.randint(20, 300)
        nem.append({"at": f"{t}ms", "action": "heal"})
    return parse_scenario(
        {
            "name": f"tribes_random_{seed}",
            "protocol": "tribes",
            "nodes": nodes,
            "duration": f"{t + 3000}ms",
            "network": {
                "latency": {"dist": "exponential", "mean": "1ms", "floor": "200us"},
                "loss": rng.choice([0.0, 0.02, 0.1]),
            },
            "workload": [{"rate": 30, "order": "fifo"}],
            "nemesis": nem,
        },
        f"random{seed}",
    )


@pytest.mark.parametrize("seed", range(12))
def test_random_faults(seed: int) -> None:
    sc = random_scenario(seed, 5 + seed % 5)
    res = Simulation(sc, seed=seed).run()
    assert tribes_check_all(res.events()) == []
