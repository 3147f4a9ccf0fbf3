"""GMS wire messages (type ids 0x0400-0x04FF), by the names of JGRP-136 and JGroups.

Views travel as ``(view_id, members)``: ``view_id`` is the string ``"coord:counter"``
(JGroups' ``ViewId``), ``members`` the ordered member list whose first entry is the
coordinator. Every field is validated on receipt (:mod:`ringcast.protocols.gms._views`);
a message that fails is dropped and counted, never acted on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire

# -- discovery and join (JGroups' PING, ClientGmsImpl)


@wire(0x0400)
@dataclass(frozen=True, slots=True)
class FindMbrs:
    """A joiner's discovery request (PING's GET_MBRS_REQ), multicast to the domain.
    ``restarted``: the joiner is a restarted node not yet in a view of this incarnation,
    so a view that lists it lists its previous incarnation, which is gone."""

    restarted: bool = False


@wire(0x0401)
@dataclass(frozen=True, slots=True)
class FindMbrsRsp:
    """A member's answer to :class:`FindMbrs`: who it believes the coordinator is."""

    coord: str
    view_id: str


@wire(0x0402)
@dataclass(frozen=True, slots=True)
class Join:
    """JOIN: the joiner asks the coordinator to be let in. ``floor`` is the largest view
    counter an earlier incarnation of the joiner saw (0 for a first start): the view that
    admits it must have a greater one, so that it never installs a view again that its
    earlier incarnation had (and delivers that view's messages a second time)."""

    floor: int = 0


@wire(0x0403)
@dataclass(frozen=True, slots=True)
class JoinRsp:
    """JoinRsp: the view the joiner is a member of, or ``fail`` (not the coordinator)."""

    view_id: str
    members: tuple[str, ...]
    fail: str = ""


@wire(0x0404)
@dataclass(frozen=True, slots=True)
class Leave:
    """LEAVE: a participant asks the coordinator to be excluded."""


@wire(0x0405)
@dataclass(frozen=True, slots=True)
class Suspect:
    """SUSPECT(node): the failure detector of the sender suspects ``node`` (multicast)."""

    node: str


# -- view installation (JGRP-136)


@wire(0x0410)
@dataclass(frozen=True, slots=True)
class ViewMsg:
    """VIEW(v): plain and acknowledged installation, castViewChange's multicast."""

    view_id: str
    members: tuple[str, ...]


@wire(0x0411)
@dataclass(frozen=True, slots=True)
class ViewAck:
    """VIEW_ACK: the sender received (or prepared) view ``view_id``."""

    view_id: str


@wire(0x0412)
@dataclass(frozen=True, slots=True)
class PrepareView:
    """PREPARE_VIEW(V): the first phase of two-phase view installation; ``merge``: ``V``
    is a merge view (a member taking over does not carry it on)."""

    view_id: str
    members: tuple[str, ...]
    merge: bool = False


@wire(0x0413)
@dataclass(frozen=True, slots=True)
class CommitView:
    """COMMIT_VIEW(V): the second phase; install ``V``."""

    view_id: str
    members: tuple[str, ...]


@wire(0x0414)
@dataclass(frozen=True, slots=True)
class StatusView:
    """STATUS_VIEW(V): a participant prepared ``V`` and saw no commit; whoever committed
    ``V`` answers with :class:`CommitView`."""

    view_id: str
    members: tuple[str, ...]


# -- merge (JGroups' MERGE3)


@wire(0x0420)
@dataclass(frozen=True, slots=True)
class MergeInfo:
    """INFO: a member's view id and coordinator, multicast every discovery interval;
    ``answer``: sent back to the sender of a foreign INFO (never answered itself)."""

    view_id: str
    coord: str
    answer: bool = False


@wire(0x0421)
@dataclass(frozen=True, slots=True)
class MergeReq:
    """The merge leader asks a member of another subgroup for its view."""

    merge_id: str


@wire(0x0422)
@dataclass(frozen=True, slots=True)
class MergeRsp:
    """The answer to :class:`MergeReq`: the responder's view, or ``refused``; ``heard``
    lists the other views its INFO told it of, as ``"node=view_id=coordinator"``."""

    merge_id: str
    view_id: str
    members: tuple[str, ...]
    refused: bool = False
    heard: tuple[str, ...] = ()


@wire(0x0423)
@dataclass(frozen=True, slots=True)
class MergeCancel:
    """The merge leader gave merge ``merge_id`` up: whoever answered it is free again
    (JGroups' merge leader cancels a merge at the subgroup coordinators it asked)."""

    merge_id: str


# -- reliable per-sender FIFO multicast (NAKACK2, STABLE)


@wire(0x0430)
@dataclass(frozen=True, slots=True)
class Msg:
    """An application message: sender's ``seqno`` in view ``view_id`` (1, 2, ...)."""

    view_id: str
    seqno: int
    msg_id: str
    payload: bytes
    order: str


@wire(0x0431)
@dataclass(frozen=True, slots=True)
class XmitReq:
    """A negative acknowledgement: resend your messages ``first``..``last`` of ``view_id``."""

    view_id: str
    first: int
    last: int


@wire(0x0433)
@dataclass(frozen=True, slots=True)
class XmitGone:
    """The answer to an ``XmitReq`` for messages the sender has freed: every one of its
    seqnos below ``first_held`` in ``view_id`` was stable (each member, the requester
    included, had said it delivered it) and is gone. ringcast's, not JGroups' (gms.md, "A
    member's word about itself")."""

    view_id: str
    first_held: int


@wire(0x0432)
@dataclass(frozen=True, slots=True)
class Stable:
    """STABLE's digest: the sender's view, the highest seqno it sent in it and, per
    member, the highest seqno it delivered (``delivered[i]`` of ``members[i]``)."""

    view_id: str
    members: tuple[str, ...]
    sent: int
    delivered: tuple[int, ...]


@wire(0x0434)
@dataclass(frozen=True, slots=True)
class Credit:
    """Flow control, as JGroups' MFC replenishes credits: the sender of this message
    delivered the receiver's messages of ``view_id`` up to ``delivered``, so the receiver
    may multicast that many more (``docs/protocols/gms.md``, "Flow control")."""

    view_id: str
    delivered: int


MEMBERSHIP = (FindMbrs, FindMbrsRsp, Join, JoinRsp, Leave, Suspect)
INSTALL = (ViewMsg, ViewAck, PrepareView, CommitView, StatusView)
MERGE = (MergeInfo, MergeReq, MergeRsp, MergeCancel)
DATA = (Msg, XmitReq, XmitGone, Stable, Credit)
