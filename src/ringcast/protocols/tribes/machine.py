"""The ``NonBlockingCoordinator`` of one node (Tomcat's), complete.

:class:`TribesMachine` keeps Tomcat's fields, in snake case (``view``, ``view_id``,
``suggested_view``, ``suggested_view_id``, ``membership``,
``wait_for_coord_msg_timeout`` for ``viewId``, ``suggestedView``, ``suggestedviewId``,
``waitForCoordMsgTimeout``), and its methods
(``startElection``, ``processCoordMessage``, ``mergeOnArrive``, ``handleMyToken``,
``handleOtherToken``, ``handleViewConf``, ``memberAdded``, ``memberDisappeared``,
``sendElectionMsgToNextInline``), and runs every event of the transition table of
:mod:`._state` through :class:`ringcast.core.fsm.Driver`. The places where Tomcat's code
is empty, commented out or wrong, and where it is silent, are marked "Decision"
and listed in docs/protocols/tribes.md.

The token (``COORD_REQUEST``) travels by reliable unicast along the absolute order of
the members (:mod:`._order`): each node merges what it knows into it
(``mergeOnArrive``), re-leads it to the highest member it now knows of, and sends it to
the next member of the round's route; after the last one it goes to its leader. There
it either returns to its source (if unchanged since the source sent it, ``COORD_CONF``
goes to every member, who install the view; if it grew, it is resent), or is
taken over by the leader (a foreign token), or is held while the leader's own token is
out (the leader's token will carry what it brought).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Any

from ringcast.core.effects import (
    CancelTimer,
    Deliver,
    Effect,
    InstallView,
    LeaderChanged,
    Multicast,
    Persist,
    Record,
    Send,
    SetTimer,
)
from ringcast.core.events import (
    ORDERS,
    Received,
    SendFailed,
    Start,
    Stop,
    Submit,
    TimerFired,
)
from ringcast.core.fsm import Driver
from ringcast.core.ids import NodeId, View
from ringcast.core.machine import MachineContext
from ringcast.core.scale import doublings
from ringcast.protocols.tribes import _order
from ringcast.protocols.tribes._membership import Membership
from ringcast.protocols.tribes._messages import (
    MAX_ID,
    AppData,
    CoordAlive,
    CoordConf,
    CoordMember,
    CoordRequest,
    MemberBeacon,
    MemberShutdown,
    conf_problem,
    token_problem,
)
from ringcast.protocols.tribes._state import TABLE, Action, Ev, State

INCARNATION_KEY = "tribes.incarnation"
VIEWS_KEY = "tribes.views"
BEACON_TIMER = "tribes:beacon"
START_TIMER = "tribes:start"
WAIT_TIMER = "tribes:wait"
CONCLUDED_MEMORY = 64
"""How many concluded elections a node remembers, to drop late copies of their tokens."""
HEARTBEAT_WAIT_LIMIT = 64
"""The heartbeat check waits at most this many member_drop_times between elections."""


def _view_number(view_id: str) -> tuple[NodeId, int] | None:
    """A view id ``leader:n`` as (leader, n); None if it is not one."""
    leader, _, counter = view_id.rpartition(":")
    return (leader, int(counter)) if leader and counter.isdigit() else None


@dataclass(frozen=True, slots=True)
class TribesSettings:
    heartbeat_interval: int
    member_drop_time: int
    """The drop time in force: the setting, plus ``drop_beacons_per_doubling`` beacon
    periods for each doubling of the group beyond 8 members (docs/protocols/tribes.md,
    decision 19)."""
    start_wait: int
    wait_for_coord_msg_timeout: int
    hop_time: int
    priorities: dict[NodeId, int]

    @classmethod
    def from_mapping(cls, s: dict[str, Any], *, nodes: int = 0) -> TribesSettings:
        """The settings of a node in a group of ``nodes`` configured nodes (0: the
        drop time as set, whatever the size)."""
        drop = int(s["member_drop_time"])
        interval = int(s["heartbeat_interval"])
        if drop <= interval:
            raise ValueError(
                f"settings.member_drop_time ({drop}ns) must exceed "
                f"settings.heartbeat_interval ({interval}ns)"
            )
        per_doubling = int(s["drop_beacons_per_doubling"])
        return cls(
            heartbeat_interval=interval,
            member_drop_time=drop + per_doubling * interval * doublings(nodes),
            start_wait=int(s["start_wait"]),
            wait_for_coord_msg_timeout=int(s["wait_for_coord_msg_timeout"]),
            hop_time=int(s["rto"]),
            priorities=_order.parse_priorities(str(s["priorities"])),
        )


def _names(members: tuple[CoordMember, ...] | list[CoordMember]) -> tuple[NodeId, ...]:
    return tuple(m.node for m in members)


def _ordered(members: list[CoordMember]) -> tuple[CoordMember, ...]:
    return tuple(sorted(members, key=lambda m: _order.key(m.priority, m.node)))


def _probe(cm: CoordMember) -> Send:
    """The non-blocking ``alive()``: a reliable ``COORD_ALIVE``; its failure-on-delivery
    drops the member if it is still hearsay (:meth:`TribesMachine._send_failed`)."""
    return Send(cm.node, CoordAlive(cm.incarnation), reliable=True)


def _hearsay_added(cm: CoordMember) -> list[Effect]:
    """A member learnt by hearsay: memberAdded(mbr, false), and probed."""
    return [Record.of("coord", op="memberAdded", node=cm.node, hearsay=True), _probe(cm)]


class TribesMachine:
    """One node's auto-merging, non-blocking coordinator election (sans-IO)."""

    def __init__(self, ctx: MachineContext, settings: TribesSettings):
        self.node_id: NodeId = ctx.node_id
        self.settings = settings
        self.priority = settings.priorities.get(ctx.node_id, 0)
        self.incarnation = int(ctx.storage.get(INCARNATION_KEY, b"0")) + 1
        self.views_confirmed = int(ctx.storage.get(VIEWS_KEY, b"0"))
        self.me = CoordMember(ctx.node_id, self.priority, self.incarnation)
        self.wait_for_coord_msg_timeout = settings.wait_for_coord_msg_timeout
        self.membership = Membership(ctx.node_id, settings.member_drop_time)
        self.state = State.STARTING
        self.start_time = 0
        # Tomcat's NonBlockingCoordinator fields.
        self.view: tuple[CoordMember, ...] = ()
        self.view_id: str | None = None
        self.leader: NodeId | None = None
        self.suggested_view: tuple[CoordMember, ...] = ()
        self.suggested_view_id: str | None = None
        # Not in the seed: the last token this node handled (what it believes the
        # election is: Tomcat's log line "A - {A-ldr, mbrs-A,B,C,D,E, id=X}"), the last token
        # it sent and to whom (for failure-on-delivery), whether its membership changed
        # since it last merged it into a token, and the elections it saw concluded.
        self.last_token: CoordRequest | None = None
        self.outbound: tuple[CoordRequest, NodeId] | None = None
        self.dirty = False
        # Not in Tomcat's state: since when the installed view has differed from the
        # membership while idle, and how long the heartbeat check waits before the next
        # election it starts for that (doubling while the difference lasts).
        self.inconsistent_since: int | None = None
        self.heartbeat_wait = settings.member_drop_time
        self.elections = 0
        self.concluded: deque[str] = deque(maxlen=CONCLUDED_MEMORY)
        self.installed_from: dict[NodeId, int] = {}
        # Decision 18: the COORD_CONF of the view this node confirmed as its coordinator,
        # and when it last sent it again to a member whose beacon named an earlier one.
        self.my_conf: CoordConf | None = None
        self.reconfirmed: dict[NodeId, int] = {}
        self._malformed = 0
        # The token (its election id) and the member it was sent to again after its
        # first failure-on-delivery (decision 24).
        self.resent: tuple[str, NodeId] | None = None
        # The members this node's current confirmation was sent again to (decision 25).
        self.conf_resent: set[tuple[str, NodeId]] = set()
        self.fsm = Driver(
            TABLE,
            self,
            {
                Action.START: self._start,
                Action.START_ELECTION: self._startElection,
                Action.MEMBER_ADDED: self._memberAdded,
                Action.MEMBER_DISAPPEARED: self._memberDisappeared,
                Action.HANDLE_MY_TOKEN: self._handleMyToken,
                Action.HANDLE_OTHER_TOKEN: self._handleOtherToken,
                Action.HANDLE_VIEW_CONF: self._handleViewConf,
                Action.NEXT_INLINE: self._sendElectionMsgToNextInline,
                Action.TIMEOUT: self._coordMsgTimeout,
                Action.STOP: self._stop,
            },
            status=self.status,
        )

    # ------------------------------------------------------------------ queries

    @property
    def drops(self) -> int:
        """Messages dropped as malformed or unexpected, and events the table does not
        list in the state they came in."""
        return self._malformed + self.fsm.dropped

    def getCoordinator(self) -> NodeId | None:
        return self.leader

    def getView(self) -> tuple[NodeId, ...]:
        return _names(self.view)

    def isCoordinator(self) -> bool:
        return self.leader == self.node_id

    def known(self) -> tuple[CoordMember, ...]:
        """This node and its membership, in absolute order."""
        return _ordered([self.me, *(m.wire() for m in self.membership.members.values())])

    # ------------------------------------------------------------------ dispatch

    def handle(self, event: Any, now: int) -> list[Effect]:
        if self.state is State.STOPPED:
            return []
        tp = type(event)
        out: list[Effect]
        if tp is Received:
            out = self._received(event, now)
        elif tp is TimerFired:
            out = self._timer(event.name, now)
        elif tp is Submit:
            out = self._submit(event)
        elif tp is SendFailed:
            out = self._send_failed(event, now)
        elif tp is Start:
            out = self.fsm.step(Ev.START, now)
        elif tp is Stop:
            out = self.fsm.step(Ev.STOP, now)
        else:
            out = []
        self.fsm.report_change(out)
        return out

    def status(self) -> dict[str, Any]:
        """The fields of the ``state`` trace row, written when one of them changes."""
        return {
            "state": self.state.value,
            "view": self.view_id or "",
            "coordinator": self.leader or "",
            "members": len(self.view),
            "election": self.suggested_view_id or "",
        }

    def _drop(self, src: NodeId, reason: str) -> list[Effect]:
        self._malformed += 1
        return [Record.of("drop", src=src, reason=reason)]

    def _received(self, event: Received, now: int) -> list[Effect]:
        msg, src = event.msg, event.src
        tp = type(msg)
        if tp is MemberBeacon:
            if (
                not all(isinstance(x, int) for x in (msg.priority, msg.start_time))
                or not (isinstance(msg.incarnation, int) and msg.incarnation >= 1)
                or not (isinstance(msg.view_id, str) and len(msg.view_id) <= MAX_ID)
            ):
                return self._drop(src, "malformed beacon")
            if src == self.node_id:
                return []
            gone, added = self.membership.beacon(src, msg, now)
            out: list[Effect] = []
            for n in gone:
                out += self.fsm.step(Ev.MEMBER_DISAPPEARED, now, n)
            for n in added:
                out += self.fsm.step(Ev.MEMBER_ADDED, now, n)
            return out + self._reconfirm(src, msg, now)
        if tp is MemberShutdown:
            if not isinstance(msg.incarnation, int) or msg.incarnation < 1:
                return self._drop(src, "malformed shutdown")
            if src != self.node_id and self.membership.shutdown(src, msg.incarnation, now):
                return self.fsm.step(Ev.MEMBER_DISAPPEARED, now, src)
            return []
        if tp is CoordRequest:
            problem = token_problem(msg)
            if problem:
                return self._drop(src, problem)
            # processCoordMessage: Tomcat's dispatch on the token's source.
            ev = Ev.MY_TOKEN if msg.source == self.node_id else Ev.OTHER_TOKEN
            return self.fsm.step(ev, now, msg, src)
        if tp is CoordConf:
            problem = conf_problem(msg)
            if problem:
                return self._drop(src, problem)
            return self.fsm.step(Ev.VIEW_CONF, now, msg, src)
        if tp is CoordAlive:
            return []  # the reliable layer's acknowledgement answered the probe
        if tp is AppData:
            if (
                not isinstance(msg.msg_id, str)
                or not isinstance(msg.payload, bytes)
                or msg.order not in ORDERS
            ):
                return self._drop(src, "malformed application message")
            if type(msg.to_incarnation) is not int:
                return self._drop(src, "malformed application message")
            if msg.to_incarnation not in (0, self.incarnation):
                return self._drop(src, "application message to an earlier incarnation")
            return [Deliver(msg.msg_id, msg.payload, msg.order, src)]
        return self._drop(src, f"unexpected {tp.__name__}")

    def _timer(self, name: str, now: int) -> list[Effect]:
        if name == BEACON_TIMER:
            out: list[Effect] = [
                Multicast(self._beacon()),
                SetTimer(BEACON_TIMER, self.settings.heartbeat_interval),
            ]
            for cm in self.membership.expire(now):  # suspected: probed before it goes
                out += [Record.of("coord", op="suspect", node=cm.node), _probe(cm)]
            # Decision: a hearsay member is probed again every member_drop_time, so a
            # node cut off from it (no beacon, token or view reaches it) still loses it.
            out += map(_probe, self.membership.probes_due(now))
            return out + self._heartbeat(now)
        if name == START_TIMER:
            return self.fsm.step(Ev.STARTED, now)
        if name == WAIT_TIMER:
            return self.fsm.step(Ev.TIMEOUT, now)
        return []

    def _heartbeat(self, now: int) -> list[Effect]:
        """Tribes' ``heartbeat()``: an idle node whose view has differed from its
        membership for ``member_drop_time`` starts an election (Decision: any node, not
        only the highest; the check waits twice as long after each such election while
        the difference lasts, up to ``HEARTBEAT_WAIT_LIMIT`` times, so that a lasting
        asymmetry costs an election now and then, not a loop)."""
        drop_time = self.settings.member_drop_time
        if self.state is not State.IDLE or self.view == self.known():
            if self.state is State.IDLE:
                self.inconsistent_since = None
                self.heartbeat_wait = drop_time
            return []
        if self.inconsistent_since is None:
            self.inconsistent_since = now
        if now - self.inconsistent_since < self.heartbeat_wait:
            return []
        self.inconsistent_since = now
        self.heartbeat_wait = min(2 * self.heartbeat_wait, HEARTBEAT_WAIT_LIMIT * drop_time)
        out: list[Effect] = [Record.of("coord", op="heartbeat", view=list(_names(self.view)))]
        return out + self.fsm.step(Ev.HEARTBEAT, now)

    def _send_failed(self, event: SendFailed, now: int) -> list[Effect]:
        msg = event.msg
        if type(msg) is CoordRequest:
            if self.outbound is not None and self.outbound[0] is msg:
                return self.fsm.step(Ev.SEND_FAILED, now, msg, event.dst)
            return []
        if type(msg) is CoordConf:
            # Decision 25: the confirmation of this node's current view, lost on the way
            # to a member of it, is sent once more (a second failure is left to the
            # member's beacon, decision 18).
            conf = self.my_conf
            if (
                conf is not None
                and msg is conf
                and conf.view_id == self.view_id
                and (conf.view_id, event.dst) not in self.conf_resent
            ):
                self.conf_resent.add((conf.view_id, event.dst))
                return [
                    Record.of("coord", op="resend_conf", node=event.dst, view=conf.view_id),
                    Send(event.dst, conf, reliable=True),
                ]
            return []
        if type(msg) is CoordAlive:
            # Decision: the non-blocking alive(): the probe of a hearsay member failed.
            m = self.membership.members.get(event.dst)
            if m is None or m.direct or m.incarnation > msg.incarnation:
                return []
            out: list[Effect] = [Record.of("coord", op="probe_failed", node=event.dst)]
            if not self.membership.probe_failed(event.dst, msg.incarnation, now):
                return [*out, _probe(m.wire())]  # once more before it is let go
            return out + self.fsm.step(Ev.MEMBER_DISAPPEARED, now, event.dst)
        return []

    # ------------------------------------------------------------------ application

    def _submit(self, event: Submit) -> list[Effect]:
        """Non-blocking: application messages flow whatever the election is doing."""
        known = {m.node: m.incarnation for m in self.view}
        known.update((m.node, m.incarnation) for m in self.membership.members.values())
        known.pop(self.node_id, None)
        out: list[Effect] = [
            Send(n, AppData(event.msg_id, event.payload, event.order, inc), reliable=True)
            for n, inc in sorted(known.items())
        ]
        out.append(Deliver(event.msg_id, event.payload, event.order, self.node_id))
        return out

    # ------------------------------------------------------------------ actions

    def _start(self, now: int) -> list[Effect]:
        self.start_time = now
        return [
            Persist(INCARNATION_KEY, str(self.incarnation).encode()),
            Multicast(self._beacon()),
            SetTimer(BEACON_TIMER, self.settings.heartbeat_interval),
            SetTimer(START_TIMER, self.settings.start_wait),
        ]

    def _stop(self, now: int) -> list[Effect]:
        """A graceful leave: McastService announces the shutdown, so the others drop
        this member at once (a crash is seen after ``member_drop_time``)."""
        self.state = State.STOPPED
        return [
            Multicast(MemberShutdown(self.incarnation)),
            CancelTimer(WAIT_TIMER),
            CancelTimer(BEACON_TIMER),
            CancelTimer(START_TIMER),
        ]

    def _memberAdded(self, now: int, node: NodeId) -> list[Effect]:
        out: list[Effect] = [Record.of("coord", op="memberAdded", node=node)]
        if self.state is State.STARTING:
            return out  # Tribes: "if (started && elect) startElection(false)"
        self.dirty = True
        return out + self._startElection(now, False)

    def _memberDisappeared(self, now: int, node: NodeId) -> list[Effect]:
        out: list[Effect] = [Record.of("coord", op="memberDisappeared", node=node)]
        if self.state is State.STARTING:
            return out
        self.dirty = True
        # Decision: every node whose membership changed runs startElection (Tomcat: only
        # the coordinator or the highest, forced); a non-leader then waits for the token.
        return out + self._startElection(now, False)

    def _new_id(self) -> str:
        self.elections += 1
        return f"{self.node_id}.{self.incarnation}.{self.elections}"

    def _arm(self, size: int) -> SetTimer:
        """waitForCoordMsgTimeout, plus a hop's retransmission time per member: a
        round through a large group may take longer than the bare timeout."""
        return SetTimer(WAIT_TIMER, self.wait_for_coord_msg_timeout + size * self.settings.hop_time)

    def _startElection(self, now: int, force: bool = False) -> list[Effect]:
        self._leave_starting()
        members = self.known()
        if len(members) == 1:
            # "the only member, no need for an election"
            self.suggested_view_id, self.suggested_view = None, ()
            self.state = State.IDLE
            if _names(self.view) == (self.node_id,):
                return [CancelTimer(WAIT_TIMER)]
            return [CancelTimer(WAIT_TIMER), *self._install(self._new_id(), (self.me,))]
        if self.suggested_view_id is not None:
            return [Record.of("coord", op="abandoned", reason="election running")]
        if self.view == members:
            self.state = State.IDLE
            self.dirty = False
            return [
                CancelTimer(WAIT_TIMER),
                Record.of("coord", op="abandoned", reason="view matches"),
            ]
        leader = members[0].node
        if leader == self.node_id or force:
            tok = CoordRequest(self._new_id(), leader, self.node_id, members, _names(members))
            self.suggested_view_id, self.suggested_view = tok.id, members
            self.dirty = False
            self.state = State.ELECTING
            out: list[Effect] = [self._arm(len(members))]
            return out + self._forward(now, tok, to_leader=leader != self.node_id)
        self.state = State.WAITING
        return [self._arm(len(members)), Record.of("coord", op="wait", leader=leader)]

    def _leave_starting(self) -> None:
        if self.state is State.STARTING:
            self.state = State.IDLE

    def _mergeOnArrive(
        self,
        now: int,
        tok_members: tuple[CoordMember, ...],
        gone: tuple[CoordMember, ...],
        sender: NodeId,
    ) -> tuple[tuple[CoordMember, ...], tuple[CoordMember, ...], list[Effect]]:
        """The token's knowledge and this node's, merged: (members, gone, effects).

        Decision: no blocking ``alive()`` probe. A member this node saw disappear (same
        incarnation) is struck and reported ``gone``; a ``gone`` report removes a hearsay
        member but not one this node hears directly (direct evidence wins); a member new
        to this node is added as hearsay at once and probed with ``COORD_ALIVE`` in the
        background (and again every ``member_drop_time`` while it stays hearsay). The
        token's ``sender`` is alive: it is never struck, and if this node saw it
        disappear it is learnt again as hearsay."""
        ms = self.membership
        out: list[Effect] = []
        gone_map = {g.node: g for g in gone}
        for g in gone:
            if g.node == self.node_id:
                del gone_map[g.node]
                continue
            m = ms.members.get(g.node)
            if m is None:
                continue
            if m.direct and m.incarnation >= g.incarnation:
                del gone_map[g.node]
            elif ms.forget_hearsay(g.node, g.incarnation, now):
                out.append(Record.of("coord", op="forget", node=g.node))
        merged: dict[NodeId, CoordMember] = {}
        for cm in tok_members:
            if cm.node == self.node_id:
                continue
            struck = gone_map.get(cm.node)
            if struck is not None and struck.incarnation >= cm.incarnation:
                continue
            vouched = cm.node == sender  # it sent this token: alive, whatever this node saw
            if ms.knows_dead(cm) and not vouched:
                gone_map[cm.node] = cm
                continue
            mine = ms.members.get(cm.node)
            if mine is not None and mine.incarnation > cm.incarnation:
                continue  # the token lists an older incarnation; mine is added below
            merged[cm.node] = cm
            if ms.learn(cm, now, vouched=vouched):
                out += _hearsay_added(cm)
        for m in ms.members.values():
            merged[m.node] = m.wire()
        merged[self.node_id] = self.me
        self.dirty = False
        gone_out = tuple(sorted(gone_map.values(), key=lambda g: g.node))
        return _ordered(list(merged.values())), gone_out, out

    def _handleMyToken(self, now: int, tok: CoordRequest, sender: NodeId) -> list[Effect]:
        if tok.id != self.suggested_view_id:
            return self._drop(sender, f"stale token {tok.id}")
        self._leave_starting()
        members, gone, out = self._mergeOnArrive(now, tok.members, tok.gone, sender)
        tok = replace(tok, leader=members[0].node, members=members, gone=gone)
        self.last_token = tok
        if members[0].node == self.node_id:
            return out + self._at_leader(now, tok)
        # Leadership change: a higher member is known now; it takes the token over.
        self.suggested_view_id, self.suggested_view = None, ()
        self.state = State.WAITING
        return [*out, self._arm(len(members)), *self._forward(now, tok, to_leader=True)]

    def _handleOtherToken(self, now: int, tok: CoordRequest, sender: NodeId) -> list[Effect]:
        if tok.id in self.concluded:
            return self._drop(sender, f"token {tok.id} of a concluded election")
        self._leave_starting()
        members, gone, out = self._mergeOnArrive(now, tok.members, tok.gone, sender)
        tok = replace(tok, leader=members[0].node, members=members, gone=gone)
        self.last_token = tok
        if members[0].node == self.node_id:
            return out + self._at_leader(now, tok)
        if self.suggested_view_id is not None and self.suggested_view_id != tok.id:
            # "unless it's dropped by a higher leader": this node's own election is
            # superseded; its token will end at that leader too.
            out.append(Record.of("coord", op="superseded", election=self.suggested_view_id))
        self.suggested_view_id, self.suggested_view = None, ()
        self.state = State.WAITING
        return [*out, self._arm(len(members)), *self._forward(now, tok)]

    def _at_leader(self, now: int, tok: CoordRequest) -> list[Effect]:
        """The token is at its leader, this node, with ``tok.members`` merged."""
        members = tok.members
        if tok.source == self.node_id and tok.id == self.suggested_view_id:
            if members == self.suggested_view:
                return self._confirm(now, tok)
            # "Original X{..} == Arrived X{..}"? No: the list grew (or shrank) on the
            # way; resend the token so every member sees the final list.
            return self._new_round(now, tok, "resend")
        if self.suggested_view_id is not None:
            # Decision (a foreign token at a leader whose own token is out): hold it;
            # its knowledge is merged, and the leader's own token will carry it.
            self.state = State.ELECTING
            return [
                Record.of(
                    "coord",
                    op="hold",
                    election=tok.id,
                    leader=tok.leader,
                    source=tok.source,
                    members=list(_names(members)),
                )
            ]
        # Decision (Tomcat's commented-out restart): the leader takes a foreign token
        # over as its source and sends it round again: Z{A-ldr, A-src, ...}.
        return self._new_round(now, tok, "adopt")

    def _new_round(self, now: int, tok: CoordRequest, why: str) -> list[Effect]:
        members = tok.members
        tok = CoordRequest(tok.id, self.node_id, self.node_id, members, _names(members), tok.gone)
        self.suggested_view_id, self.suggested_view = tok.id, members
        self.state = State.ELECTING
        out: list[Effect] = [
            Record.of("coord", op=why, election=tok.id, members=list(_names(members))),
            self._arm(len(members)),
        ]
        return out + self._forward(now, tok)

    def _confirm(self, now: int, tok: CoordRequest) -> list[Effect]:
        """The token came back unchanged: COORD_CONF to every member, and install."""
        self.views_confirmed += 1
        view_id = f"{self.node_id}:{self.views_confirmed}"
        conf = CoordConf(tok.id, view_id, self.node_id, tok.members)
        self.my_conf, self.reconfirmed, self.conf_resent = conf, {}, set()
        out: list[Effect] = [
            Persist(VIEWS_KEY, str(self.views_confirmed).encode()),
            Record.of("coord", op="conf", election=tok.id, members=list(_names(tok.members))),
        ]
        out += [Send(m.node, conf, reliable=True) for m in tok.members if m.node != self.node_id]
        out += self._handleViewConf(now, conf, self.node_id)
        return out

    def _beacon(self) -> MemberBeacon:
        return MemberBeacon(self.priority, self.start_time, self.incarnation, self.view_id or "")

    def _reconfirm(self, src: NodeId, b: MemberBeacon, now: int) -> list[Effect]:
        """Decision 18: a member of the view this node confirmed whose beacon names an
        earlier view of this node's missed the confirmation (its COORD_CONF failed on
        delivery, or arrived corrupted); send it again, at most once a member_drop_time."""
        conf = self.my_conf
        if conf is None or conf.view_id != self.view_id or b.view_id in ("", conf.view_id):
            return []
        theirs = _view_number(b.view_id)
        if theirs is None or theirs[0] != self.node_id:
            return []  # another leader's view (or none): the elections settle that
        if theirs[1] >= self.installed_from[self.node_id]:
            return []
        if not any(m.node == src and m.incarnation == b.incarnation for m in conf.members):
            return []
        last = self.reconfirmed.get(src)
        if last is not None and now - last < self.settings.member_drop_time:
            return []
        self.reconfirmed[src] = now
        return [
            Record.of("coord", op="reconfirm", node=src, view=conf.view_id),
            Send(src, conf, reliable=True),
        ]

    def _install(self, election: str, members: tuple[CoordMember, ...]) -> list[Effect]:
        """A view of this node alone (no election needed)."""
        self.views_confirmed += 1
        view_id = f"{self.node_id}:{self.views_confirmed}"
        self.view, self.view_id, self.leader = members, view_id, self.node_id
        self.installed_from[self.node_id] = self.views_confirmed
        self.concluded.append(election)
        return [
            Persist(VIEWS_KEY, str(self.views_confirmed).encode()),
            InstallView(View(view_id, _names(members))),
            LeaderChanged(self.node_id, view_id),
        ]

    def _handleViewConf(self, now: int, conf: CoordConf, sender: NodeId) -> list[Effect]:
        names = _names(conf.members)
        if conf.view_id == self.view_id:
            return []  # "we already have this view"
        mine = next((m for m in conf.members if m.node == self.node_id), None)
        if mine is None or mine.incarnation != self.incarnation:
            return self._drop(sender, f"COORD_CONF {conf.view_id} does not list this node")
        parsed = _view_number(conf.view_id)
        if parsed is None or parsed[0] != conf.leader:
            return self._drop(sender, f"COORD_CONF with a malformed view id {conf.view_id!r}")
        leader, n = parsed
        if n <= self.installed_from.get(leader, 0) and leader != self.node_id:
            return self._drop(sender, f"stale COORD_CONF {conf.view_id}")
        self._leave_starting()
        self.installed_from[leader] = n
        self.view, self.view_id, self.leader = conf.members, conf.view_id, conf.leader
        self.concluded.append(conf.id)
        ms = self.membership
        out: list[Effect] = [
            InstallView(View(conf.view_id, names)),
            LeaderChanged(conf.leader, conf.view_id),
        ]
        # Decision: the confirmed view vouches for its members, even one this node saw
        # disappear (a partition healing as the round goes); new ones are probed.
        for cm in conf.members:
            if cm.node != self.node_id and ms.learn(cm, now, vouched=True):
                out += _hearsay_added(cm)
        for node in sorted(ms.names() - set(names)):
            if not ms.members[node].direct:
                ms.remove(node, now)  # hearsay the group did not confirm
        if self.suggested_view_id == conf.id or self.suggested_view == conf.members:
            self.suggested_view_id, self.suggested_view = None, ()
        if self.suggested_view_id is not None:
            self.state = State.ELECTING  # this node's own election goes on and will merge
            return out
        out.append(CancelTimer(WAIT_TIMER))
        self.state = State.IDLE
        if self.dirty and self.known() != self.view:
            # Decision: a change this node saw after the token passed it starts a new
            # election (Tribes: only if a higher member is known).
            out += self._startElection(now, False)
        return out

    def _sendElectionMsgToNextInline(
        self, now: int, tok: CoordRequest, dst: NodeId
    ) -> list[Effect]:
        """Failure-on-delivery of the token to ``dst``: it is sent once more (decision
        24); if that fails too, ``dst`` is struck from the token (and from the membership
        if only hearsay) and the token goes to the next in line."""
        self._leave_starting()
        if self.resent != (tok.id, dst):
            self.resent = (tok.id, dst)
            self.outbound = (tok, dst)
            return [
                Record.of("coord", op="resend", election=tok.id, node=dst),
                Send(dst, tok, reliable=True),
            ]
        m = self.membership.members.get(dst)
        if m is not None and not m.direct:
            self.membership.remove(dst, now)
        members = tuple(x for x in tok.members if x.node != dst)
        out: list[Effect] = [Record.of("coord", op="unreachable", election=tok.id, node=dst)]
        if not members:
            return out
        tok = replace(tok, members=members, leader=members[0].node)
        if tok.leader == self.node_id and tok.source == self.node_id:
            self.suggested_view = tuple(x for x in self.suggested_view if x.node != dst)
        return out + self._forward(now, tok, failed=dst)

    def _coordMsgTimeout(self, now: int) -> list[Effect]:
        """Decision: Tomcat gave up here; ringcast retries, forced (the token goes to
        the leader this node knows, who takes it over)."""
        out: list[Effect] = [
            Record.of("coord", op="timeout", election=self.suggested_view_id or "")
        ]
        self.suggested_view_id, self.suggested_view = None, ()
        return out + self._startElection(now, True)

    # ------------------------------------------------------------------ the token's path

    def _forward(
        self, now: int, tok: CoordRequest, *, to_leader: bool = False, failed: NodeId | None = None
    ) -> list[Effect]:
        """sendElectionMsgToNextInline: the next member of the route after this node
        that the token still lists; after the last, the leader."""
        listed = set(_names(tok.members))
        nxt: NodeId | None = None
        if not to_leader and self.node_id in tok.route:
            after = tok.route[tok.route.index(self.node_id) + 1 :]
            if failed is not None and failed in after:
                after = after[after.index(failed) + 1 :]
            nxt = next((n for n in after if n in listed and n != self.node_id), None)
        elif failed is not None and not to_leader and failed in tok.route:
            after = tok.route[tok.route.index(failed) + 1 :]
            nxt = next((n for n in after if n in listed and n != self.node_id), None)
        if nxt is None:
            nxt = tok.leader
        if nxt == self.node_id:
            return self._at_leader(now, tok)
        self.outbound = (tok, nxt)
        self.last_token = tok
        return [
            Send(nxt, tok, reliable=True),
            Record.of(
                "coord",
                op="request",
                election=tok.id,
                leader=tok.leader,
                source=tok.source,
                members=list(_names(tok.members)),
                to=nxt,
            ),
        ]
