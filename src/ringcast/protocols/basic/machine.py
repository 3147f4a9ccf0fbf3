"""The ``basic`` protocol machine (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire
from ringcast.core.effects import Deliver, Effect, InstallView, Record, Send
from ringcast.core.events import Event, Received, Start, Submit, Suspected, Unsuspected
from ringcast.core.ids import NodeId, View
from ringcast.core.machine import Machine, MachineContext
from ringcast.layers import HeartbeatDetector, ReliableUnicast, Stack


@wire(0x0010)
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

    def _view(self) -> InstallView:
        members = tuple(sorted(self.members))
        return InstallView(View("+".join(members), members))

    def handle(self, event: Event, now: int) -> list[Effect]:
        tp = type(event)
        if tp is Received:
            assert isinstance(event, Received)
            msg = event.msg
            if type(msg) is BasicData:
                # A message meant for an earlier boot of this node never gets here: the
                # reliable layer refuses it (docs/protocols/raincore.md, decision 34).
                return [Deliver(msg.msg_id, msg.payload, msg.order, event.src)]
            return [Record.of("drop", src=event.src, reason=f"unexpected {type(msg).__name__}")]
        if tp is Submit:
            assert isinstance(event, Submit)
            out: list[Effect] = [
                Send(m, BasicData(event.msg_id, event.payload, event.order), reliable=True)
                for m in sorted(self.members)
                if m != self.node_id
            ]
            out.append(Deliver(event.msg_id, event.payload, event.order, self.node_id))
            return out
        if tp is Suspected:
            assert isinstance(event, Suspected)
            if event.node in self.members:
                self.members.discard(event.node)
                return [self._view()]
            return []
        if tp is Unsuspected:
            assert isinstance(event, Unsuspected)
            if event.node not in self.members:
                self.members.add(event.node)
                return [self._view()]
            return []
        if tp is Start:
            return [self._view()]
        return []  # SendFailed: the reliable layer has already let its window go


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
