"""Tribes' membership: who a node believes is alive (``membership`` in the seed).

McastService announces every member periodically (:class:`~._messages.MemberBeacon`,
carrying its priority, start time and incarnation) and drops a member after
``member_drop_time`` without one: :meth:`Membership.beacon` and :meth:`Membership.expire`
report ``memberAdded`` / ``memberDisappeared``. A member heard this way is *direct*.

Because beacons may reach some members and not others, a node's view may be partial and
asymmetric; the election token fills the gaps. A member a node learns only from a token
or a confirmed view is *hearsay* (Tribes' ``mergeOnArrive`` calls ``memberAdded(mbr,
false)`` for it): it counts as alive until a confirmed view leaves it out, a token
reports it ``gone`` with the same incarnation, or the ``COORD_ALIVE`` probe to it fails.

``departed`` remembers the incarnation of every member this node saw disappear, so a
token still listing it (a member "already dead") is corrected at once instead of being
probed; a beacon with a new incarnation (the member restarted) replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.ids import NodeId
from ringcast.protocols.tribes import _order
from ringcast.protocols.tribes._messages import CoordMember, MemberBeacon


@dataclass(slots=True)
class Member:
    node: NodeId
    priority: int
    incarnation: int
    heard: int | None = None
    """Time of the last beacon, or None for a hearsay member."""
    probed: int = 0
    """A hearsay member: when it was learnt or last probed with ``COORD_ALIVE``."""

    @property
    def direct(self) -> bool:
        return self.heard is not None

    def wire(self) -> CoordMember:
        return CoordMember(self.node, self.priority, self.incarnation)


class Membership:
    """One node's membership (the node itself is not in it)."""

    def __init__(self, me: NodeId, drop_time: int):
        self.me = me
        self.drop_time = drop_time
        self.members: dict[NodeId, Member] = {}
        self.departed: dict[NodeId, int] = {}
        self.left: dict[NodeId, int] = {}
        """The incarnation of every member that announced its shutdown."""

    def __contains__(self, node: object) -> bool:
        return node in self.members

    def names(self) -> frozenset[NodeId]:
        return frozenset(self.members)

    def direct(self) -> frozenset[NodeId]:
        return frozenset(n for n, m in self.members.items() if m.direct)

    # -- McastService

    def beacon(self, src: NodeId, b: MemberBeacon, now: int) -> tuple[list[NodeId], list[NodeId]]:
        """A beacon from ``src``: (disappeared, added). A new incarnation of a known
        member is its old self disappearing and a new one being added."""
        gone: list[NodeId] = []
        added: list[NodeId] = []
        if self.left.get(src, 0) >= b.incarnation:
            return gone, added  # a beacon overtaken by its sender's shutdown
        m = self.members.get(src)
        if m is not None and m.incarnation != b.incarnation:
            if b.incarnation < m.incarnation:
                return [], []  # a late beacon of an older incarnation
            del self.members[src]
            self.departed[src] = m.incarnation
            gone.append(src)
            m = None
        if m is None:
            if self.departed.get(src, 0) > b.incarnation:
                return gone, added  # a late beacon of an incarnation older than one seen
            # A member seen gone that beacons again (a healed partition, a link back up)
            # is alive: it is added again, whatever its incarnation.
            self.departed.pop(src, None)
            self.members[src] = Member(src, b.priority, b.incarnation, now)
            added.append(src)
        else:
            m.heard = now
            m.priority = b.priority
        return gone, added

    def shutdown(self, src: NodeId, incarnation: int) -> bool:
        """``src`` announced it leaves; True if it was a member (memberDisappeared)."""
        self.left[src] = max(self.left.get(src, 0), incarnation)
        m = self.members.get(src)
        if m is None or m.incarnation > incarnation:
            return False
        self.remove(src)
        return True

    def expire(self, now: int) -> list[NodeId]:
        """Direct members silent for ``drop_time``: memberDisappeared."""
        out = []
        for node in sorted(self.members):
            m = self.members[node]
            if m.heard is not None and now - m.heard >= self.drop_time:
                out.append(node)
                self.remove(node)
        return out

    def remove(self, node: NodeId) -> None:
        m = self.members.pop(node, None)
        if m is not None:
            self.departed[node] = max(self.departed.get(node, 0), m.incarnation)

    # -- hearsay, from tokens and confirmed views

    def knows_dead(self, cm: CoordMember) -> bool:
        """This node saw this incarnation of the member disappear and has not heard of it since."""
        return cm.node not in self.members and self.departed.get(cm.node, 0) >= cm.incarnation

    def learn(self, cm: CoordMember, now: int, *, vouched: bool = False) -> bool:
        """Add a member first learnt from a token or a view (hearsay); True if new.
        A newer incarnation replaces a known one. A ``vouched`` member (listed in a
        confirmed view, or the node a token came from) is learnt even if this node saw
        that incarnation disappear (the probe checks it), but not if it announced its
        shutdown."""
        if cm.node == self.me or self.left.get(cm.node, 0) >= cm.incarnation:
            return False
        if self.knows_dead(cm):
            if not vouched or self.departed[cm.node] > cm.incarnation:
                return False  # (a view listing an incarnation older than one seen gone)
            del self.departed[cm.node]
        m = self.members.get(cm.node)
        if m is not None:
            if cm.incarnation > m.incarnation:
                m.incarnation, m.priority, m.heard = cm.incarnation, cm.priority, None
                m.probed = now
            return False
        self.members[cm.node] = Member(cm.node, cm.priority, cm.incarnation, None, now)
        return True

    def probes_due(self, now: int) -> list[CoordMember]:
        """Hearsay members neither learnt nor probed for ``drop_time``: each is to be
        probed again now (a failed probe removes it)."""
        due = []
        for node in sorted(self.members):
            m = self.members[node]
            if m.heard is None and now - m.probed >= self.drop_time:
                m.probed = now
                due.append(m.wire())
        return due

    def forget_hearsay(self, node: NodeId, incarnation: int) -> bool:
        """A report that ``node`` is gone: drop it unless this node hears it directly."""
        m = self.members.get(node)
        if m is None or m.direct or m.incarnation > incarnation:
            return False
        self.remove(node)
        return True

    def wire(self, node: NodeId) -> CoordMember | None:
        m = self.members.get(node)
        return m.wire() if m is not None else None

    def ordered(self) -> list[Member]:
        return sorted(self.members.values(), key=lambda m: _order.key(m.priority, m.node))
