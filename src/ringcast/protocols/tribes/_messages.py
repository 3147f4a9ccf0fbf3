"""The wire messages of ``tribes`` (type ids 0x0300-0x03FF), under Tomcat's names.

* :class:`MemberBeacon`: Tribes' McastService heartbeat, multicast every
  ``heartbeat_interval``: "I am alive", with the member's priority, start time and
  incarnation (a restarted member announces a new incarnation);
* :class:`CoordRequest` (``COORD_REQUEST``): the election token: its id (the id of the
  view it proposes), leader, source and member list, plus two ringcast additions (the
  round's ``route`` and the ``gone`` members, see docs/protocols/tribes.md);
* :class:`CoordConf` (``COORD_CONF``): the confirmed view the leader sends to every member;
* :class:`CoordAlive` (``COORD_ALIVE``): the liveness probe of a member first learnt from
  a token (Tribes' ``alive()``), sent without waiting for an answer;
* :class:`MemberShutdown`: a member leaving gracefully (McastService's shutdown message);
* :class:`AppData`: an application multicast, one reliable unicast per member.

Every field of a received message is checked by :func:`token_problem` /
:func:`conf_problem` before the machine looks at it; a bad one is dropped and counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire
from ringcast.core.ids import NodeId, check_node_id

MAX_MEMBERS = 1024
"""Most members a token or a confirmed view may list; a longer one is malformed."""

MAX_ID = 200
"""Longest election or view id accepted from the network (characters)."""


@wire(0x0300)
@dataclass(frozen=True, slots=True)
class MemberBeacon:
    """McastService's member heartbeat: the sender's priority, start time and incarnation;
    and (ringcast's, decision 18) the id of the view it installed last, ``""`` if none."""

    priority: int
    start_time: int
    incarnation: int
    view_id: str = ""


@wire(0x0306)
@dataclass(frozen=True, slots=True)
class MemberShutdown:
    """McastService's shutdown announcement: this incarnation of the sender leaves now
    (a graceful stop); the others drop it at once instead of after the drop time."""

    incarnation: int


@wire(0x0301)
@dataclass(frozen=True, slots=True)
class CoordMember:
    """One member as a token lists it: enough to place it in the absolute order
    (``priority``, ``node``) and to tell a restarted member from its old self."""

    node: NodeId
    priority: int
    incarnation: int


@wire(0x0302)
@dataclass(frozen=True, slots=True)
class CoordRequest:
    """``COORD_REQUEST``: the election token ``X{A-ldr, A-src, mbrs-A,B,C,D}``.

    ``members`` is the merged knowledge of every node the token visited, in absolute
    order; ``route`` the members the token visits in this round (the list its source
    sent it with); ``gone`` members a node saw disappear (they are struck by everyone
    who does not hear them any more).
    """

    id: str
    leader: NodeId
    source: NodeId
    members: tuple[CoordMember, ...]
    route: tuple[NodeId, ...]
    gone: tuple[CoordMember, ...] = ()


@wire(0x0303)
@dataclass(frozen=True, slots=True)
class CoordConf:
    """``COORD_CONF``: ``X{A-ldr, A-src, mbrs-A,B,C,D,E confirmed}``, to install.

    ``id`` is the election's token id, ``view_id`` the id of the confirmed view
    (``leader:n``, unique: the leader's persisted counter of confirmed views)."""

    id: str
    view_id: str
    leader: NodeId
    members: tuple[CoordMember, ...]


@wire(0x0304)
@dataclass(frozen=True, slots=True)
class CoordAlive:
    """``COORD_ALIVE``: "are you there?" to a member first learnt from a token. The
    reliable layer's acknowledgement is the answer; its failure-on-delivery the verdict."""

    incarnation: int


@wire(0x0305)
@dataclass(frozen=True, slots=True)
class AppData:
    """An application message, sent to every member by reliable unicast (per-sender FIFO).
    ``to_incarnation``: the receiver's incarnation as the sender knew it (0: unknown); a
    restarted receiver drops what was sent to an earlier incarnation of itself (its
    reliable-unicast layer may still retransmit it, and that incarnation may have
    delivered it already)."""

    msg_id: str
    payload: bytes
    order: str
    to_incarnation: int = 0


def _members_problem(members: object, what: str) -> str | None:
    if not isinstance(members, tuple) or not members:
        return f"{what}: empty member list"
    if len(members) > MAX_MEMBERS:
        return f"{what}: {len(members)} members (at most {MAX_MEMBERS})"
    seen: set[str] = set()
    for m in members:
        if type(m) is not CoordMember:
            return f"{what}: member of type {type(m).__name__}"
        try:
            check_node_id(m.node)
        except ValueError as e:
            return f"{what}: {e}"
        if m.node in seen:
            return f"{what}: member {m.node!r} listed twice"
        if not isinstance(m.incarnation, int) or m.incarnation < 1:
            return f"{what}: member {m.node!r} with incarnation {m.incarnation!r}"
        if not isinstance(m.priority, int):
            return f"{what}: member {m.node!r} with priority {m.priority!r}"
        seen.add(m.node)
    return None


def _id_problem(value: object, what: str) -> str | None:
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        return f"{what}: bad id {value!r}"
    return None


def token_problem(msg: CoordRequest) -> str | None:
    """Why ``msg`` is not a well-formed token, or None."""
    problem = _id_problem(msg.id, "COORD_REQUEST") or _members_problem(msg.members, "COORD_REQUEST")
    if problem:
        return problem
    names = {m.node for m in msg.members}
    if msg.leader not in names:
        return f"COORD_REQUEST: leader {msg.leader!r} is not a member"
    try:
        check_node_id(msg.source)
    except ValueError as e:
        return f"COORD_REQUEST: source: {e}"
    if not isinstance(msg.route, tuple) or not msg.route or len(msg.route) > MAX_MEMBERS:
        return "COORD_REQUEST: bad route"
    for n in msg.route:
        try:
            check_node_id(n)
        except ValueError as e:
            return f"COORD_REQUEST: route: {e}"
    if len(set(msg.route)) != len(msg.route):
        return "COORD_REQUEST: route lists a node twice"
    if msg.gone:
        return _members_problem(msg.gone, "COORD_REQUEST gone")
    return None


def conf_problem(msg: CoordConf) -> str | None:
    """Why ``msg`` is not a well-formed confirmed view, or None."""
    problem = (
        _id_problem(msg.id, "COORD_CONF")
        or _id_problem(msg.view_id, "COORD_CONF view")
        or _members_problem(msg.members, "COORD_CONF")
    )
    if problem:
        return problem
    if msg.members[0].node != msg.leader:
        return f"COORD_CONF: leader {msg.leader!r} is not the first member"
    return None
