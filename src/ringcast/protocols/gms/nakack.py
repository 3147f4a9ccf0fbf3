"""Reliable per-sender FIFO multicast inside a view: JGroups' NAKACK2 and STABLE.

Each member numbers the messages it multicasts in a view (``seqno`` 1, 2, ...) and keeps
them until they are *stable*. A receiver delivers a sender's messages in seqno order;
a gap makes it send a negative acknowledgement (:class:`XmitReq`) to the sender, which
retransmits. Every ``stable_interval`` each member multicasts its digest
(:class:`Stable`): the highest seqno it sent and, per member, the highest it
delivered. A sender frees the messages every member has delivered, and a receiver that
learns from a digest that it missed the tail of a sender's messages asks for them.

A message is delivered in the view it was sent in: one for a later view is kept until
that view is installed, one for an earlier view is discarded (ringcast's GMS has no
FLUSH: a message in flight at a view change may be lost to the members that moved on;
see ``docs/protocols/gms.md``).

A member's word about itself is all a sender has to free messages by; a member that
asks again for messages it said it had delivered gets :class:`XmitGone` and skips them
(``docs/protocols/gms.md``, "A member's word about itself").

Flow control, as JGroups' MFC: a member may have multicast at most ``window`` messages
in its view beyond what every other member said it delivered (:meth:`Nakack.blocked`;
the machine tells the host with ``Backpressure``). A receiver says what it delivered in
its STABLE digest and, under load, sooner: a :class:`Credit` to the sender every
``window // 4`` of its messages delivered. The sender is held at ``window`` in flight and
let go at ``window // 2`` (``docs/protocols/gms.md``, "Flow control").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ringcast.core.effects import Deliver, Effect, Record, Send
from ringcast.core.events import ORDERS
from ringcast.protocols.gms._messages import Credit, Msg, Stable, XmitGone, XmitReq
from ringcast.protocols.gms._views import GView

MAX_FUTURE = 4096  # messages kept for views not installed yet
MAX_XMIT = 512  # seqnos one retransmission request may ask for
MAX_AHEAD = 1 << 20  # how far past its delivered seqno a receiver holds a sender's messages


@dataclass(slots=True)
class _Rx:
    """What this node received from one sender in the current view."""

    delivered: int = 0
    pending: dict[int, Msg] = field(default_factory=dict)
    highest_seen: int = 0
    last_nak: int = -(1 << 62)
    credited: int = 0
    """The highest of the sender's seqnos this node told it it delivered (a Credit)."""


class Nakack:
    def __init__(self, node_id: str, *, xmit_interval: int, window: int = 256):
        self.node_id = node_id
        self.xmit_interval = xmit_interval
        self.window = window
        self.credit_every = max(1, window // 4)
        self.held_back = False
        """Flow control holds the sender (:meth:`blocked`)."""
        self.view: GView | None = None
        self.seqno = 0
        self.sent: dict[int, Msg] = {}  # unstable own messages of this view
        self.freed = 0
        """The highest own seqno every other member said it delivered (0: none): every
        own message up to it is freed, and flow control counts from it."""
        self.rx: dict[str, _Rx] = {}
        self.future: dict[str, list[tuple[str, Msg]]] = {}
        self.acked_by: dict[str, int] = {}  # member -> highest of mine it delivered
        self.retransmitted = 0
        self.stale = 0

    # -- views

    def install(self, view: GView, now: int, out: list[Effect]) -> None:
        self.stale += sum(len(r.pending) for r in self.rx.values())  # lost to the change
        self.view = view
        self.seqno = 0
        self.sent.clear()
        self.freed = 0
        self.acked_by = {}
        self.rx = {m: _Rx() for m in view.members if m != self.node_id}
        waiting = self.future.pop(view.view_id, [])
        self.future = {
            vid: lst
            for vid, lst in self.future.items()
            if _newer(vid, view)  # views older than this one will never be installed
        }
        for src, msg in waiting:
            self.on_msg(src, msg, now, out)

    # -- flow control

    def blocked(self) -> bool:
        """Whether flow control holds the sender: true once ``window`` of its messages
        are beyond what every other member delivered, until at most ``window // 2`` are
        (a new view starts at none)."""
        in_flight = self.seqno - self.freed
        if in_flight >= self.window:
            self.held_back = True
        elif in_flight <= self.window // 2:
            self.held_back = False
        return self.held_back

    def _acked(self, src: str, delivered: int) -> None:
        """``src`` says it delivered this node's messages up to ``delivered``: free what
        every member delivered, which moves flow control's count of messages in flight."""
        view = self.view
        assert view is not None
        self.acked_by[src] = max(self.acked_by.get(src, 0), min(delivered, self.seqno))
        stable = min(
            (self.acked_by.get(m, 0) for m in view.members if m != self.node_id),
            default=self.seqno,
        )
        if stable > self.freed:
            for s in range(self.freed + 1, stable + 1):
                self.sent.pop(s, None)
            self.freed = stable

    def on_credit(self, src: str, c: Credit, out: list[Effect]) -> None:
        view = self.view
        if view is None or c.view_id != view.view_id or src not in view.members:
            return  # a credit of another view: that view's window is gone
        if c.delivered < 0 or src == self.node_id:
            out.append(Record.of("drop", src=src, reason="malformed Credit"))
            return
        self._acked(src, c.delivered)

    # -- sending

    def submit(self, msg_id: str, payload: bytes, order: str, out: list[Effect]) -> None:
        view = self.view
        assert view is not None
        self.seqno += 1
        msg = Msg(view.view_id, self.seqno, msg_id, payload, order)
        self.sent[self.seqno] = msg
        for m in view.members:
            if m != self.node_id:
                out.append(Send(m, msg))
        out.append(Deliver(msg_id, payload, order, self.node_id))

    # -- receiving

    def on_msg(self, src: str, msg: Msg, now: int, out: list[Effect]) -> None:
        view = self.view
        if msg.seqno < 1 or msg.order not in ORDERS or not msg.msg_id:
            out.append(Record.of("drop", src=src, reason="malformed Msg"))
            return
        if view is None or msg.view_id != view.view_id:
            if view is None or _newer(msg.view_id, view):
                lst = self.future.setdefault(msg.view_id, [])
                if sum(len(v) for v in self.future.values()) < MAX_FUTURE:
                    lst.append((src, msg))
            else:
                self.stale += 1
            return
        rx = self.rx.get(src)
        if rx is None:
            out.append(Record.of("drop", src=src, reason="Msg from a non-member"))
            return
        if msg.seqno <= rx.delivered or msg.seqno in rx.pending:
            return  # a duplicate or a retransmission we no longer need
        if msg.seqno > rx.delivered + MAX_AHEAD:
            # No sender is a million messages ahead within one view: a corrupted seqno
            # would sit in pending and keep a gap open for good (gms.md, "A member's
            # word about itself", as below).
            out.append(Record.of("drop", src=src, reason="Msg seqno far ahead"))
            return
        rx.pending[msg.seqno] = msg
        rx.highest_seen = max(rx.highest_seen, msg.seqno)
        while rx.delivered + 1 in rx.pending:
            m = rx.pending.pop(rx.delivered + 1)
            rx.delivered += 1
            out.append(Deliver(m.msg_id, m.payload, m.order, src))
        if rx.delivered - rx.credited >= self.credit_every:
            rx.credited = rx.delivered
            out.append(Send(src, Credit(view.view_id, rx.delivered)))
        self._nak(src, rx, now, out)

    def _nak(self, src: str, rx: _Rx, now: int, out: list[Effect]) -> None:
        if rx.highest_seen > rx.delivered and now - rx.last_nak >= self.xmit_interval:
            assert self.view is not None
            rx.last_nak = now
            last = min(rx.highest_seen, rx.delivered + MAX_XMIT)
            out.append(Send(src, XmitReq(self.view.view_id, rx.delivered + 1, last)))

    def on_xmit_req(self, src: str, req: XmitReq, out: list[Effect]) -> None:
        view = self.view
        if view is None or req.view_id != view.view_id or src not in view.members:
            return
        if req.first < 1 or req.last < req.first or req.last - req.first >= MAX_XMIT:
            out.append(Record.of("drop", src=src, reason="malformed XmitReq"))
            return
        if req.first <= self.freed:
            # The requester said it had delivered these (or they would not be stable);
            # it asks again only if that was not true. Tell it they are gone.
            out.append(Send(src, XmitGone(view.view_id, self.freed + 1)))
        for s in range(max(req.first, self.freed + 1), req.last + 1):
            msg = self.sent.get(s)
            if msg is not None:
                self.retransmitted += 1
                out.append(Send(src, msg))

    def on_xmit_gone(self, src: str, gone: XmitGone, out: list[Effect]) -> None:
        """The sender freed what this node asked for, on this node's own word that it
        had them (a digest that lied, say a corrupted one). The gap can never be filled:
        skip it, up to the first message held, and go on delivering."""
        view = self.view
        rx = self.rx.get(src)
        if view is None or gone.view_id != view.view_id or rx is None or not rx.pending:
            return
        last = min(gone.first_held, min(rx.pending)) - 1
        if last <= rx.delivered:
            return
        out.append(Record.of("skipped", src=src, first=rx.delivered + 1, last=last))
        rx.delivered = last
        while rx.delivered + 1 in rx.pending:
            m = rx.pending.pop(rx.delivered + 1)
            rx.delivered += 1
            out.append(Deliver(m.msg_id, m.payload, m.order, src))

    # -- stability

    def digest(self) -> Stable:
        view = self.view
        assert view is not None
        delivered = tuple(
            self.seqno if m == self.node_id else self.rx[m].delivered for m in view.members
        )
        return Stable(view.view_id, view.members, self.seqno, delivered)

    def on_stable(self, src: str, st: Stable, now: int, out: list[Effect]) -> None:
        """A digest of the current view: free what every member delivered, NAK a tail."""
        view = self.view
        assert view is not None and st.view_id == view.view_id
        if len(st.delivered) != len(view.members) or st.sent < 0:
            out.append(Record.of("drop", src=src, reason="malformed Stable"))
            return
        if src in view.members and src != self.node_id:
            self._acked(src, st.delivered[view.members.index(self.node_id)])
        rx = self.rx.get(src)
        if rx is None:
            return
        # The sender's digest is its word on what it sent, believed as it is: a corrupted
        # one cannot leave this node asking for seqnos never sent for the rest of the view.
        before = rx.highest_seen
        held = max(rx.pending, default=rx.delivered)
        rx.highest_seen = max(min(st.sent, rx.delivered + MAX_AHEAD), held)
        if rx.highest_seen > before:
            self._nak(src, rx, now, out)


def _newer(view_id: str, view: GView) -> bool:
    from ringcast.protocols.gms._views import BadField, id_key

    try:
        return id_key(view_id) > view.key
    except BadField:
        return False
