"""A node's side of a live run (``ringcast live``): the start gate and the scenario's
workloads, run by ``ringcast node --live-dir DIR``.

The driver of a live run starts each node process ahead of time; the process loads
everything it needs, says so, and waits at the *gate* until the time the driver gives
it, so that a node boots at the scenario's instant rather than a Python start-up later.
The files in ``DIR`` (each written whole under a temporary name, then renamed):

* ``<node>.armed``, written by the node: ``{"pid": ..., "t": ...}``, the monotonic
  time at which it was ready to start;
* ``<node>.start``, written by the driver: ``{"origin_ns": ..., "start_ns": ...}`` on
  the monotonic clock (shared by every network namespace of the machine): the run's
  origin, which the node's trace counts from, and the instant the node boots;
* ``<node>.workload.json``, written by the driver: the scenario's workloads for this
  node (:class:`Planned`), their times relative to the origin.

A workload follows the scenario's schedule from the origin, so a restarted node picks
it up where the clock stands (the arrivals it missed while down are not sent, as in the
simulator). ``rate = 0`` is a saturating workload: messages as fast as flow control
allows, a burst of :data:`~ringcast.runtime.node.BURST` a turn of the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ringcast.runtime.config import ClusterConfig
from ringcast.runtime.group import Group

GATE_POLL_S = 0.002
"""How often a node at the gate looks for its start file."""


@dataclass(frozen=True)
class Planned:
    """One scenario workload as one node runs it (times in ns from the run's origin)."""

    kind: str = "multicast"
    rate: float = 100.0
    size: int = 100
    order: str = "agreed"
    start_ns: int = 0
    count: int | None = None
    duration_ns: int | None = None
    arrivals: str = "constant"
    hold_ns: int = 1_000_000
    seed: int = 0

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Planned:
        return cls(**{f.name: raw[f.name] for f in dataclasses.fields(cls) if f.name in raw})


def write_atomic(path: Path, doc: Any) -> None:
    """Write ``doc`` as JSON to ``path`` under a temporary name, then rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)


def read_plans(live_dir: Path, node: str) -> list[Planned]:
    path = live_dir / f"{node}.workload.json"
    if not path.exists():
        return []
    return [Planned.from_json(w) for w in json.loads(path.read_text())]


async def pass_gate(config: ClusterConfig, node: str, live_dir: Path) -> ClusterConfig:
    """Say the node is armed, wait for its start file, sleep until its start instant;
    return ``config`` with the run's origin (on the monotonic clock)."""
    write_atomic(live_dir / f"{node}.armed", {"pid": os.getpid(), "t": time.monotonic_ns()})
    start_file = live_dir / f"{node}.start"
    while not start_file.exists():
        await asyncio.sleep(GATE_POLL_S)
    doc = json.loads(start_file.read_text())
    wait = (int(doc["start_ns"]) - time.monotonic_ns()) / 1e9
    if wait > 0:
        await asyncio.sleep(wait)
    return dataclasses.replace(config, origin_ns=int(doc["origin_ns"]), origin_clock="monotonic")


def arrivals(p: Planned, node: str, origin_ns: int) -> Iterator[int]:
    """The workload's arrival instants (monotonic ns), the same whichever incarnation of
    the node asks: constant spacing, or Poisson from a generator seeded by the run's
    seed and the node."""
    start = origin_ns + p.start_ns
    end = None if p.duration_ns is None else start + p.duration_ns
    gap = 1e9 / p.rate
    rng = random.Random(f"{p.seed}:{node}:{p.start_ns}")
    t = float(start)
    k = 0
    while (p.count is None or k < p.count) and (end is None or t < end):
        yield int(t)
        k += 1
        t += rng.expovariate(1.0 / gap) if p.arrivals == "poisson" else gap


async def run_planned(g: Group, p: Planned, origin_ns: int, payload: Any) -> None:
    """Run one workload on ``g`` until its end (cancel it to stop it sooner).
    ``payload(size)`` makes a message body."""
    if p.rate == 0:
        await _saturate(g, p, origin_ns, payload)
        return
    for at in arrivals(p, g.node_id, origin_ns):
        now = time.monotonic_ns()
        if at < now - 1_000_000_000 / p.rate:
            continue  # missed while this incarnation did not exist (or was paused)
        if at > now:
            await asyncio.sleep((at - now) / 1e9)
        if p.kind == "lock":
            async with g.lock():
                await asyncio.sleep(p.hold_ns / 1e9)
        else:
            await g.multicast(payload(p.size), p.order)


async def _saturate(g: Group, p: Planned, origin_ns: int, payload: Any) -> None:
    from ringcast.runtime.node import BURST

    start = origin_ns + p.start_ns
    now = time.monotonic_ns()
    if start > now:
        await asyncio.sleep((start - now) / 1e9)
    end = math.inf if p.duration_ns is None else start + p.duration_ns
    sent = 0
    while time.monotonic_ns() < end and (p.count is None or sent < p.count):
        n = BURST if p.count is None else min(BURST, p.count - sent)
        await g.multicast_many((payload(p.size) for _ in range(n)), p.order)
        sent += n
