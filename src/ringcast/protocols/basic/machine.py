"""The ``basic`` protocol machine (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire
from ringcast.core.effects import Deliver, Effect, InstallView, Record, Send
from ringcast.core.events import (
    Event,
    Received,
    SendFailed,
    Start,
    Submit,
    Suspected,
    Unsuspected,
)
from ringcast.core.frozen import fast_init
from ringcast.core.fsm import Driver
from ringcast.core.ids import NodeId, View
from ringcast.core.machine import Machine, MachineContext
from ringcast.layers import HeartbeatDetector, ReliableUnicast, Stack
from ringcast.protocols.basic._state import TABLE, Action, Ev, State


@wire(0x0010)
@fast_init
@dataclass(frozen=True, slots=True)
class BasicData:
    """An application message, sent to every member by reliable unicast."""

    msg_id: str
    payload: bytes
    order: str


class BasicMachine:
    """Membership from the failure detector, multicast as a reliable fan-out; flow
    control is the reliable layer's window (the package's docstring)."""

    def __init__(self, ctx: MachineContext):
        self.node_id = ctx.node_id
        initial = () if ctx.joining else ctx.members
        self.members: set[NodeId] = {*initial, ctx.node_id}
        self._peers = self._others()  # the members but this node, sorted: who a submit goes to
        self.state = State.MEMBER
        self.fsm = Driver(
            TABLE,
            self,
            {
                Action.START: self._start,
                Action.DELIVER: self._deliver,
                Action.SEND: self._send,
                Action.REMOVE: self._remove,
                Action.ADD: self._add,
            },
        )

    def _others(self) -> tuple[NodeId, ...]:
        return tuple(m for m in sorted(self.members) if m != self.node_id)

    def _view(self) -> InstallView:
        self._peers = self._others()
        members = tuple(sorted(self.members))
        return InstallView(View("+".join(members), members))

    def handle(self, event: Event, now: int) -> list[Effect]:
        tp = type(event)
        if tp is Received:
            msg = event.msg  # type: ignore[union-attr]
            src = event.src  # type: ignore[union-attr]
            if type(msg) is BasicData:
                return self.fsm.step(_DATA, now, src, msg)
            return [Record.of("drop", src=src, reason=f"unexpected {type(msg).__name__}")]
        ev = _EVENTS.get(tp)
        return [] if ev is None else self.fsm.step(ev, now, event)

    # ------------------------------------------------------------------ actions

    def _start(self, now: int, event: Start) -> list[Effect]:
        return [self._view()]

    def _deliver(self, now: int, src: NodeId, msg: BasicData) -> list[Effect]:
        # A message meant for an earlier boot of this node never gets here: the
        # reliable layer refuses it (docs/protocols/raincore.md, decision 34).
        return [Deliver(msg.msg_id, msg.payload, msg.order, src)]

    def _send(self, now: int, event: Submit) -> list[Effect]:
        data = BasicData(event.msg_id, event.payload, event.order)
        out: list[Effect] = [Send(m, data, reliable=True) for m in self._peers]
        out.append(Deliver(event.msg_id, event.payload, event.order, self.node_id))
        return out

    def _remove(self, now: int, event: Suspected) -> list[Effect]:
        if event.node in self.members:
            self.members.discard(event.node)
            return [self._view()]
        return []

    def _add(self, now: int, event: Unsuspected) -> list[Effect]:
        if event.node not in self.members:
            self.members.add(event.node)
            return [self._view()]
        return []


_DATA = Ev.DATA
_EVENTS: dict[type, Ev] = {
    Start: Ev.START,
    Submit: Ev.SUBMIT,
    Suspected: Ev.SUSPECTED,
    Unsuspected: Ev.UNSUSPECTED,
    SendFailed: Ev.SEND_FAILED,
}


def make_basic(ctx: MachineContext) -> Machine:
    from ringcast.protocols.basic import SPEC  # registered after this module loads

    s = SPEC.resolve_settings(ctx.settings)
    return Stack(
        BasicMachine(ctx),
        reliable=ReliableUnicast(
            ctx.node_id,
            rto=s["rto"],
            max_tries=s["max_tries"],
            storage=dict(ctx.storage),
            window=int(s["window"]),
        ),
        detector=HeartbeatDetector.from_settings(ctx.node_id, ctx.peers, s),
    )
