"""The ``basic`` protocol machine (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire
from ringcast.core.effects import Backpressure, Deliver, Effect, InstallView, Persist, Record, Send
from ringcast.core.events import (
    Event,
    Received,
    SendFailed,
    Start,
    Submit,
    Suspected,
    Unsuspected,
)
from ringcast.core.ids import NodeId, View
from ringcast.core.machine import Machine, MachineContext
from ringcast.layers import HeartbeatDetector, ReliableUnicast, Stack

EPOCH_KEY = "basic.epoch"


@wire(0x0010)
@dataclass(frozen=True, slots=True)
class BasicData:
    """An application message, sent to every member by reliable unicast.

    ``epoch`` is the sender's boot number and ``seq`` numbers its messages to this one
    destination within that boot (1, 2, ...), for the flow-control acknowledgement.
    """

    msg_id: str
    payload: bytes
    order: str
    epoch: int = 0
    seq: int = 0


@wire(0x0011)
@dataclass(frozen=True, slots=True)
class BasicAck:
    """Flow control: the receiver has delivered every message of the sender's boot
    ``epoch`` to it up to ``upto`` (cumulative, so a lost or late one is superseded)."""

    epoch: int
    upto: int


@dataclass(slots=True)
class _Peer:
    """What this node sent to one peer (``sent``) and what the peer has acknowledged."""

    sent: int = 0
    acked: int = 0

    @property
    def in_flight(self) -> int:
        return self.sent - self.acked


@dataclass(slots=True)
class _From:
    """What this node received from one sender's boot ``epoch`` and last acknowledged."""

    epoch: int
    upto: int = 0
    acked: int = 0


class BasicMachine:
    def __init__(self, ctx: MachineContext, *, window: int = 256):
        if window < 1:
            raise ValueError("window must be at least 1")
        self.node_id = ctx.node_id
        initial = () if ctx.joining else ctx.members
        self.members: set[NodeId] = {*initial, ctx.node_id}
        self.window = window
        self.ack_every = max(1, window // 4)
        self.epoch = int(ctx.storage.get(EPOCH_KEY, b"0")) + 1
        self.peers: dict[NodeId, _Peer] = {}
        self.senders: dict[NodeId, _From] = {}
        self.blocked = False

    def _view(self) -> InstallView:
        members = tuple(sorted(self.members))
        return InstallView(View("+".join(members), members))

    def _peer(self, node: NodeId) -> _Peer:
        peer = self.peers.get(node)
        if peer is None:
            peer = self.peers[node] = _Peer()
        return peer

    def in_flight(self, peer: NodeId) -> int:
        """Messages sent to ``peer`` (this boot) that it has not acknowledged yet."""
        p = self.peers.get(peer)
        return p.in_flight if p is not None else 0

    def handle(self, event: Event, now: int) -> list[Effect]:
        tp = type(event)
        if tp is Received:
            assert isinstance(event, Received)
            msg = event.msg
            if type(msg) is BasicData:
                return self._on_data(event.src, msg)
            if type(msg) is BasicAck:
                return self._on_ack(event.src, msg)
            return [Record.of("drop", src=event.src, reason=f"unexpected {type(msg).__name__}")]
        if tp is Submit:
            assert isinstance(event, Submit)
            return self._submit(event)
        if tp is SendFailed:
            assert isinstance(event, SendFailed)
            # The transport gave up on everything queued to dst: none of it is in flight.
            return self._settle(event.dst) if type(event.msg) is BasicData else []
        if tp is Suspected:
            assert isinstance(event, Suspected)
            out = self._settle(event.node)
            if event.node in self.members:
                self.members.discard(event.node)
                out.append(self._view())
            return out
        if tp is Unsuspected:
            assert isinstance(event, Unsuspected)
            if event.node not in self.members:
                self.members.add(event.node)
                return [self._view()]
            return []
        if tp is Start:
            return [Persist(EPOCH_KEY, str(self.epoch).encode()), self._view()]
        return []

    # -- sending side

    def _submit(self, event: Submit) -> list[Effect]:
        out: list[Effect] = []
        for m in sorted(self.members):
            if m == self.node_id:
                continue
            peer = self._peer(m)
            peer.sent += 1
            data = BasicData(event.msg_id, event.payload, event.order, self.epoch, peer.sent)
            out.append(Send(m, data, reliable=True))
        out.append(Deliver(event.msg_id, event.payload, event.order, self.node_id))
        if not self.blocked and any(
            self.in_flight(m) >= self.window for m in self.members if m != self.node_id
        ):
            self.blocked = True
            out.append(Backpressure(True))
        return out

    def _on_ack(self, src: NodeId, ack: BasicAck) -> list[Effect]:
        peer = self.peers.get(src)
        if peer is None or ack.epoch != self.epoch:
            return []  # an ack for an earlier boot of this node
        peer.acked = max(peer.acked, min(ack.upto, peer.sent))
        return self._maybe_unblock()

    def _settle(self, node: NodeId) -> list[Effect]:
        peer = self.peers.get(node)
        if peer is not None:
            peer.acked = peer.sent
        return self._maybe_unblock()

    def _maybe_unblock(self) -> list[Effect]:
        if self.blocked and all(
            self.in_flight(m) <= self.window // 2 for m in self.members if m != self.node_id
        ):
            self.blocked = False
            return [Backpressure(False)]
        return []

    # -- receiving side

    def _on_data(self, src: NodeId, msg: BasicData) -> list[Effect]:
        # A message meant for an earlier boot of this node never gets here: the reliable
        # layer refuses it (docs/protocols/raincore.md, decision 34).
        out: list[Effect] = [Deliver(msg.msg_id, msg.payload, msg.order, src)]
        if msg.seq <= 0:
            return out  # not flow controlled (a peer without a window)
        rx = self.senders.get(src)
        if rx is None or msg.epoch != rx.epoch:
            # A new boot of the sender (the transport drops frames of older ones).
            rx = self.senders[src] = _From(msg.epoch)
        if msg.seq < rx.upto:
            # The reliable layer hands over one boot's messages in order, so its seqs only
            # grow: the higher one was corrupted. Take this one, or rx.upto would stay up
            # there and no ack would ever be sent again: the sender, its window full,
            # would hold its application's submits for good (the garble soak).
            rx.acked = min(rx.acked, msg.seq - 1)
        rx.upto = msg.seq
        if rx.upto - rx.acked >= self.ack_every:
            rx.acked = rx.upto
            out.append(Send(src, BasicAck(rx.epoch, rx.upto), reliable=True))
        return out


def make_basic(ctx: MachineContext) -> Machine:
    from ringcast.protocols.basic import SPEC  # registered after this module loads

    s = SPEC.resolve_settings(ctx.settings)
    return Stack(
        BasicMachine(ctx, window=int(s["window"])),
        reliable=ReliableUnicast(
            ctx.node_id, rto=s["rto"], max_tries=s["max_tries"], storage=dict(ctx.storage)
        ),
        detector=HeartbeatDetector.from_settings(ctx.node_id, ctx.peers, s),
    )
