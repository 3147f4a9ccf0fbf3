"""Reliable unicast: Raincore's Transport Manager (the Raincore paper, section 1.1).

"The Raincore Transport Manager provides the reliable unicast for the transmission of
the token ... When the Transport Manager fails to deliver a message to a node, it will
notify the Group Communication Manager." This layer gives, per destination:

- sequence numbers within a sender *incarnation* (a counter persisted at every start,
  so a restarted sender is never mistaken for a duplicate of its old self);
- cumulative acknowledgements, duplicate suppression and in-order delivery per peer;
- retransmission of every unacknowledged message each ``rto`` nanoseconds, and after
  ``max_tries`` transmissions of the oldest one without progress, failure-on-delivery:
  a :class:`~ringcast.core.events.SendFailed` for every message still queued to that peer.
  With ``rto_max`` above ``rto`` the wait doubles after each transmission without
  progress, up to ``rto_max`` (RFC 6298's back-off, section 5.5): the first
  retransmission still comes after ``rto``, but the whole budget
  (:attr:`ReliableUnicast.budget`) outlasts a receiver the scheduler keeps off the CPU
  for longer than ``rto * max_tries``.

Each data frame carries ``base``, the sender's oldest unacknowledged sequence number,
so a receiver with no state for the sender (it restarted, or never heard of it)
starts there instead of waiting forever for messages that were acknowledged already.

A receiver that restarts within its sender's retry window is a new process, not the
one the sender's queued frames were meant for, and the Raincore paper's Transport Manager knows
no incarnations of its receivers (docs/protocols/raincore.md, decision 34). Each data
frame therefore names the incarnation of its destination the sender had last heard of
when it first sent it (``dst_incarnation``; 0: none yet), and each ack the acker's own
(``acker_incarnation``); a node also hears a peer's incarnation in that peer's data
frames, and keeps the highest. A receiver does not hand up a frame named for an
earlier incarnation of itself: that one may have delivered it already (its ack lost,
or not yet sent, when it crashed). It records a ``drop``, takes the frame's place in
the sequence as if delivered and acknowledges it, so the link goes on. The sender,
told by the ack that a later incarnation took those frames, reports each of them with
``SendFailed``: delivered to the process it was meant for or not, it never will be now.
A frame sent before the sender heard of the receiver at all (0) is handed up, as before.

With a ``window`` (Tribes' and basic's; Raincore keeps its own flow control and sets
none), the layer is also the protocol's flow control toward the application: when a
send leaves ``window`` frames unacknowledged to some peer it emits
``Backpressure(True)``, and ``Backpressure(False)`` once every peer is at or below half
of it again (acks, or ``SendFailed`` after ``max_tries``). Frames are never held back,
so a token or a control message goes out at once whatever the window; the window only
stops the application from queueing without bound (docs/protocols/tribes.md, decision
20).

With ``rto_ceiling`` (Tribes'), the wait before a retransmission adapts to each peer
as TCP's does (RFC 6298, section 2, and Karn's rule): the layer times one frame at a
time per peer, from its first transmission to the ack that covers it, never a frame
that was retransmitted, keeps a smoothed round-trip time and its variation, and waits
``srtt + 4 * rttvar``, never less than ``rto`` nor more than ``rto_ceiling``. A peer
that acks within ``rto`` is retransmitted to as before; a peer the scheduler keeps
busy (its acks queued behind its own load) is given the time it takes, instead of
its whole window again every ``rto``, which would only lengthen its queue (docs/
protocols/tribes.md, decision 26). Failure-on-delivery still comes after
``max_tries`` transmissions without progress, each wait the peer's current one.

What the Raincore paper leaves open, decided here against frames no honest sender produces (a
member's corrupted or hostile frame that passed authentication; docs/protocols/raincore.md,
"The Transport Manager against frames it should never see"):

- a frame with ``base`` above its ``seq``, a negative number or an incarnation below 1
  (``dst_incarnation``: below 0) is refused and recorded as a drop, and so is an ack
  whose ``acker_incarnation`` is below 1;
- an ack for a sequence number this node never sent is ignored: it would take messages
  off the queue that the peer never received;
- a ``dst_incarnation`` above the receiver's own is handed up: no honest sender names
  one, but a receiver that lost its stable storage counts its incarnations from 1
  again, and a peer's incarnation corrupted upwards stays the highest heard. Either
  costs that link the protection against replays to a restarted receiver, never its
  traffic;
- a receiver forgets its state for a sender that brought nothing new (no sequence
  number not seen before) for ``forget_after``, at least a second and four times the
  sender's whole retry budget (``max_tries`` x ``rto``). An honest sender has then
  nothing left unacknowledged that the receiver took, so the next frame starts the
  state afresh at its ``base``, as for a restarted receiver, though never below what the
  same incarnation already delivered (a paused receiver reads, late, retransmissions
  whose ``base`` is below that). That floor is kept only within ``MAX_LAG`` of the
  frame's ``seq``: no honest sender's frames lag what the receiver delivered by a million
  numbers, and a floor that far up was set by a frame whose ``seq`` and ``base`` were
  both corrupted. A bogus frame therefore blocks the link for ``forget_after``, not for
  ever; a bogus ``base`` alone is refused at once (above its ``seq``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ringcast.core.codec import wire
from ringcast.core.effects import (
    Backpressure,
    CancelTimer,
    Effect,
    Persist,
    Record,
    Send,
    SetTimer,
)
from ringcast.core.events import Event, Received, SendFailed
from ringcast.core.frozen import fast_init
from ringcast.core.ids import NodeId

INCARNATION_KEY = "rt.incarnation"
TIMER_PREFIX = "rt:"
FORGET_FLOOR = 1_000_000_000
"""``forget_after`` is never shorter than this (ns), whatever ``rto`` and ``max_tries``."""
MAX_LAG = 1 << 20
"""How far a sender's frames may lag what a receiver already delivered of it (a paused
receiver reading old retransmissions) for that to be taken as the truth."""


@wire(0x0001)
@fast_init
@dataclass(frozen=True, slots=True)
class RtData:
    """A reliable-unicast data frame carrying one message of the layer above.

    ``incarnation`` is the sender's; ``dst_incarnation`` the destination's, as the
    sender had last heard of it when it first sent the frame (0: not heard of yet).
    """

    incarnation: int
    seq: int
    base: int
    payload: object
    dst_incarnation: int = 0


@wire(0x0002)
@fast_init
@dataclass(frozen=True, slots=True)
class RtAck:
    """Cumulative ack: every frame of ``incarnation`` below ``next_seq`` has been received
    (delivered, or refused as meant for an earlier incarnation of the acker), by the
    acker's incarnation ``acker_incarnation``."""

    incarnation: int
    next_seq: int
    acker_incarnation: int


_REFUSED = object()
"""In a receiver's ``pending``: a frame refused (an earlier incarnation of this node's)."""


@dataclass
class _Outbound:
    next_seq: int = 0
    unacked: dict[int, tuple[Any, int]] = field(default_factory=dict)
    """seq -> (payload, dst_incarnation it was sent with), in seq order."""
    tries: int = 0  # transmissions of the oldest unacked frame without progress
    network: int | None = None
    # With an adaptive timeout (rto_ceiling): the peer's wait before a retransmission
    # (0: the layer's rto), the smoothed round-trip time and its variation (0: no
    # sample yet), and the frame being timed (-1: none) with its first transmission.
    rto: int = 0
    srtt: int = 0
    rttvar: int = 0
    timed: int = -1
    timed_at: int = 0


@dataclass
class _Inbound:
    incarnation: int
    expected: int
    heard: int  # when a frame last brought a sequence number not seen before
    pending: dict[int, Any] = field(default_factory=dict)


class ReliableUnicast:
    """The sans-IO reliable-unicast layer of one node (a :class:`~ringcast.layers.base.Layer`).

    Above it, ``Send(..., reliable=True)`` is delivered or reported with ``SendFailed``;
    below it travel ``RtData`` frames and their ``RtAck``.
    """

    timer_prefix: ClassVar[str] = TIMER_PREFIX
    down_types: ClassVar[frozenset[type]] = frozenset({Send})
    up_types: ClassVar[frozenset[type]] = frozenset({Received})

    def __init__(
        self,
        node_id: NodeId,
        *,
        rto: int,
        max_tries: int,
        storage: dict[str, bytes],
        window: int | None = None,
        rto_max: int | None = None,
        rto_ceiling: int | None = None,
    ):
        if rto <= 0:
            raise ValueError("rto must be positive")
        if rto_max is not None and rto_max < rto:
            raise ValueError("rto_max must be at least rto")
        if max_tries < 1:
            raise ValueError("max_tries must be at least 1")
        if window is not None and window < 2:
            raise ValueError("window must be at least 2")
        if rto_ceiling is not None and rto_ceiling < rto:
            raise ValueError("rto_ceiling must be at least rto")
        self.rto_ceiling = rto_ceiling
        """The adaptive timeout's upper bound (None: no adaptation, ``rto`` throughout)."""
        self.window = window
        self.blocked = False
        """Whether this layer has the application held (``Backpressure(True)`` emitted)."""
        self.node_id = node_id
        self.rto = rto
        self.rto_max = rto if rto_max is None else rto_max
        self.max_tries = max_tries
        self.incarnation = int(storage.get(INCARNATION_KEY, b"0")) + 1
        self.forget_after = max(FORGET_FLOOR, 4 * self.budget)
        self._out: dict[NodeId, _Outbound] = {}
        self._in: dict[NodeId, _Inbound] = {}
        self._forgotten: dict[NodeId, tuple[int, int]] = {}
        """The (incarnation, expected) of each sender's last forgotten state."""
        self.peer_incarnation: dict[NodeId, int] = {}
        """The highest incarnation of each peer heard of (its data frames and acks)."""
        self.retransmissions = 0

    def wait(self, tries: int, rto: int = 0) -> int:
        """How long to wait for an ack after the ``tries``-th transmission (ns), from a
        peer whose adaptive timeout is ``rto`` (0: the layer's)."""
        rto = rto or self.rto
        return min(max(self.rto_max, rto), rto << min(tries - 1, 32))

    def _sample(self, ob: _Outbound, rtt: int) -> None:
        """One round-trip time measured to a peer: RFC 6298's update of its timeout."""
        if ob.srtt == 0:
            ob.srtt, ob.rttvar = rtt, rtt // 2
        else:
            ob.rttvar += (abs(ob.srtt - rtt) - ob.rttvar) // 4
            ob.srtt += (rtt - ob.srtt) // 8
        ceiling = self.rto_ceiling
        assert ceiling is not None
        ob.rto = min(ceiling, max(self.rto, ob.srtt + 4 * ob.rttvar))

    def _first_wait(self, ob: _Outbound) -> int:
        """The wait before the first retransmission to ``ob``'s peer (ns): its adaptive
        timeout, else the layer's ``rto``."""
        return ob.rto or self.rto

    def peer_rto(self, dst: NodeId) -> int:
        """The wait before the first retransmission to ``dst`` now (ns)."""
        ob = self._out.get(dst)
        return self.rto if ob is None else self._first_wait(ob)

    @property
    def budget(self) -> int:
        """From the first transmission to failure-on-delivery, for a peer that never
        answers (ns): ``rto * max_tries`` without back-off."""
        return sum(self.wait(k) for k in range(1, self.max_tries + 1))

    # -- the Layer interface

    def start(self, now: int = 0) -> list[Effect]:
        return [Persist(INCARNATION_KEY, str(self.incarnation).encode())]

    def up(self, event: Event, now: int) -> tuple[list[Event], list[Effect]]:
        if type(event) is Received:
            msg = event.msg
            if type(msg) is RtData:
                return self.on_data(event.src, msg, event.network, now)
            if type(msg) is RtAck:
                return self.on_ack(event.src, msg, now)
        return [event], []

    def down(self, effect: Effect, now: int) -> tuple[list[Event], list[Effect]]:
        if type(effect) is Send and effect.reliable:
            return [], self.send(effect.dst, effect.msg, effect.network, now)
        return [], [effect]

    def timer(self, name: str, now: int) -> tuple[list[Event], list[Effect]]:
        return self.on_timer(name)

    # -- sending

    def send(
        self, dst: NodeId, payload: Any, network: int | None = None, now: int = 0
    ) -> list[Effect]:
        ob = self._out.get(dst)
        if ob is None:
            ob = self._out[dst] = _Outbound()
        ob.network = network
        seq = ob.next_seq
        ob.next_seq += 1
        unacked = ob.unacked
        was_idle = not unacked
        dst_inc = self.peer_incarnation.get(dst, 0)
        unacked[seq] = (payload, dst_inc)
        base = next(iter(unacked))  # the oldest unacknowledged (_base: unacked is not empty)
        effects: list[Effect] = [
            Send(dst, RtData(self.incarnation, seq, base, payload, dst_inc), network)
        ]
        if self.rto_ceiling is not None and ob.timed < 0:
            ob.timed, ob.timed_at = seq, now
        if was_idle:
            ob.tries = 1
            effects.append(SetTimer(TIMER_PREFIX + dst, self._first_wait(ob)))
        if self.window is not None and not self.blocked and len(unacked) >= self.window:
            self.blocked = True
            effects.append(Backpressure(True))
        return effects

    def _release(self) -> list[Effect]:
        """``Backpressure(False)`` once every peer is at or below half the window."""
        if not self.blocked or self.window is None:
            return []
        if any(len(ob.unacked) > self.window // 2 for ob in self._out.values()):
            return []
        self.blocked = False
        return [Backpressure(False)]

    @staticmethod
    def _base(ob: _Outbound) -> int:
        return next(iter(ob.unacked)) if ob.unacked else ob.next_seq

    def on_timer(self, name: str) -> tuple[list[Event], list[Effect]]:
        dst = name[len(TIMER_PREFIX) :]
        ob = self._out.get(dst)
        if ob is None or not ob.unacked:
            return [], []
        if ob.tries >= self.max_tries:
            failed = [p for p, _ in ob.unacked.values()]
            ob.unacked.clear()
            ob.tries = 0
            ob.timed = -1
            up: list[Event] = [SendFailed(dst, p) for p in failed]
            return up, [Record.of("send_failed", dst=dst, messages=len(failed)), *self._release()]
        ob.tries += 1
        ob.timed = -1  # Karn: an ack of a retransmitted frame times nothing
        base = self._base(ob)
        effects: list[Effect] = []
        for seq, (payload, dst_inc) in ob.unacked.items():
            # The destination's incarnation the frame was first sent to, not the one
            # heard of since: a later one must not take what was meant for an earlier.
            frame = RtData(self.incarnation, seq, base, payload, dst_inc)
            effects.append(Send(dst, frame, ob.network))
            self.retransmissions += 1
        effects.append(SetTimer(name, self.wait(ob.tries, ob.rto)))
        return [], effects

    # -- receiving

    def on_data(
        self, src: NodeId, frame: RtData, network: int, now: int = 0
    ) -> tuple[list[Event], list[Effect]]:
        incarnation, seq, base = frame.incarnation, frame.seq, frame.base
        dst_incarnation = frame.dst_incarnation
        if incarnation < 1 or seq < 0 or not 0 <= base <= seq or dst_incarnation < 0:
            # No sender numbers its frames so: the frame was corrupted or forged.
            return [], [Record.of("drop", reason="implausible_rtdata", src=src)]
        if incarnation > self.peer_incarnation.get(src, 0):  # heard of a new boot
            self.peer_incarnation[src] = incarnation
        ib = self._in.get(src)
        if ib is not None and now - ib.heard >= self.forget_after:
            # Nothing new from src for forget_after: start afresh (module doc), but not
            # below what this incarnation already delivered: a receiver that was paused
            # reads retransmissions sent long ago whose base is below it.
            self._forgotten[src] = (ib.incarnation, ib.expected)
            ib = None
        if ib is None or incarnation > ib.incarnation:
            start = base
            floor = self._forgotten.get(src)
            if floor is not None and floor[0] == incarnation and start < floor[1] <= seq + MAX_LAG:
                start = floor[1]
            ib = self._in[src] = _Inbound(incarnation, start, now)
        elif incarnation < ib.incarnation:
            # a frame from an older incarnation of src, which is gone: thrown away, counted
            return [], [
                Record.of(
                    "drop",
                    reason="from_an_earlier_incarnation",
                    src=src,
                    incarnation=incarnation,
                )
            ]
        pending = ib.pending
        if base > ib.expected:
            # The sender gave up on (or had acked) everything below base: skip ahead.
            ib.expected = base
            pending = ib.pending = {s: p for s, p in pending.items() if s >= base}
        up: list[Event] = []
        effects: list[Effect] = []
        if seq >= ib.expected and seq not in pending:
            ib.heard = now
            if 0 < dst_incarnation < self.incarnation:
                # Meant for an earlier incarnation of this node, which may have delivered
                # it (module doc): its place in the sequence is taken, nothing handed up.
                pending[seq] = _REFUSED
                effects.append(
                    Record.of(
                        "drop",
                        reason="for_an_earlier_incarnation",
                        src=src,
                        seq=seq,
                        dst_incarnation=dst_incarnation,
                    )
                )
            else:
                pending[seq] = frame.payload
            expected = ib.expected
            while expected in pending:
                payload = pending.pop(expected)
                if payload is not _REFUSED:
                    up.append(Received(src, payload, network))
                expected += 1
            ib.expected = expected
        effects.append(Send(src, RtAck(ib.incarnation, ib.expected, self.incarnation), network))
        return up, effects

    def on_ack(self, src: NodeId, ack: RtAck, now: int = 0) -> tuple[list[Event], list[Effect]]:
        acker_incarnation, next_seq = ack.acker_incarnation, ack.next_seq
        if acker_incarnation < 1:
            return [], [Record.of("drop", reason="implausible_rtack", src=src)]
        ob = self._out.get(src)
        if ob is None or ack.incarnation != self.incarnation or next_seq > ob.next_seq:
            return [], []  # not for this incarnation, or acking what was never sent
        if acker_incarnation > self.peer_incarnation.get(src, 0):  # heard of a new boot
            self.peer_incarnation[src] = acker_incarnation
        unacked = ob.unacked
        acked = [s for s in unacked if s < next_seq]
        if not acked:
            return [], []
        if 0 <= ob.timed < next_seq:
            self._sample(ob, now - ob.timed_at)
            ob.timed = -1
        up: list[Event] = []
        for seq in acked:
            payload, dst_inc = unacked.pop(seq)
            if 0 < dst_inc < acker_incarnation:
                # Taken by a later incarnation than the one it was meant for, which
                # refused it: not delivered there (module doc).
                up.append(SendFailed(src, payload, unanswered=False))
        effects: list[Effect] = []
        if up:
            effects.append(
                Record.of("send_failed", dst=src, messages=len(up), reason="receiver_restarted")
            )
        if not unacked:
            effects.append(CancelTimer(TIMER_PREFIX + src))
        else:
            ob.tries = 1
            effects.append(SetTimer(TIMER_PREFIX + src, self._first_wait(ob)))
        if self.blocked:
            effects += self._release()
        return up, effects

    def forget(self, dst: NodeId) -> None:
        """Drop everything queued to ``dst`` without reporting it (the upper layer gave up)."""
        ob = self._out.get(dst)
        if ob is not None:
            ob.unacked.clear()
            ob.timed = -1
