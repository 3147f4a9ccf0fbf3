"""The services the token carries (the Raincore paper, section 1.1: "the basic component in
providing the consistent group membership, reliable multicast and mutual exclusion").

:class:`TokenMulticast` -- reliable, totally ordered multicast: a node puts its
application messages on the token when it passes the token on; every node delivers
the messages it has not delivered yet, in token order, when the token reaches it; the
originator takes its messages off when they come back after one full rotation.

Flow control (not in the Raincore paper, see docs/protocols/raincore.md): the token holds at most
``max_token_messages`` messages and ``max_token_bytes`` bytes (estimated encoded size),
so it always fits in one UDP datagram; each node's share of that capacity in a rotation
is proportional to its backlog among the backlogs the token carries (``Token.demand``,
the fair-share rule of Totem's flow control), at least one message; and a node's queue
of submitted messages waiting for the token is bounded by ``max_pending``, with
``Backpressure`` toward the application.

:class:`TokenLock` -- mutual exclusion: the lock is granted while the node holds the
token (Eating), and the token is held while the lock is, up to a bound; every grant
carries a fencing token (:func:`fence`).
"""

from __future__ import annotations

from collections import deque

from ringcast.core.effects import (
    Backpressure,
    Deliver,
    Effect,
    LockGranted,
    LockReleased,
    Record,
)
from ringcast.core.events import Submit
from ringcast.core.ids import NodeId
from ringcast.protocols.raincore._messages import DeliveredUpTo, Demand, Token, TokenMessage

ORDER = "agreed"
"""Token messages are delivered in one total order: the token's."""

MESSAGE_OVERHEAD = 48
"""Bytes a message costs on the token beyond its payload, ids and order strings (its
integer fields and length prefixes on the wire codec: 40, rounded up)."""


def message_size(origin: NodeId, msg_id: str, payload: bytes) -> int:
    """The (slightly over-)estimated encoded size of one message on the token."""
    return len(payload) + len(msg_id) + len(origin) + len(ORDER) + MESSAGE_OVERHEAD


class TokenMulticast:
    """Application messages riding on the token, delivered once each, in token order."""

    def __init__(
        self,
        node_id: NodeId,
        incarnation: int,
        *,
        max_token_messages: int,
        max_token_bytes: int = 48 * 1024,
        max_pending: int | None = None,
        delivered: tuple[DeliveredUpTo, ...] = (),
    ):
        self.node_id = node_id
        self.incarnation = incarnation
        self.max_token_messages = max_token_messages
        self.max_token_bytes = max_token_bytes
        self.max_pending = 8 * max_token_messages if max_pending is None else max_pending
        self.pending: deque[Submit] = deque()
        self.blocked = False
        self._oseq = 0
        self._returned: set[tuple[int, int]] = set()
        self._agreed = True  # the last token taken into hand was in Agreement
        # Duplicate filter: per origin, the newest (incarnation, oseq) delivered here.
        self.delivered: dict[NodeId, tuple[int, int]] = {
            d.origin: (d.incarnation, d.oseq) for d in delivered
        }

    def snapshot(self) -> tuple[DeliveredUpTo, ...]:
        return tuple(DeliveredUpTo(o, i, s) for o, (i, s) in sorted(self.delivered.items()))

    def submit(self, event: Submit) -> list[Effect]:
        size = message_size(self.node_id, event.msg_id, event.payload)
        if size > self.max_token_bytes:
            # Decision: a message that can never fit on the token is refused, not queued.
            return [
                Record.of(
                    "drop",
                    reason="message larger than max_token_bytes",
                    msg=event.msg_id,
                    size=len(event.payload),
                )
            ]
        self.pending.append(event)
        if not self.blocked and len(self.pending) >= self.max_pending:
            self.blocked = True
            return [Backpressure(True)]
        return []

    def _fresh(self, m: TokenMessage) -> bool:
        return (m.incarnation, m.oseq) > self.delivered.get(m.origin, (-1, -1))

    def on_token(
        self, token: Token, *, came_round: bool = True, deliver: bool = True
    ) -> list[Effect]:
        """Deliver, in token order, every message on ``token`` not delivered here yet.

        ``came_round``: the token arrived from the ring, so this node's own messages on it
        have made their full rotation (not so for a token regenerated from lastToken).
        ``deliver``: the node is in Agreement; otherwise the messages wait on the token
        (decision 24: only a committed ring's token orders deliveries).
        """
        out: list[Effect] = []
        # Own messages come off once back on a token seen in Agreement twice running:
        # every member has then taken it in Agreement since (they committed the view in
        # the rotation between), so every member has delivered them.
        settled, self._agreed = self._agreed and deliver, deliver
        if not deliver:
            return out
        for m in token.messages:
            if m.origin == self.node_id and came_round and settled:
                self._returned.add((m.incarnation, m.oseq))
            if self._fresh(m):
                self.delivered[m.origin] = (m.incarnation, m.oseq)
                out.append(Deliver(m.msg_id, m.payload, ORDER, m.origin))
        return out

    def busy(self, token: Token) -> bool:
        """Traffic is flowing: the token carries messages or this node has some waiting."""
        return bool(token.messages or self.pending)

    def share(self, token: Token) -> tuple[int, int]:
        """This node's fair share of the token's capacity in this rotation, in messages
        and bytes: the capacity times its backlog over the sum of the backlogs on the
        token (the others' as they reported them when they last passed it), rounded up,
        at least one message."""
        mine = len(self.pending)
        if not mine:
            return 0, 0
        me, ring = self.node_id, token.nodelist
        total = mine + sum(d.pending for d in token.demand if d.origin != me and d.origin in ring)
        return (
            max(1, -(-self.max_token_messages * mine // total)),
            -(-self.max_token_bytes * mine // total),
        )

    def on_pass(self, token: Token, *, deliver: bool = True) -> tuple[Token, list[Effect]]:
        """Before the token leaves: take off this node's messages (they have made a full
        rotation), drop messages of departed nodes that have made one, and put this
        node's pending messages on, up to its fair share and the room left, delivering
        them here at their place in the order, only if ``deliver`` (in Agreement;
        otherwise they wait in the queue, decision 27); report its backlog on the
        token."""
        ring = len(token.nodelist)
        me = self.node_id
        alone = token.nodelist == (me,)
        kept = tuple(
            m
            for m in token.messages
            if not (
                m.origin == me
                and ((alone and not self._fresh(m)) or (m.incarnation, m.oseq) in self._returned)
            )
            and (m.origin in token.nodelist or token.sequence_number - m.stamp < ring)
        )
        self._returned.clear()
        out: list[Effect] = []
        share_n, share_b = self.share(token)
        backlog = len(self.pending)
        # Only a node in Agreement puts messages on (decision 27): a message put on a
        # copy in Chaos was lost, undelivered everywhere, with that copy when another
        # copy's ring was the one that committed.
        room_n = min(share_n, self.max_token_messages - len(kept)) if deliver else 0
        room_b = self.max_token_bytes - sum(
            message_size(m.origin, m.msg_id, m.payload) for m in kept
        )
        added: list[TokenMessage] = []
        used_b = 0
        stamp = token.sequence_number + 1  # the number the token leaves with
        while len(added) < room_n and self.pending:
            sub = self.pending[0]
            size = message_size(me, sub.msg_id, sub.payload)
            # At least one message a rotation if it fits, whatever the byte share.
            if used_b + size > room_b or (added and used_b + size > share_b):
                break
            self.pending.popleft()
            used_b += size
            self._oseq += 1
            m = TokenMessage(
                me, self.incarnation, self._oseq, sub.msg_id, sub.payload, ORDER, stamp
            )
            added.append(m)
            if deliver:
                self.delivered[me] = (self.incarnation, self._oseq)
                out.append(Deliver(m.msg_id, m.payload, ORDER, me))
        if self.blocked and len(self.pending) <= self.max_pending // 2:
            self.blocked = False
            out.append(Backpressure(False))
        demand = tuple(d for d in token.demand if d.origin != me and d.origin in token.nodelist) + (
            (Demand(me, backlog),) if backlog else ()
        )
        if not added and len(kept) == len(token.messages) and demand == token.demand:
            return token, out
        return token.with_(messages=kept + tuple(added), demand=demand), out


FENCE_SHIFT = 40
"""A fence is ``view index * 2**40 + token sequence number``."""


def fence(view_index: int, sequence_number: int) -> int:
    """The fencing token of a grant made on the token numbered ``sequence_number`` by a
    node in Agreement on the globalView entry ``view_index``: it grows along the token
    (its number grows at every pass) and from one committed view to the next (a new
    view's index is larger), whatever the token's number did in between (docs/protocols/
    raincore.md, decision 23)."""
    return (view_index << FENCE_SHIFT) + (sequence_number & ((1 << FENCE_SHIFT) - 1))


class TokenLock:
    """The group's lock: held only by the node that holds the token."""

    def __init__(self, max_hold: int):
        self.max_hold = max_hold
        self.wanted = False
        self.held_since: int | None = None

    @property
    def held(self) -> bool:
        return self.held_since is not None

    def request(self) -> None:
        self.wanted = True

    def on_eating(self, now: int, fence: int) -> list[Effect]:
        """The node holds the token: grant a waiting request, with ``fence``."""
        if self.wanted and self.held_since is None:
            self.wanted = False
            self.held_since = now
            return [LockGranted(fence)]
        return []

    def remaining(self, now: int) -> int:
        """How much longer the token may be held for the lock (0: pass it on now)."""
        if self.held_since is None:
            return 0
        return max(0, self.held_since + self.max_hold - now)

    def release(self, reason: str = "released") -> list[Effect]:
        self.wanted = False
        if self.held_since is None:
            return []
        self.held_since = None
        return [LockReleased(reason)]
