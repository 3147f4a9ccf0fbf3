"""Raincore wire messages: the token (Figure 6), the 911 message (Figure 7) and the
node's persisted local state (Figure 8). The Raincore paper, section 1.1.

Every message is registered with :mod:`ringcast.core.codec` (type ids 0x0100-0x01FF).
Pointers ("pointer to current node", "pointer to destination node", "pointer to
originating node") are indices into the message's ``nodelist``, as in the figures.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from ringcast.core.codec import wire
from ringcast.core.ids import NodeId, check_node_id

TOKEN_SIGNATURE = 0x52430001
"""The signature field of a token ("this is a token message", Figure 6)."""

NINE11_SIGNATURE = 0x52430911
"""The signature field of a 911 message (Figure 7)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what a received token or 911 may hold (decision 25): a peer cannot make
    a node allocate or loop beyond them."""

    max_nodes: int = 1024
    """Nodes on a nodelist (and entries of ``reserved_by`` and ``demand``)."""
    max_messages: int = 64
    """Application messages on a token (the receiver's ``max_token_messages``)."""
    max_bytes: int = 48 * 1024
    """Payload bytes of those messages (the receiver's ``max_token_bytes``)."""
    max_text: int = 1024
    """Length of a message id or order string."""


LIMITS = Limits()


def _nat(x: object) -> bool:
    """A non-negative int (not a bool, not an enum)."""
    return type(x) is int and x >= 0


@lru_cache(maxsize=4096)
def _node_ok(node: str) -> bool:
    try:
        check_node_id(node)
    except ValueError:
        return False
    return True


def _nodes_ok(nodes: object, limit: int, *, empty: bool = False) -> bool:
    """A tuple of valid, distinct node ids, at most ``limit`` of them."""
    if type(nodes) is not tuple or len(nodes) > limit or (not nodes and not empty):
        return False
    return all(type(n) is str and _node_ok(n) for n in nodes) and len(set(nodes)) == len(nodes)


def _index_ok(i: object, n: int) -> bool:
    return _nat(i) and i < n  # type: ignore[operator]


def _all(items: Iterable[bool]) -> bool:
    return all(items)


class Status(enum.IntEnum):
    """The 911 status field: "one of three values: YES, NO, or REJECT"."""

    YES = 1
    NO = 2
    REJECT = 3


@wire(0x0101)
@dataclass(frozen=True, slots=True)
class TokenMessage:
    """An application message riding on the token (the reliable multicast service).

    ``origin``/``incarnation``/``oseq`` identify it for duplicate suppression;
    ``stamp`` is the token sequence number it was put on the token with.
    """

    origin: NodeId
    incarnation: int
    oseq: int
    msg_id: str
    payload: bytes
    order: str
    stamp: int

    def well_formed(self, limits: Limits = LIMITS) -> bool:
        return (
            type(self.origin) is str
            and _node_ok(self.origin)
            and _nat(self.incarnation)
            and _nat(self.oseq)
            and type(self.msg_id) is str
            and len(self.msg_id) <= limits.max_text
            and type(self.payload) is bytes
            and type(self.order) is str
            and len(self.order) <= limits.max_text
            and _nat(self.stamp)
        )


@wire(0x0104)
@dataclass(frozen=True, slots=True)
class Demand:
    """One node's backlog, as it reported it when it last passed the token: how many
    submitted messages were waiting for room on the token (the fair-share rule)."""

    origin: NodeId
    pending: int

    def well_formed(self) -> bool:
        return type(self.origin) is str and _node_ok(self.origin) and _nat(self.pending)


@wire(0x0102)
@dataclass(frozen=True, slots=True)
class Token:
    """The token (Figure 6).

    ``nodelist`` is "a cyclic ordered list of all nodes that the token traversed in the
    last pass around the ring"; ``current`` and ``destination`` point into it;
    ``global_view_number`` is "the largest index in the committed global view
    sequence". ``messages`` carries the multicast service's application messages.
    """

    signature: int
    sequence_number: int
    nodelist: tuple[NodeId, ...]
    current: int
    destination: int
    global_view_number: int
    messages: tuple[TokenMessage, ...] = ()
    demand: tuple[Demand, ...] = ()
    reservation: int = 0
    """The globalView location the ring is reserving (0: none yet); decision 22."""
    reserved_by: tuple[NodeId, ...] = ()
    """The nodes that reserved ``reservation`` with exactly this ``nodelist``; cleared
    whenever the nodelist changes. A node commits only when it lists every member."""

    @property
    def current_node(self) -> NodeId:
        return self.nodelist[self.current]

    @property
    def destination_node(self) -> NodeId:
        return self.nodelist[self.destination]

    def well_formed(self, limits: Limits = LIMITS) -> bool:
        """Every field the machine reads is of its type and in range (decision 25): the
        signature; numbers non-negative; a non-empty nodelist of distinct valid node ids,
        bounded; pointers into it; ``reserved_by`` distinct members of the nodelist,
        only with a reservation; messages well formed, distinct, bounded in number and
        bytes; one demand entry per node at most."""
        if not (
            self.signature == TOKEN_SIGNATURE
            and type(self.signature) is int
            and _nat(self.sequence_number)
            and _nat(self.global_view_number)
            and _nat(self.reservation)
            and _nodes_ok(self.nodelist, limits.max_nodes)
        ):
            return False
        n = len(self.nodelist)
        by = self.reserved_by
        if not (
            _index_ok(self.current, n)
            and _index_ok(self.destination, n)
            and _nodes_ok(by, n, empty=True)
            and set(by) <= set(self.nodelist)
            and (not by or self.reservation > 0)
        ):
            return False
        msgs = self.messages
        if type(msgs) is not tuple or len(msgs) > limits.max_messages:
            return False
        if not _all(type(m) is TokenMessage and m.well_formed(limits) for m in msgs):
            return False
        if sum(len(m.payload) for m in msgs) > limits.max_bytes:
            return False
        if len({(m.origin, m.incarnation, m.oseq) for m in msgs}) != len(msgs):
            return False
        demand = self.demand
        if type(demand) is not tuple or len(demand) > limits.max_nodes:
            return False
        if not _all(type(d) is Demand and d.well_formed() for d in demand):
            return False
        return len({d.origin for d in demand}) == len(demand)

    def with_(self, **changes: object) -> Token:
        return replace(self, **changes)  # type: ignore[arg-type]


@wire(0x0103)
@dataclass(frozen=True, slots=True)
class Msg911:
    """The 911 message (Figure 7): token regeneration request and join request.

    ``nodelist`` is the route the 911 travels (the originator's lastGlobalView); a node
    it could not be delivered to is removed from it, so a 911 that comes back to its
    originator lists exactly the nodes that let it through. ``sequence_number`` is "the
    sequence number of the last received token on the originating node".
    """

    signature: int
    nodelist: tuple[NodeId, ...]
    current: int
    destination: int
    originator: int
    sequence_number: int
    status: Status

    @property
    def current_node(self) -> NodeId:
        return self.nodelist[self.current]

    @property
    def destination_node(self) -> NodeId:
        return self.nodelist[self.destination]

    @property
    def originating_node(self) -> NodeId:
        return self.nodelist[self.originator]

    def well_formed(self, limits: Limits = LIMITS) -> bool:
        """Every field the machine reads is of its type and in range (decision 25)."""
        if not (
            self.signature == NINE11_SIGNATURE
            and type(self.signature) is int
            and _nat(self.sequence_number)
            and type(self.status) is Status
            and _nodes_ok(self.nodelist, limits.max_nodes)
        ):
            return False
        n = len(self.nodelist)
        return (
            _index_ok(self.current, n)
            and _index_ok(self.destination, n)
            and _index_ok(self.originator, n)
        )

    def with_(self, **changes: object) -> Msg911:
        return replace(self, **changes)  # type: ignore[arg-type]


@wire(0x0110)
@dataclass(frozen=True, slots=True)
class GlobalViewEntry:
    """One location of the globalView vector: a committed view, or NULL (``null``)."""

    index: int
    members: tuple[NodeId, ...]
    null: bool = False


@wire(0x0111)
@dataclass(frozen=True, slots=True)
class DeliveredUpTo:
    """The newest (incarnation, oseq) of ``origin`` this node has delivered."""

    origin: NodeId
    incarnation: int
    oseq: int


@wire(0x0112)
@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a node persists so that it "recovers and keeps all its existing local state"
    (Figure 14): the Figure 8 structures plus the services' duplicate filter."""

    incarnation: int
    global_view: tuple[GlobalViewEntry, ...]
    global_view_number: int
    last_token: Token | None
    local_view: tuple[NodeId, ...]
    highest_reserved: int
    """The highest location this node ever reserved: it never reserves one again."""
    delivered: tuple[DeliveredUpTo, ...]


MESSAGE_TYPES: tuple[type, ...] = (
    TokenMessage,
    Demand,
    Token,
    Msg911,
    GlobalViewEntry,
    DeliveredUpTo,
    Snapshot,
)
