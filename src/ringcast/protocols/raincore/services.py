"""The services the token carries (seed 000, section 1.1: "the basic component in
providing the consistent group membership, reliable multicast and mutual exclusion").

:class:`TokenMulticast` -- reliable, totally ordered multicast: a node puts its
application messages on the token when it passes the token on; every node delivers
the messages it has not delivered yet, in token order, when the token reaches it; the
originator takes its messages off when they come back after one full rotation.

:class:`TokenLock` -- mutual exclusion: the lock is granted while the node holds the
token (Eating), and the token is held while the lock is, up to a bound.
"""

from __future__ import annotations

from collections import deque

from ringcast.core.effects import Backpressure, Deliver, Effect, LockGranted, LockReleased
from ringcast.core.events import Submit
from ringcast.core.ids import NodeId
from ringcast.protocols.raincore._messages import DeliveredUpTo, Token, TokenMessage

ORDER = "agreed"
"""Token messages are delivered in one total order: the token's."""


class TokenMulticast:
    """Application messages riding on the token, delivered once each, in token order."""

    def __init__(
        self,
        node_id: NodeId,
        incarnation: int,
        *,
        max_token_messages: int,
        delivered: tuple[DeliveredUpTo, ...] = (),
    ):
        self.node_id = node_id
        self.incarnation = incarnation
        self.max_token_messages = max_token_messages
        self.max_pending = 8 * max_token_messages
        self.pending: deque[Submit] = deque()
        self.blocked = False
        self._oseq = 0
        self._returned: set[tuple[int, int]] = set()
        # Duplicate filter: per origin, the newest (incarnation, oseq) delivered here.
        self.delivered: dict[NodeId, tuple[int, int]] = {
            d.origin: (d.incarnation, d.oseq) for d in delivered
        }

    def snapshot(self) -> tuple[DeliveredUpTo, ...]:
        return tuple(DeliveredUpTo(o, i, s) for o, (i, s) in sorted(self.delivered.items()))

    def submit(self, event: Submit) -> list[Effect]:
        self.pending.append(event)
        if not self.blocked and len(self.pending) >= self.max_pending:
            self.blocked = True
            return [Backpressure(True)]
        return []

    def _fresh(self, m: TokenMessage) -> bool:
        return (m.incarnation, m.oseq) > self.delivered.get(m.origin, (-1, -1))

    def on_token(self, token: Token, *, came_round: bool = True) -> list[Effect]:
        """Deliver, in token order, every message on ``token`` not delivered here yet.

        ``came_round``: the token arrived from the ring, so this node's own messages on it
        have made their full rotation (not so for a token regenerated from lastToken).
        """
        out: list[Effect] = []
        for m in token.messages:
            if m.origin == self.node_id and came_round:
                self._returned.add((m.incarnation, m.oseq))
            if self._fresh(m):
                self.delivered[m.origin] = (m.incarnation, m.oseq)
                out.append(Deliver(m.msg_id, m.payload, ORDER, m.origin))
        return out

    def on_pass(self, token: Token) -> tuple[Token, list[Effect]]:
        """Before the token leaves: take off this node's messages (they have made a full
        rotation), drop messages of departed nodes that have made one, and put this
        node's pending messages on (delivering them here, at their place in the order)."""
        ring = len(token.nodelist)
        me = self.node_id
        alone = token.nodelist == (me,)
        kept = tuple(
            m
            for m in token.messages
            if not (m.origin == me and (alone or (m.incarnation, m.oseq) in self._returned))
            and (m.origin in token.nodelist or token.sequence_number - m.stamp < ring)
        )
        self._returned.clear()
        out: list[Effect] = []
        room = self.max_token_messages - len(kept)
        added: list[TokenMessage] = []
        stamp = token.sequence_number + 1  # the number the token leaves with
        while room > 0 and self.pending:
            sub = self.pending.popleft()
            self._oseq += 1
            m = TokenMessage(
                self.node_id, self.incarnation, self._oseq, sub.msg_id, sub.payload, ORDER, stamp
            )
            added.append(m)
            self.delivered[self.node_id] = (self.incarnation, self._oseq)
            out.append(Deliver(m.msg_id, m.payload, ORDER, self.node_id))
            room -= 1
        if self.blocked and len(self.pending) <= self.max_pending // 2:
            self.blocked = False
            out.append(Backpressure(False))
        if not added and len(kept) == len(token.messages):
            return token, out
        return token.with_(messages=kept + tuple(added)), out


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

    def on_eating(self, now: int) -> list[Effect]:
        """The node holds the token: grant a waiting request."""
        if self.wanted and self.held_since is None:
            self.wanted = False
            self.held_since = now
            return [LockGranted()]
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
