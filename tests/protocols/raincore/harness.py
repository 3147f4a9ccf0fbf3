"""A tiny deterministic host for unit tests: routes Sends between machines with a fixed
latency, runs timers on a virtual clock, and lets a test crash nodes or cut links."""

from __future__ import annotations

import heapq
from typing import Any

from ringcast.core.effects import CancelTimer, Effect, Persist, Record, Send, SetTimer, StateChanged
from ringcast.core.events import Received, Start, TimerFired
from ringcast.core.machine import MachineContext
from ringcast.protocols.raincore import make_raincore

MS = 1_000_000

FAST = {
    "eating_timeout": 2 * MS,
    "busy_eating_timeout": 2 * MS,  # the same hold with and without traffic
    "hungry_timeout": 60 * MS,
    "starving_timeout": 30 * MS,
    "rto": 3 * MS,
    "max_tries": 2,
    "rto_max": 3 * MS,  # a fixed wait (no back-off)
    "initial_token_seq": 11,
}


class Net:
    def __init__(self, members: tuple[str, ...], settings: dict[str, Any] | None = None):
        self.members = members
        self.settings = {**FAST, **(settings or {})}
        self.now = 0
        self.machines: dict[str, Any] = {}
        self.storage: dict[str, dict[str, bytes]] = {}
        self.timers: dict[tuple[str, str], int] = {}
        self.queue: list[tuple[int, int, str, Any]] = []
        self.seq = 0
        self.cut: set[frozenset[str]] = set()
        self.effects: dict[str, list[tuple[int, Effect]]] = {}

    def boot(self, node: str, joining: bool = False) -> None:
        ctx = MachineContext(
            node,
            self.members,
            self.members,
            settings=self.settings,
            storage=dict(self.storage.get(node, {})),
            joining=joining,
        )
        self.machines[node] = make_raincore(ctx)
        for key in [k for k in self.timers if k[0] == node]:
            del self.timers[key]
        self.feed(node, Start())

    def start(self) -> Net:
        for n in self.members:
            self.boot(n)
        return self

    def crash(self, node: str) -> None:
        self.machines.pop(node, None)

    def feed(self, node: str, event: Any) -> list[Effect]:
        m = self.machines.get(node)
        if m is None:
            return []
        out = m.handle(event, self.now)
        self.effects.setdefault(node, []).extend((self.now, e) for e in out)
        for eff in out:
            if type(eff) is Send:
                if frozenset((node, eff.dst)) not in self.cut:
                    self._push(self.now + MS, eff.dst, Received(node, eff.msg))
            elif type(eff) is SetTimer:
                self.seq += 1
                self.timers[(node, eff.name)] = self.seq
                heapq.heappush(
                    self.queue,
                    (self.now + eff.delay, self.seq, node, ("timer", eff.name, self.seq)),
                )
            elif type(eff) is CancelTimer:
                self.timers.pop((node, eff.name), None)
            elif type(eff) is Persist:
                self.storage.setdefault(node, {})[eff.key] = eff.value
        return out

    def _push(self, t: int, node: str, event: Any) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, node, event))

    def run(self, until_ms: float) -> Net:
        until = int(until_ms * MS)
        while self.queue and self.queue[0][0] <= until:
            t, _, node, ev = heapq.heappop(self.queue)
            self.now = t
            if isinstance(ev, tuple):
                _, name, gen = ev
                if self.timers.get((node, name)) != gen:
                    continue
                del self.timers[(node, name)]
                ev = TimerFired(name)
            self.feed(node, ev)
        self.now = until
        return self

    def inner(self, node: str) -> Any:
        return self.machines[node].upper

    def records(self, node: str, kind: str) -> list[dict[str, Any]]:
        return [
            e.fields
            for _, e in self.effects.get(node, [])
            if (type(e) is Record and e.kind == kind)
            or (type(e) is StateChanged and kind == "state")
        ]

    def of_type(self, node: str, tp: type) -> list[Any]:
        return [e for _, e in self.effects.get(node, []) if type(e) is tp]
