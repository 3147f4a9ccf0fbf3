"""Probe protocols for testing the simulator itself."""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire
from ringcast.core.effects import (
    EVERY_NETWORK,
    Backpressure,
    Deliver,
    Effect,
    LockGranted,
    LockReleased,
    Multicast,
    Persist,
    Record,
    SetTimer,
)
from ringcast.core.events import (
    Event,
    LockRelease,
    LockRequest,
    Received,
    Start,
    Stop,
    Submit,
    TimerFired,
)
from ringcast.core.machine import MachineContext
from ringcast.protocols.registry import ProtocolSpec, Setting, register

MS = 1_000_000


@wire(0xFE01)
@dataclass(frozen=True, slots=True)
class Ping:
    seq: int


class Pinger:
    """The first member multicasts Ping(n) every ``period``; everyone records what arrives.

    Boots are recorded with the persisted boot count, so restarts are visible.
    """

    def __init__(self, ctx: MachineContext):
        self.node_id = ctx.node_id
        self.leader = ctx.members[0]
        self.period = ctx.settings["period"]
        self.seq = 0
        self.boots = int(ctx.storage.get("boots", b"0")) + 1
        self.joining = ctx.joining

    def handle(self, event: Event, now: int) -> list[Effect]:
        if isinstance(event, Start):
            out: list[Effect] = [
                Persist("boots", str(self.boots).encode()),
                Record.of("boot", boots=self.boots, joining=self.joining),
            ]
            if self.node_id == self.leader:
                out.append(SetTimer("ping", self.period))
            return out
        if isinstance(event, TimerFired):
            self.seq += 1
            return [Multicast(Ping(self.seq), EVERY_NETWORK), SetTimer("ping", self.period)]
        if isinstance(event, Received):
            return [Record.of("got", src=event.src, seq=event.msg.seq, network=event.network)]
        if isinstance(event, Stop):
            return [Record.of("stopping")]
        return []


register(ProtocolSpec("test_pinger", Pinger, settings={"period": Setting("duration", 10 * MS)}))


class Queue:
    """Accepts submits into a bounded queue drained by a timer; signals Backpressure.

    Also grants the lock at once (a fake, local lock) to test the host's lock plumbing.
    """

    def __init__(self, ctx: MachineContext):
        self.node_id = ctx.node_id
        self.bound = ctx.settings["bound"]
        self.queue: list[Submit] = []
        self.blocked = False

    def handle(self, event: Event, now: int) -> list[Effect]:
        out: list[Effect] = []
        if isinstance(event, Submit):
            if len(self.queue) >= self.bound:
                return [Record.of("overflow")]
            self.queue.append(event)
            if len(self.queue) == 1:
                out.append(SetTimer("drain", 5 * MS))
            if len(self.queue) >= self.bound and not self.blocked:
                self.blocked = True
                out.append(Backpressure(True))
        elif isinstance(event, TimerFired):
            sub = self.queue.pop(0)
            out.append(Deliver(sub.msg_id, sub.payload, sub.order, self.node_id))
            if self.queue:
                out.append(SetTimer("drain", 5 * MS))
            if self.blocked and len(self.queue) < self.bound:
                self.blocked = False
                out.append(Backpressure(False))
        elif isinstance(event, LockRequest):
            out.append(LockGranted())
        elif isinstance(event, LockRelease):
            out.append(LockReleased())
        return out


register(ProtocolSpec("test_queue", Queue, settings={"bound": Setting("int", 3)}, offers_lock=True))
