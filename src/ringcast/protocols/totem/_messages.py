"""Totem wire messages (the Totem paper, "Token Fields" and "Membership Protocol - Data
Structures").

Every message is a frozen dataclass registered with the ringcast codec under a type id in
0x0200-0x02FF. The field names are the Totem paper's: ``ring_id``, ``token_seq``, ``seq``, ``aru``,
``aru_id``, ``rtr``, ``backlog``, ``fcc`` on the token; ``proc_set`` and ``fail_set`` on a join;
``memb_list``, ``memb_index`` and one :class:`MembEntry` per member on the commit token.
"""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire
from ringcast.core.frozen import fast_init


@wire(0x0201)
@dataclass(frozen=True, slots=True)
class RingId:
    """A ring identifier: the representative's id and a sequence number (seed: ring_id).

    Rendered as ``"seq:rep"`` for the trace's ``view`` column.
    """

    seq: int
    rep: str

    def __eq__(self, other: object) -> bool:
        # The dataclass's comparison, first asking whether ``other`` is this very ring
        # id: every packet is checked against the node's ring id, and in the simulator
        # it mostly carries the same object. (Hashing stays the dataclass's.)
        if other is self:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.seq, self.rep) == (other.seq, other.rep)  # type: ignore[attr-defined]

    def __str__(self) -> str:
        return f"{self.seq}:{self.rep}"


@wire(0x0202)
@fast_init
@dataclass(frozen=True, slots=True)
class Chunk:
    """One application message, or one fragment of it, packed inside a frame.

    ``frag``/``frags``: this piece's index and the number of pieces (1 for a whole message).
    """

    msg_id: str
    payload: bytes
    frag: int = 0
    frags: int = 1


@wire(0x0203)
@fast_init
@dataclass(frozen=True, slots=True)
class Mcast:
    """A regular broadcast frame: one sequence number on ring ``ring_id``.

    ``sender`` is the node that originated it (kept on retransmissions); ``safe`` picks
    safe delivery for every chunk in the frame (a frame only packs messages of one order).
    """

    ring_id: RingId
    seq: int
    sender: str
    safe: bool
    chunks: tuple[Chunk, ...]


@wire(0x0204)
@dataclass(frozen=True, slots=True)
class RecoveryMcast:
    """A frame of the new ring carrying an old ring's message (recovery step 1)."""

    ring_id: RingId
    seq: int
    sender: str
    old: Mcast


@wire(0x0205)
@fast_init
@dataclass(frozen=True, slots=True)
class Token:
    """The regular token (the Totem paper, "Total Ordering Protocol - Token Fields").

    ``aru_id`` is ``""`` for the Totem paper's null. ``fcc`` counts the frames broadcast during the
    last rotation and ``backlog`` sums the members' backlogs (flow control). ``retrans_flg``,
    ``retrans_id`` and ``rec_seq`` only matter in the Recovery state: a member rebroadcast
    old-ring messages within the last rotation (and which one did last), and the highest
    sequence number used for such a message.
    """

    ring_id: RingId
    token_seq: int
    seq: int
    aru: int
    aru_id: str
    rtr: tuple[int, ...]
    fcc: int
    backlog: int
    retrans_flg: bool = False
    retrans_id: str = ""
    rec_seq: int = 0


@wire(0x0206)
@dataclass(frozen=True, slots=True)
class Join:
    """A join message: the sender's proposed membership (the Totem paper, "Gather State").

    ``ring_seq`` is the highest ring sequence number the sender knows, so the representative
    can pick a larger one.
    """

    sender: str
    ring_seq: int
    proc_set: tuple[str, ...]
    fail_set: tuple[str, ...]


@wire(0x0207)
@dataclass(frozen=True, slots=True)
class MembEntry:
    """What one member adds to the commit token on its first rotation (the corosync Totem
    slides, "Commit").

    ``ring_id`` is its old ring, ``my_aru``/``high_delivered``/``high_seq`` its state in it;
    ``received_flg`` is true when it holds every message of the old ring it knows of.
    ``deliver_memb``: the transitional configurations of this old ring whose recovery it
    took part in and did not finish (the Totem paper, "Failure of Recovery"), as the senders
    whose frames past a gap a member that did finish may have delivered; empty if none.
    """

    node: str
    ring_id: RingId
    my_aru: int
    high_delivered: int
    high_seq: int
    received_flg: bool
    deliver_memb: tuple[str, ...] = ()


@wire(0x0208)
@dataclass(frozen=True, slots=True)
class CommitToken:
    """The commit token (the Totem paper, "Commit State"): two rotations, then the regular token."""

    ring_id: RingId
    token_seq: int
    memb_list: tuple[str, ...]
    memb_index: int
    entries: tuple[MembEntry, ...]


@wire(0x0209)
@dataclass(frozen=True, slots=True)
class MergeDetect:
    """Sent by an idle ring's representative so that another ring can notice it (corosync)."""

    ring_id: RingId
    sender: str


@wire(0x020A)
@dataclass(frozen=True, slots=True)
class TokenAck:
    """Not the Totem paper's: the answer to a retransmitted token that had already arrived.

    A node that receives again a token it has already passed on (its predecessor saw no
    sign of it and retransmitted it) answers with this, so that the predecessor stops
    retransmitting and knows the node is alive (docs/protocols/totem.md, "Failing the
    next node when the token goes unanswered").
    """

    ring_id: RingId
    token_seq: int


MESSAGE_TYPES: tuple[type, ...] = (
    RingId,
    Chunk,
    Mcast,
    RecoveryMcast,
    Token,
    Join,
    MembEntry,
    CommitToken,
    MergeDetect,
    TokenAck,
)
