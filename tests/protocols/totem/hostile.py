"""A hostile scenario generator for Totem: sustained loss, duplication and
reordering under many overlapping faults.

Each seed draws 3-8 nodes; loss 5-30 %, duplication up to 10 %, reordering up to 30 %;
2-7 fault episodes whose times overlap freely: crashes (most restart later), pauses, and
partition episodes in which the nodes are cut into 2 or 3 groups, re-cut every token
timeout, then healed. After the last fault the run goes on for ``QUIET_TIMEOUTS`` token
timeouts; :func:`settle_time` says when (and whether) the live nodes came to rest in one
regular configuration of exactly the live nodes.

Totem-specific and minimal: a shared generator for every protocol is being written
elsewhere (``ringcast.sim.hostile``); this one can give way to it once it exists.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from ringcast.sim import Simulation, parse_scenario

MS = 1_000_000
TOKEN_TIMEOUT = 200 * MS  # the shipped default: the runs use Totem's default settings
QUIET_TIMEOUTS = 40
"""Quiet time after the last fault, in token timeouts (8 s with the defaults)."""


def hostile_scenario(
    seed: int,
    *,
    nodes: int | None = None,
    loss: float | None = None,
    quiet_timeouts: int = QUIET_TIMEOUTS,
    settings: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], set[str], int]:
    """A scenario document, the nodes alive at the end, and the time of the last fault (ns).

    ``nodes`` and ``loss`` fix the group size and the loss rate instead of drawing them.
    """
    rng = random.Random(seed)
    n = nodes if nodes is not None else rng.randint(3, 8)
    names = [f"N{i}" for i in range(1, n + 1)]
    net = {
        "latency": {"dist": "uniform", "low": "100us", "high": "600us"},
        "loss": loss if loss is not None else round(rng.uniform(0.05, 0.30), 3),
        "duplication": round(rng.uniform(0.0, 0.10), 3),
        "reorder": round(rng.uniform(0.0, 0.30), 3),
        "reorder_delay": "1ms",
    }
    workloads = [
        {
            "nodes": "all",
            "rate": 20.0,
            "size": 100,
            "order": order,
            "start": "20ms",
        }
        for order in ("agreed", "safe")
    ]
    actions: list[tuple[int, dict[str, Any]]] = []
    busy: dict[str, int] = dict.fromkeys(names, 0)  # a node's crash/pause episode ends here
    crashed: set[str] = set()
    cuts: list[tuple[int, int]] = []
    for _ in range(rng.randint(2, 7)):
        start = rng.randint(100, 2500) * MS
        length = rng.randint(200, 1500) * MS
        kind = rng.choice(["crash", "pause", "partition"])
        free = [x for x in names if busy[x] <= start and x not in crashed]
        if kind == "partition" or len(free) < 2:
            cuts.append((start, start + length))
            continue
        victim = rng.choice(free)
        if kind == "crash":
            actions.append((start, {"action": "crash", "node": victim}))
            if rng.random() < 0.7 or n - len(crashed) <= 2:
                actions.append((start + length, {"action": "restart", "node": victim}))
                busy[victim] = start + length + MS
            else:
                crashed.add(victim)
        else:
            actions.append((start, {"action": "pause", "node": victim}))
            actions.append((start + length, {"action": "resume", "node": victim}))
            busy[victim] = start + length + MS
    # partition episodes: overlapping ones merge; re-cut every token timeout, then heal
    cuts.sort()
    merged: list[list[int]] = []
    for a, b in cuts:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for a, b in merged:
        t = a
        while t < b:
            shuffled = list(names)
            rng.shuffle(shuffled)
            k = 3 if n >= 3 and rng.random() < 0.5 else 2
            bounds = sorted(rng.sample(range(1, n), k - 1))
            groups = [shuffled[i:j] for i, j in zip([0, *bounds], [*bounds, n], strict=True)]
            actions.append((t, {"action": "partition", "groups": groups}))
            t += TOKEN_TIMEOUT
        actions.append((b, {"action": "heal"}))
    actions.sort(key=lambda x: x[0])
    last = max(t for t, _ in actions)
    nemesis = [{"at": f"{t // 1000}us", **a} for t, a in actions]
    alive = set(names) - crashed
    duration = last + quiet_timeouts * TOKEN_TIMEOUT
    doc = {
        "name": f"totem_hostile_{seed}",
        "protocol": "totem",
        "nodes": names,
        "duration": f"{duration // 1000}us",
        "count_bytes": False,
        "settings": dict(settings or {}),
        "network": net,
        "workload": [{**w, "duration": f"{last // MS}ms"} for w in workloads],
        "nemesis": nemesis,
    }
    return doc, alive, last


def settle_time(rows: list[dict[str, Any]], live: set[str], last_fault: int) -> int | None:
    """Nanoseconds from the last fault until every live node had installed, for the last
    time, one same regular configuration of exactly the live nodes (0 if they were
    already in it); None if they never came to rest in one."""
    last: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["kind"] == "view" and not r["transitional"]:
            last[r["node"]] = r
    views = {last[x]["view"] if x in last else None for x in live}
    if len(views) != 1 or None in views:
        return None
    for x in live:
        if set(last[x]["members"]) != live:
            return None
    # a node still outside Operational at the end has not come to rest
    state: dict[str, str] = defaultdict(str)
    for r in rows:
        if r["kind"] == "state":
            state[r["node"]] = r["detail"].get("state", "")
    if any(state[x] != "Operational" for x in live):
        return None
    return max(max(last[x]["t"] for x in live) - last_fault, 0)


def run(seed: int, **kw: Any) -> tuple[list[dict[str, Any]], set[str], int]:
    """One hostile run's trace rows, the nodes alive at the end, and the last fault's time."""
    doc, alive, last = hostile_scenario(seed, **kw)
    res = Simulation(parse_scenario(doc, f"hostile:{seed}"), seed=seed).run()
    return res.events(), alive, last
