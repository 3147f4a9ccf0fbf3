"""Tribes' membership: who a node believes is alive (``membership`` in Tomcat's source).

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

An incarnation is believed while it beacons (docs/protocols/tribes.md, "Incarnations
are believed while they beacon"): a beacon of an older incarnation than the one held
is a late one only while the newer one is heard directly within ``drop_time``, and a
departure or a shutdown keeps older beacons out for ``drop_time`` only. After that, a
member that keeps beaconing is alive as the incarnation it beacons, so that a corrupted
beacon or token naming a higher incarnation, or a member that lost its stable storage,
shuts nobody out for longer than that.
"""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.ids import NodeId
from ringcast.protocols.tribes import _order
from ringcast.protocols.tribes._messages import CoordMember, MemberBeacon

PROBE_FAILURES = 2
"""Failed ``COORD_ALIVE`` probes in a row that make a suspected or hearsay member gone:
one probe (``max_tries`` transmissions) over a link losing 80 % one way fails about one
time in three, two in a row one time in nine."""


@dataclass(slots=True)
class Member:
    node: NodeId
    priority: int
    incarnation: int
    heard: int | None = None
    """Time of the last beacon, or None for a hearsay member."""
    probed: int = 0
    """A hearsay member: when it was learnt or last probed with ``COORD_ALIVE``."""
    failed: int = 0
    """Probes of it that failed in a row since it was last heard directly."""

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
        self.departed_at: dict[NodeId, int] = {}
        self.left: dict[NodeId, int] = {}
        """The incarnation of every member that announced its shutdown."""
        self.left_at: dict[NodeId, int] = {}

    def _beaconing(self, m: Member, now: int) -> bool:
        """``m`` is heard directly, its last beacon within ``drop_time``."""
        return m.heard is not None and now - m.heard < self.drop_time

    def _left_recently(self, node: NodeId, incarnation: int, now: int) -> bool:
        """``node`` announced its shutdown at ``incarnation`` or later, within ``drop_time``."""
        return (
            self.left.get(node, 0) >= incarnation
            and now - self.left_at.get(node, now) < self.drop_time
        )

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
        if self._left_recently(src, b.incarnation, now):
            return gone, added  # a beacon overtaken by its sender's shutdown
        m = self.members.get(src)
        if m is not None and m.incarnation == b.incarnation:
            m.heard, m.failed = now, 0  # a suspect heard again is direct again
            m.priority = b.priority
            return gone, added
        if m is not None:
            if b.incarnation < m.incarnation and self._beaconing(m, now):
                return gone, added  # a late beacon of an older incarnation
            # A new incarnation (the member restarted), or the one held is hearsay or
            # fell silent while this one beacons: the held one is gone.
            del self.members[src]
            gone.append(src)
        elif (
            self.departed.get(src, 0) > b.incarnation
            and now - self.departed_at.get(src, now) < self.drop_time
        ):
            return gone, added  # a late beacon of an incarnation older than one seen gone
        # A member seen gone that beacons again (a healed partition, a link back up)
        # is alive: it is added again, whatever its incarnation.
        self.departed.pop(src, None)
        self.members[src] = Member(src, b.priority, b.incarnation, now)
        added.append(src)
        return gone, added

    def shutdown(self, src: NodeId, incarnation: int, now: int) -> bool:
        """``src`` announced it leaves; True if it was a member (memberDisappeared)."""
        self.left[src] = max(self.left.get(src, 0), incarnation)
        self.left_at[src] = now
        m = self.members.get(src)
        if m is None or m.incarnation > incarnation:
            return False
        self.remove(src, now)
        return True

    def expire(self, now: int) -> list[CoordMember]:
        """Direct members silent for ``drop_time``: suspected, not yet gone. As Tomcat's
        ``TcpFailureDetector`` checks a member McastService reports disappeared with a
        connection of its own before it lets it go, each becomes hearsay (still a
        member) and is to be probed now; it is gone when its probes fail
        (:meth:`probe_failed`), and direct again at its next beacon."""
        out = []
        for node in sorted(self.members):
            m = self.members[node]
            if m.heard is not None and now - m.heard >= self.drop_time:
                m.heard, m.probed, m.failed = None, now, 0
                out.append(m.wire())
        return out

    def probe_failed(self, node: NodeId, incarnation: int, now: int) -> bool:
        """A ``COORD_ALIVE`` to hearsay ``node`` failed on delivery: True when it is gone
        (:data:`PROBE_FAILURES` in a row; it is removed), False when it is to be probed
        again now."""
        m = self.members.get(node)
        if m is None or m.direct or m.incarnation > incarnation:
            return False
        m.failed += 1
        m.probed = now
        if m.failed < PROBE_FAILURES:
            return False
        self.remove(node, now)
        return True

    def remove(self, node: NodeId, now: int) -> None:
        m = self.members.pop(node, None)
        if m is not None:
            self.departed[node] = max(self.departed.get(node, 0), m.incarnation)
            self.departed_at[node] = now

    # -- hearsay, from tokens and confirmed views

    def knows_dead(self, cm: CoordMember) -> bool:
        """This node saw this incarnation of the member disappear and has not heard of it since."""
        return cm.node not in self.members and self.departed.get(cm.node, 0) >= cm.incarnation

    def learn(self, cm: CoordMember, now: int, *, vouched: bool = False) -> bool:
        """Add a member first learnt from a token or a view (hearsay); True if new.
        A newer incarnation replaces a known one. A ``vouched`` member (listed in a
        confirmed view, or the node a token came from) is learnt even if this node saw
        that incarnation disappear (the probe checks it), but not if it announced its
        shutdown. A higher incarnation heard only this way does not replace a member that
        beacons directly: its own beacons will say when it restarted."""
        if cm.node == self.me or self._left_recently(cm.node, cm.incarnation, now):
            return False
        if self.knows_dead(cm):
            if not vouched or self.departed[cm.node] > cm.incarnation:
                return False  # (a view listing an incarnation older than one seen gone)
            del self.departed[cm.node]
        m = self.members.get(cm.node)
        if m is not None:
            if cm.incarnation > m.incarnation and not self._beaconing(m, now):
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

    def forget_hearsay(self, node: NodeId, incarnation: int, now: int) -> bool:
        """A report that ``node`` is gone: drop it unless this node hears it directly."""
        m = self.members.get(node)
        if m is None or m.direct or m.incarnation > incarnation:
            return False
        self.remove(node, now)
        return True

    def wire(self, node: NodeId) -> CoordMember | None:
        m = self.members.get(node)
        return m.wire() if m is not None else None

    def ordered(self) -> list[Member]:
        return sorted(self.members.values(), key=lambda m: _order.key(m.priority, m.node))
