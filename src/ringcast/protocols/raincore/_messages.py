"""Raincore wire messages: the token (Figure 6), the 911 message (Figure 7) and the
node's persisted local state (Figure 8). Seed 000, section 1.1.

Every message is registered with :mod:`ringcast.core.codec` (type ids 0x0100-0x01FF).
Pointers ("pointer to current node", "pointer to destination node", "pointer to
originating node") are indices into the message's ``nodelist``, as in the figures.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from ringcast.core.codec import wire
from ringcast.core.ids import NodeId

TOKEN_SIGNATURE = 0x52430001
"""The signature field of a token ("this is a token message", Figure 6)."""

NINE11_SIGNATURE = 0x52430911
"""The signature field of a 911 message (Figure 7)."""


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


@wire(0x0104)
@dataclass(frozen=True, slots=True)
class Demand:
    """One node's backlog, as it reported it when it last passed the token: how many
    submitted messages were waiting for room on the token (the fair-share rule)."""

    origin: NodeId
    pending: int


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

    def well_formed(self) -> bool:
        n = len(self.nodelist)
        return (
            self.signature == TOKEN_SIGNATURE
            and n > 0
            and len(set(self.nodelist)) == n
            and 0 <= self.current < n
            and 0 <= self.destination < n
            and self.global_view_number >= 0
        )

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

    def well_formed(self) -> bool:
        n = len(self.nodelist)
        return (
            self.signature == NINE11_SIGNATURE
            and n > 0
            and len(set(self.nodelist)) == n
            and 0 <= self.current < n
            and 0 <= self.destination < n
            and 0 <= self.originator < n
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
