"""The GMS machine: coordinator-based membership with reliable view installation.

JGroups JGRP-136 ("Reliable view installation") in its three modes
(``view_install``):

* ``plain``: a view is a message (VIEW), retransmitted by its sender until acknowledged
  or until the sender is excluded; a leaving coordinator casts the view without itself
  and is gone. JGroups before JGRP-136: the seed's cases A-D fail.
* ``acks``: the seed's SOLUTION 1 and 2. castViewChange fills missing_acks and blocks
  (further requests are queued) until every member sent VIEW_ACK, a SUSPECT removed it,
  or view_ack_collection_timeout passed; a SUSPECT(P) for a P outside the view makes
  the coordinator resend its view; the view rides in the STABLE digest, and a member
  that sees a greater view it would be coordinator of installs and casts it.
* ``two_phase``: the seed's "Two-Phase View installation": PREPARE_VIEW, VIEW_ACKs,
  COMMIT_VIEW; a SUSPECT during the first phase restarts it without the suspect; a
  participant that prepared and sees no commit asks with STATUS_VIEW and whoever
  committed answers COMMIT_VIEW; the second in line takes over when the coordinator is
  suspected and restarts the first phase (or the second, resending COMMIT_VIEW of the
  view it committed).

Failure detection is JGroups' FD ring: the heartbeat layer reports every silent peer,
but a member acts only on its successors in its view (its ping_dest), multicasting
SUSPECT for them to the group every ``suspect_interval`` while they remain in its view.
Merging follows MERGE3: every member multicasts INFO (view id, coordinator) every
``merge_interval``; a coordinator that heard of members outside its view, under another
coordinator, and is the smallest of the coordinators it heard from, asks one node per
foreign view (its coordinator if heard) for that view and the views it heard of, and
installs one merge view of every member of every view answered (or none: a merge is
all or nothing, the lab's ``merge_atomicity``). The data path is
:mod:`ringcast.protocols.gms.nakack`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ringcast.core.effects import (
    Backpressure,
    CancelTimer,
    Effect,
    InstallView,
    LeaderChanged,
    Multicast,
    Persist,
    Record,
    Send,
    SetTimer,
    StateChanged,
)
from ringcast.core.events import (
    Event,
    Received,
    Start,
    Stop,
    Submit,
    Suspected,
    TimerFired,
    Unsuspected,
)
from ringcast.core.fsm import Driver
from ringcast.core.ids import View
from ringcast.core.machine import MachineContext
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._state import MEMBER_STATES, TABLES, Ev, St
from ringcast.protocols.gms._views import BadField, GView, format_id, id_key, parse_id, parse_view
from ringcast.protocols.gms.nakack import Nakack

MODES = ("plain", "acks", "two_phase")
BOOTS_KEY = "gms.boots"
COUNTER_KEY = "gms.counter"
KEEP_INSTALLED = 32  # committed views remembered to answer STATUS_VIEW
MAX_HEARD = 64  # views a MERGE_RSP reports its sender heard of
MAX_WAVES = 3  # rounds of MERGE_REQ in one merge (the views the answers heard of)
MAX_HELD = 256
"""Submits held while the node is not a member before ``Backpressure(True)``
(``docs/protocols/gms.md``, "Decisions where the seed is silent")."""

EVENT_OF_MSG: dict[type, Ev] = {
    M.FindMbrs: Ev.FIND_MBRS,
    M.FindMbrsRsp: Ev.FIND_MBRS_RSP,
    M.Join: Ev.JOIN,
    M.JoinRsp: Ev.JOIN_RSP,
    M.Leave: Ev.LEAVE,
    M.Suspect: Ev.SUSPECT,
    M.ViewMsg: Ev.VIEW,
    M.ViewAck: Ev.VIEW_ACK,
    M.PrepareView: Ev.PREPARE_VIEW,
    M.CommitView: Ev.COMMIT_VIEW,
    M.StatusView: Ev.STATUS_VIEW,
    M.MergeInfo: Ev.INFO,
    M.MergeReq: Ev.MERGE_REQ,
    M.MergeRsp: Ev.MERGE_RSP,
    M.MergeCancel: Ev.MERGE_CANCEL,
    M.Msg: Ev.MSG,
    M.XmitReq: Ev.XMIT_REQ,
    M.XmitGone: Ev.XMIT_GONE,
    M.Stable: Ev.STABLE,
    M.Credit: Ev.CREDIT,
}
TIMERS = {
    "gms:discovery": Ev.DISCOVERY_TIMER,
    "gms:join": Ev.JOIN_TIMER,
    "gms:fd": Ev.FD_TIMER,
    "gms:ack": Ev.ACK_TIMER,
    "gms:status": Ev.STATUS_TIMER,
    "gms:info": Ev.INFO_TIMER,
    "gms:merge": Ev.MERGE_TIMER,
    "gms:merge_req": Ev.MERGE_REQ_TIMER,
    "gms:leave": Ev.LEAVE_TIMER,
    "gms:stable": Ev.STABLE_TIMER,
    "gms:commit": Ev.COMMIT_TIMER,
}
TIMER_OF = {v: k for k, v in TIMERS.items()}


@dataclass(slots=True)
class _Install:
    """A view change the coordinator is casting (castViewChange)."""

    view: GView
    old: tuple[str, ...]  # the members of the view it replaces (they hear of it too)
    joiners: tuple[str, ...]
    missing_acks: set[str]
    deadline: int
    committed: bool = False
    merge: bool = False  # a merge view: installed whole or not at all
    merge_id: str = ""  # the merge it installs, and the nodes that merge asked
    asked: tuple[str, ...] = ()
    ticked: int = 0  # when the acknowledgements were last asked again


@dataclass(slots=True)
class _Merge:
    merge_id: str
    waiting: set[str]
    views: dict[str, GView] = field(default_factory=dict)
    started: int = 0
    expected: dict[str, str] = field(default_factory=dict)  # asked node -> view its INFO named
    heard: dict[str, tuple[str, str]] = field(default_factory=dict)  # the answers' INFO
    waves: int = 1


class GmsMachine:
    def __init__(self, ctx: MachineContext, s: dict[str, Any]):
        mode = s.get("view_install", "two_phase")
        if mode not in MODES:
            raise ValueError(f"view_install: {mode!r} is not one of {', '.join(MODES)}")
        self.mode = mode
        self.node_id = ctx.node_id
        self.rto = int(s["rto"])
        self.ack_timeout = int(s["view_ack_collection_timeout"])
        self.status_timeout = int(s["status_timeout"])
        self.suspect_interval = int(s["suspect_interval"])
        self.join_timeout = int(s["join_timeout"])
        self.discovery_timeout = int(s["discovery_timeout"])
        self.merge_interval = int(s["merge_interval"])
        self.stable_interval = int(s["stable_interval"])
        self.commit_delay = int(s.get("commit_delay", 0))
        self.rng = random.Random(ctx.seed)
        self.boot = int(ctx.storage.get(BOOTS_KEY, b"0")) + 1
        self.max_counter = int(ctx.storage.get(COUNTER_KEY, b"0"))
        self.stored_counter = self.max_counter  # the counter in stable storage
        self.joining = ctx.joining or self.boot > 1 or ctx.node_id not in ctx.members
        # A restarted node never installs a view of counter <= what its earlier
        # incarnations saw: it may be one they installed, whose messages they delivered.
        self.past = self.max_counter if self.boot > 1 else 0
        self.initial = tuple(ctx.members)
        self.state = St.DISCOVERING if self.joining else St.PARTICIPANT
        self.view: GView | None = None
        self.installed: dict[str, GView] = {}
        self.now = 0
        # failure detection (FD ring over the heartbeat layer) and suspicions
        self.local_suspects: set[str] = set()
        self.suspects: set[str] = set()
        self.announced: set[str] = set()
        # client
        self.responses: dict[str, tuple[str, tuple[int, str]]] = {}
        self.join_attempts = 0
        # two-phase participant
        self.prepared: GView | None = None
        self.prepared_at = 0
        self.prepared_merge = False
        """The view prepared is a merge view (its PREPARE_VIEW said so)."""
        # coordinator
        self.install: _Install | None = None
        self.q_joins: set[str] = set()
        self.join_at: dict[str, int] = {}
        """When each queued JOIN arrived (its latest copy)."""
        self.q_leaves: set[str] = set()
        self.plain_retx: dict[str, tuple[Any, set[str]]] = {}
        # merge
        self.info: dict[str, tuple[int, str, str]] = {}
        self.merge: _Merge | None = None
        self.merge_lock: tuple[str, int, str] | None = None
        """(leader, until, merge id): the merge this node answered, if any."""
        self.answered: dict[str, int] = {}
        """When this node last answered each sender of a foreign INFO."""
        self.merges = 0
        self.timers_armed = False
        self.data = Nakack(ctx.node_id, xmit_interval=self.rto, window=int(s["window"]))
        self.blocked = False
        """The host is told to hold submits (``Backpressure``): flow control, or too
        many submits held while not a member."""
        self.held: list[Submit] = []
        """Submits made while not a member (discovering, joining), sent once it is."""
        self.dropped = 0
        self.foreign_changed = 0
        self.peers = tuple(p for p in ctx.peers if p != ctx.node_id)
        self.revived: dict[str, int] = {}
        """When the failure detector last heard each node again after suspecting it."""
        self.unaccounted: dict[str, int] = {}
        """Nodes outside the view heard alive but not reporting their view, since when."""
        self.viewless: dict[str, int] = {}
        """When each node last refused a MERGE_REQ for being in no view (joining)."""
        self.injected = parse_injected(str(s.get("inject_views", "")), ctx.node_id)
        self.fsm = Driver(
            TABLES,
            self,
            {
                "discover": self._discover,
                "on_find_mbrs_rsp": self._on_find_mbrs_rsp,
                "send_join": self._send_join,
                "left": self._left,
                "on_join_rsp": self._on_join_rsp,
                "joiner_view": self._joiner_view,
                "on_prepare_view": self._on_prepare_view,
                "join_retry": self._join_retry,
                "status_tick": self._status_tick,
                "on_msg": self._on_msg,
                "refuse_merge_req": self._refuse_merge_req,
                "answer_find_mbrs": self._answer_find_mbrs,
                "fd_suspected": self._fd_suspected,
                "fd_unsuspected": self._fd_unsuspected,
                "fd_tick": self._fd_tick,
                "on_suspect": self._on_suspect,
                "on_view": self._on_view,
                "on_commit_view": self._on_commit_view,
                "on_status_view": self._on_status_view,
                "on_info": self._on_info,
                "info_tick": self._info_tick,
                "on_merge_req": self._on_merge_req,
                "on_xmit_req": self._on_xmit_req,
                "on_xmit_gone": self._on_xmit_gone,
                "on_stable": self._on_stable,
                "on_credit": self._on_credit,
                "stable_tick": self._stable_tick,
                "submit": self._submit,
                "on_view_ack": self._on_view_ack,
                "on_merge_rsp": self._on_merge_rsp,
                "on_merge_cancel": self._on_merge_cancel,
                "ack_tick": self._ack_tick,
                "merge_check": self._merge_check,
                "merge_req_tick": self._merge_req_tick,
                "leave": self._leave,
                "refuse_join": self._refuse_join,
                "on_join": self._on_join,
                "on_leave": self._on_leave,
                "commit_delayed": self._commit_delayed,
                "queue_join": self._queue_join,
                "queue_leave": self._queue_leave,
                "leave_tick": self._leave_tick,
                "leaver_view": self._leaver_view,
                "leaver_prepare": self._leaver_prepare,
                "leaver_suspect": self._leaver_suspect,
            },
        )

    # ------------------------------------------------------------ dispatch

    def handle(self, event: Event, now: int) -> list[Effect]:
        self.now = now
        tp = type(event)
        src = ""
        arg: Any = None
        if tp is Received:
            assert isinstance(event, Received)
            ev = EVENT_OF_MSG.get(type(event.msg))
            if ev is None:
                self.dropped += 1
                return [
                    Record.of(
                        "drop", src=event.src, reason=f"foreign message {type(event.msg).__name__}"
                    )
                ]
            src, arg = event.src, event.msg
        elif tp is TimerFired:
            assert isinstance(event, TimerFired)
            ev = TIMERS.get(event.name)
            if ev is None:
                return []
        elif tp is Start:
            out: list[Effect] = []
            self._boot(out)
            return out
        elif tp is Stop:
            ev = Ev.STOP
        elif tp is Submit:
            ev, arg = Ev.SUBMIT, event
        elif tp is Suspected:
            assert isinstance(event, Suspected)
            ev, arg = Ev.SUSPECTED, event.node
        elif tp is Unsuspected:
            assert isinstance(event, Unsuspected)
            ev, arg = Ev.UNSUSPECTED, event.node
        else:
            return [Record.of("drop", reason=f"{tp.__name__} not offered by gms")]
        before = self.state
        if ev is Ev.SUBMIT and not self.fsm.lists(before, ev):
            # a joining node holds what the application submits until it has a view
            if before in (St.DISCOVERING, St.JOINING):
                out = self._hold(arg)
                self._pace(out)
                return out
            self.dropped += 1
            return [Record.of("drop", reason=f"submit in {before.value}: not a member")]
        try:
            out = self.fsm.step(ev, now, src, arg, drop={"src": src} if src else None)
        except BadField as e:
            out = [Record.of("drop", src=src, reason=f"{ev}: {e}")]
        self.dropped += sum(1 for e in out if type(e) is Record and e.kind == "drop")
        if self.state is not before:
            out.append(self._status())
        self._pace(out)
        return out

    def _pace(self, out: list[Effect]) -> None:
        """Tell the host to hold or let go its submits when that changes: held while
        :data:`MAX_HELD` submits wait for a view, or while flow control holds the sender
        (:meth:`Nakack.blocked`)."""
        blocked = len(self.held) >= MAX_HELD or (self.view is not None and self.data.blocked())
        if blocked is not self.blocked:
            self.blocked = blocked
            out.append(Backpressure(blocked))

    def _status(self) -> StateChanged:
        return StateChanged.of(
            role=self.state.value,
            view=self.view.view_id if self.view else "",
            mode=self.mode,
            dropped=self.dropped,
        )

    # ------------------------------------------------------------ boot, join

    def _boot(self, out: list[Effect]) -> None:
        out.append(Persist(BOOTS_KEY, str(self.boot).encode()))
        if self.joining:
            self.state = St.DISCOVERING
            out += self._discover(self.now, "", None)
        else:
            members = self.initial
            v = self.injected or GView(members[0], 1, members)
            self._install(v, out)
        out.append(self._status())

    def _arm(self, out: list[Effect]) -> None:
        if self.timers_armed:
            return
        self.timers_armed = True
        out.append(SetTimer(TIMER_OF[Ev.FD_TIMER], self.suspect_interval))
        out.append(SetTimer(TIMER_OF[Ev.STABLE_TIMER], self.stable_interval))
        out.append(SetTimer(TIMER_OF[Ev.INFO_TIMER], self._jitter()))
        out.append(SetTimer(TIMER_OF[Ev.MERGE_TIMER], self.merge_interval // 2))

    def _jitter(self) -> int:
        return int(self.merge_interval * (0.5 + 0.5 * self.rng.random()))

    def _discover(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        self.state = St.DISCOVERING
        self.responses = {}
        self.join_attempts += 1
        out.append(Record.of("join_attempt", attempt=self.join_attempts))
        out.append(Multicast(M.FindMbrs(self.boot > 1 and self.view is None)))
        out.append(SetTimer(TIMER_OF[Ev.DISCOVERY_TIMER], self.discovery_timeout))
        return out

    def _on_find_mbrs_rsp(self, now: int, src: str, msg: M.FindMbrsRsp) -> list[Effect]:
        out: list[Effect] = []
        key = id_key(msg.view_id)
        parse_id(format_id(msg.coord, 0))  # validates the coordinator's id
        self.responses[src] = (msg.coord, key)
        return out

    def _send_join(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        if not self.responses:
            # Nobody answered: the first member of a new group (a merge joins it later).
            v = GView(self.node_id, self._next_counter(out), (self.node_id,))
            out.append(Record.of("singleton", reason="no answer to FIND_MBRS"))
            self._install(v, out)
            return out
        votes: dict[str, list[Any]] = {}
        for coord, key in self.responses.values():
            e = votes.setdefault(coord, [0, key])
            e[0] += 1
            e[1] = max(e[1], key)
        self.state = St.JOINING
        if self.node_id in votes:
            # The answers name this node coordinator: their view lists its previous
            # incarnation (it restarted before anybody suspected it; node ids persist
            # across restarts, where JGroups would come back with a new UUID that FD
            # tells apart). Nobody serves a JOIN sent to itself. Those members suspect
            # that incarnation on this FIND_MBRS (restarted), and the next in line takes
            # over without it: join another coordinator if one was named, else ask
            # again after join_timeout.
            named_me = sorted(n for n, (c, _) in self.responses.items() if c == self.node_id)
            out.append(Record.of("previous_incarnation", named_by=named_me))
            del votes[self.node_id]
            if not votes:
                out.append(SetTimer(TIMER_OF[Ev.JOIN_TIMER], self.join_timeout))
                return out
        coord = max(votes, key=lambda c: (votes[c][0], votes[c][1], c))
        out.append(Record.of("join", coordinator=coord, attempt=self.join_attempts))
        out.append(Send(coord, M.Join(self.past)))
        out.append(SetTimer(TIMER_OF[Ev.JOIN_TIMER], self.join_timeout))
        return out

    def _join_retry(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        p = self.prepared
        if p is not None and self.node_id in p and self.now - self.prepared_at < self.ack_timeout:
            # two_phase: the view that admits this node is being installed (it prepared
            # it): the JoinRsp comes with the commit, which may wait for the slowest
            # member up to view_ack_collection_timeout, longer than join_timeout. Wait
            # for it; a joiner that gave up formed a view of its own, and the view that
            # admitted it then merged that view with part of the group
            # (``regress_joiner_gives_up_while_prepared``).
            out.append(Record.of("join_wait", view=p.view_id))
            out.append(SetTimer(TIMER_OF[Ev.JOIN_TIMER], self.join_timeout))
            return out
        out.append(Record.of("join_retry", attempt=self.join_attempts))
        out += self._discover(self.now, src, arg)
        return out

    def _on_join_rsp(self, now: int, src: str, msg: M.JoinRsp) -> list[Effect]:
        out: list[Effect] = []
        if msg.fail:
            out.append(Record.of("join_rejected", by=src, reason=msg.fail[:200]))
            out.append(CancelTimer(TIMER_OF[Ev.JOIN_TIMER]))
            out += self._discover(self.now, src, None)
            return out
        v = parse_view(msg.view_id, msg.members)
        if self.node_id not in v:
            raise BadField(f"JoinRsp view {v.view_id} does not list the joiner")
        if v.counter <= self.past:
            raise BadField(f"JoinRsp view {v.view_id} is not newer than an earlier incarnation's")
        out.append(CancelTimer(TIMER_OF[Ev.JOIN_TIMER]))
        if self.mode == "acks":
            out.append(Send(src, M.ViewAck(v.view_id)))
        self._install(v, out)
        return out

    def _joiner_view(self, now: int, src: str, msg: Any) -> list[Effect]:
        out: list[Effect] = []
        v = parse_view(msg.view_id, msg.members)
        if type(msg) is M.ViewMsg:
            out.append(Send(src, M.ViewAck(v.view_id)))
        if self.node_id in v and v.counter > self.past:
            out.append(CancelTimer(TIMER_OF[Ev.JOIN_TIMER]))
            self._install(v, out)
        return out

    def _left(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        self.state = St.LEFT
        return out

    # ------------------------------------------------------------ installing a view

    def _install(self, v: GView, out: list[Effect]) -> None:
        """Install ``v`` at this node (it is a member of it)."""
        self.view = v
        self.max_counter = max(self.max_counter, v.counter)
        self._store_counter(out)
        self.installed[v.view_id] = v
        if len(self.installed) > KEEP_INSTALLED:
            del self.installed[next(iter(self.installed))]
        members = set(v.members)
        self.suspects &= members
        self.announced &= members
        self.q_joins -= members
        self.q_leaves &= members
        if self.prepared is not None and self.prepared.key <= v.key:
            self.prepared = None
            out.append(CancelTimer(TIMER_OF[Ev.STATUS_TIMER]))
        if self.merge_lock is not None:
            self.merge_lock = None
        out.append(InstallView(View(v.view_id, v.members)))
        out.append(LeaderChanged(v.members[0], v.view_id))
        # INFO at once: a merge leader about to decide hears of this view now, not up
        # to an interval later (a restarted member's singleton was left out of a merge
        # decided 260 ms after it formed: ``regress_new_view_unheard``)
        out.append(Multicast(M.MergeInfo(v.view_id, v.members[0])))
        self.data.install(v, self.now, out)
        if self.held:
            self._release(out)
        if self.install is None or self.install.view.view_id != v.view_id:
            self.state = St.COORDINATOR if v.members[0] == self.node_id else St.PARTICIPANT
        self._arm(out)

    def _am_coord(self) -> bool:
        return self.state in (St.COORDINATOR, St.INSTALLING)

    def _next_counter(self, out: list[Effect], *floor: int) -> int:
        self.max_counter = max(self.max_counter, *floor, 0) + 1
        self._store_counter(out)
        return self.max_counter

    def _store_counter(self, out: list[Effect]) -> None:
        """Keep the largest counter seen in stable storage, so that no incarnation of
        this node creates a view id an earlier one created. Every id this node creates
        passes through here, the initial view ``members[0]:1`` too (its creator made it
        without casting it): a restart that read 0 would create ``A:1`` again."""
        if self.max_counter > self.stored_counter:
            self.stored_counter = self.max_counter
            out.append(Persist(COUNTER_KEY, str(self.max_counter).encode()))

    def _cast(
        self,
        members: list[str],
        out: list[Effect],
        *,
        joiners: tuple[str, ...] = (),
        floor: int = 0,
        why: str = "",
        merge: bool = False,
    ) -> None:
        """castViewChange: the next view of ``members``, installed in the mode's way
        (``merge``: a merge view, which a suspicion does not shrink, see :meth:`_suspect`)."""
        assert self.view is not None
        old = self.install.view.members if self.install else self.view.members
        old = tuple(dict.fromkeys((*self.view.members, *old)))
        counter = self._next_counter(out, floor)
        v = GView(self.node_id, counter, tuple(members))
        leaving = self.node_id not in v
        out.append(
            Record.of("cast_view", view=v.view_id, members=list(v.members), why=why, mode=self.mode)
        )
        others = [m for m in dict.fromkeys((*old, *v.members)) if m != self.node_id]
        if self.mode == "two_phase":
            missing = set(v.members) - {self.node_id}
            self.install = _Install(
                v, old, joiners, missing, self.now + self.ack_timeout, merge=merge, ticked=self.now
            )
            for m in v.members:
                if m != self.node_id:
                    out.append(Send(m, M.PrepareView(v.view_id, v.members, merge)))
            self.state = St.LEAVING if leaving else St.INSTALLING
            if not missing:
                self._commit(out)
            else:
                out.append(SetTimer(TIMER_OF[Ev.ACK_TIMER], self.rto))
            return
        for j in joiners:  # the JoinRsp first, then the view (JGroups before JGRP-136)
            out.append(Send(j, M.JoinRsp(v.view_id, v.members)))
        msg = M.ViewMsg(v.view_id, v.members)
        for m in others:
            out.append(Send(m, msg))
        if self.mode == "plain":
            self.install = None
            if leaving:
                self.state = St.LEFT  # the coordinator leaves at once: nobody retransmits
                return
            self.plain_retx = {v.view_id: (msg, set(others))}
            out.append(SetTimer(TIMER_OF[Ev.ACK_TIMER], self.rto))
            self._install(v, out)
            return
        # acks: block on missing_acks (requests are queued meanwhile)
        missing = set(v.members) - {self.node_id} - self.suspects
        self.install = _Install(
            v, old, joiners, missing, self.now + self.ack_timeout, ticked=self.now
        )
        if not leaving:
            self._install(v, out)
        if missing:
            self.state = St.LEAVING if leaving else St.INSTALLING
            out.append(SetTimer(TIMER_OF[Ev.ACK_TIMER], self.rto))
        else:
            self._finish(out)

    def _commit(self, out: list[Effect]) -> None:
        """two_phase: every member prepared: COMMIT_VIEW to all, JoinRsp to joiners."""
        inst = self.install
        assert inst is not None
        if self.commit_delay and not inst.committed:
            # test hook: hold the second phase (a process test kills the coordinator now)
            inst.committed = True
            out.append(CancelTimer(TIMER_OF[Ev.ACK_TIMER]))
            out.append(SetTimer(TIMER_OF[Ev.COMMIT_TIMER], self.commit_delay))
            out.append(
                StateChanged.of(
                    **self._status().fields, phase="prepared", pending=inst.view.view_id
                )
            )
            return
        self._commit_now(out)

    def _commit_delayed(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        if self.install is not None and self.install.committed:
            self._commit_now(out)
        return out

    def _commit_now(self, out: list[Effect]) -> None:
        inst = self.install
        assert inst is not None
        v = inst.view
        inst.committed = True
        commit = M.CommitView(v.view_id, v.members)
        for m in dict.fromkeys((*inst.old, *v.members)):
            if m != self.node_id:
                out.append(Send(m, commit))
        for j in inst.joiners:
            if j in v:
                out.append(Send(j, M.JoinRsp(v.view_id, v.members)))
        self.installed[v.view_id] = v
        if self.node_id in v:
            self._install(v, out)
        self._finish(out)

    def _finish(self, out: list[Effect]) -> None:
        """The installation is over (acknowledged, committed or timed out)."""
        inst = self.install
        self.install = None
        out.append(CancelTimer(TIMER_OF[Ev.ACK_TIMER]))
        if inst is not None and self.node_id not in inst.view:
            self.state = St.LEFT
            out.append(Record.of("left", view=inst.view.view_id))
            return
        assert self.view is not None
        self.state = St.COORDINATOR if self.view.members[0] == self.node_id else St.PARTICIPANT
        self._process_queue(out)

    def _on_view_ack(self, now: int, src: str, msg: M.ViewAck) -> list[Effect]:
        out: list[Effect] = []
        retx = self.plain_retx.get(msg.view_id)
        if retx is not None:
            retx[1].discard(src)
        inst = self.install
        if inst is None or msg.view_id != inst.view.view_id:
            return out
        inst.missing_acks.discard(src)
        if not inst.missing_acks:
            if self.mode == "two_phase" and not inst.committed:
                self._commit(out)
            else:
                self._finish(out)
        return out

    def _ack_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        if self.mode == "plain":
            for view_msg, waiting in self.plain_retx.values():
                for m in sorted(waiting):
                    out.append(Send(m, view_msg))
            if any(w for _, w in self.plain_retx.values()):
                out.append(SetTimer(TIMER_OF[Ev.ACK_TIMER], self.rto))
            return out
        inst = self.install
        if inst is None:
            return out
        lost = self.now - inst.ticked - 2 * self.rto
        inst.ticked = self.now
        if lost > 0:
            # This node was not running (paused) for ``lost`` of the timeout: it could
            # not ask again meanwhile, so the silent members get that time back (hostile
            # seed 142: A, paused past its merge view's deadline, restarted it without
            # D at once on resuming, though D was reachable again since a heal).
            inst.deadline += lost
        if self.now >= inst.deadline:
            out.append(
                Record.of(
                    "ack_timeout", view=inst.view.view_id, missing_acks=sorted(inst.missing_acks)
                )
            )
            if self.mode == "acks":
                self._finish(out)  # JGroups: stop waiting after view_ack_collection_timeout
                return out
            # two_phase: the silent members are treated as suspected; restart phase one
            members = [m for m in inst.view.members if m not in inst.missing_acks]
            view = self.view
            merge = inst.merge and view is not None
            if merge and view is not None:
                silent = inst.missing_acks
                heard = self.now - 2 * self.merge_interval
                alive = {
                    m
                    for m in silent
                    if m in view
                    or m in inst.asked
                    or m not in self.local_suspects
                    or self.info.get(m, (heard - 1,))[0] >= heard
                }
                if alive:
                    # A merge view is installed whole or not at all. A silent member
                    # that is alive for all this node knows (of its own view, asked by
                    # this merge and answering it, heard by the failure detector, or
                    # heard reporting its view within two intervals) may have refused
                    # the view (its view had moved on: hostile seeds 21, 451), be cut
                    # off by a partition begun during the first phase (8779), paused
                    # (5581), or behind a link losing most of what it sends (1941: 87%
                    # one way): restarted without it, the view would merge the rest, a
                    # partial merge. The merge is given up: the first phase restarts
                    # with this node's own view less its silent members (an exclusion),
                    # the nodes the merge asked are told (MERGE_CANCEL), so that their
                    # coordinators are free at once to exclude their own gone members,
                    # and the next merge takes the subgroups as they are then.
                    members = [m for m in members if m in view]
                    merge = False
                    out.append(Record.of("merge_cancelled", merge=inst.merge_id, reason="silent"))
                    for n in inst.asked:
                        out.append(Send(n, M.MergeCancel(inst.merge_id)))
                # else: the silent members are listed by other subgroups' views only,
                # suspected and not heard of for two intervals (gone, most likely: a
                # member crashed while its subgroup's view, which a paused member kept,
                # still lists it): the restart merges the rest, still a merge view.
                # Giving it up too would merge again with the view that lists them,
                # for ever (hostile seed 2127).
                merge = merge and any(m not in view for m in members)
            self.suspects |= inst.missing_acks
            self._restart(members, out, why="view_ack_collection_timeout", merge=merge)
            return out
        msg: Any
        if self.mode == "two_phase":
            msg = M.PrepareView(inst.view.view_id, inst.view.members, inst.merge)
        else:
            msg = M.ViewMsg(inst.view.view_id, inst.view.members)
        for m in sorted(inst.missing_acks):
            out.append(Send(m, msg))
        out.append(SetTimer(TIMER_OF[Ev.ACK_TIMER], self.rto))
        return out

    def _restart(
        self, members: list[str], out: list[Effect], *, why: str, merge: bool = False
    ) -> None:
        """two_phase: restart the first phase with a new view of ``members`` (``merge``:
        still a merge view, installed whole or given up)."""
        inst = self.install
        joiners = inst.joiners if inst else ()
        self.install = None
        out.append(CancelTimer(TIMER_OF[Ev.COMMIT_TIMER]))
        if self.view is not None and self.node_id in self.view:
            self.state = St.COORDINATOR
        if not members or (members == [self.node_id] and self.state is St.LEAVING):
            self.state = St.LEFT
            return
        view = self.view
        if joiners and view is not None:
            kept = sum(1 for m in view.members if m in members)
            if 2 * kept <= len(view.members):
                # Cut down to no more than half of its view, the restarted view excludes
                # and admits nobody, as a takeover cut off from its view does: a joiner
                # may have formed a view of its own meanwhile, and a view of it and a
                # fragment of this one is a partial merge of the two (hostile seed 274:
                # A, partitioned with B alone, restarted its view down to itself and
                # the joiner D, who was on the other side in a singleton). The joiner
                # asks again.
                members = [m for m in members if m not in joiners or m in view]
                joiners = ()
        joiners = tuple(j for j in joiners if j in members)
        self._cast(members, out, joiners=joiners, why=why, merge=merge)

    # ------------------------------------------------------------ coordinator requests

    def _join_floor(self, msg: M.Join) -> None:
        """The view that admits the joiner has a counter above its ``floor``."""
        if type(msg.floor) is not int or not 0 <= msg.floor < 1 << 62:
            raise BadField(f"JOIN floor {msg.floor!r} is not a counter")
        self.max_counter = max(self.max_counter, msg.floor)

    def _on_join(self, now: int, src: str, msg: M.Join) -> list[Effect]:
        out: list[Effect] = []
        self._join_floor(msg)
        self.suspects.discard(src)
        self.local_suspects.discard(src)
        self.q_joins.add(src)
        self.join_at[src] = self.now
        self._process_queue(out)
        return out

    def _queue_join(self, now: int, src: str, msg: M.Join) -> list[Effect]:
        out: list[Effect] = []
        self._join_floor(msg)
        self.suspects.discard(src)
        self.q_joins.add(src)
        self.join_at[src] = self.now
        return out

    def _on_leave(self, now: int, src: str, msg: M.Leave) -> list[Effect]:
        out: list[Effect] = []
        self.q_leaves.add(src)
        self._process_queue(out)
        return out

    def _queue_leave(self, now: int, src: str, msg: M.Leave) -> list[Effect]:
        out: list[Effect] = []
        self.q_leaves.add(src)
        return out

    def _refuse_join(self, now: int, src: str, msg: M.Join) -> list[Effect]:
        out: list[Effect] = []
        assert self.view is not None
        out.append(
            Send(src, M.JoinRsp("", (), fail=f"not coordinator: coordinator is {self.view.coord}"))
        )
        return out

    def _process_queue(self, out: list[Effect]) -> None:
        if self.state is not St.COORDINATOR or self.view is None:
            return
        lock = self.merge_lock
        if lock is not None and lock[1] > self.now and lock[0] != self.node_id:
            # a merge leader took this view as it is (JGroups suspends the view handler
            # during a merge): a view cast now would be one the merge view leaves out
            return
        gone = self.q_leaves | (self.suspects & set(self.view.members))
        # A JOIN queued longer than join_timeout is one its sender gave up: it went back
        # to discovery, and may have formed a view of its own since, which admitting it
        # now would take a member out of (hostile seed 515: F, locked by a merge, served
        # D's JOIN 1.4 s late, and F:4 = {F, D} merged D's singleton with F alone while
        # A was merging everyone). A joiner still joining sends its JOIN again.
        joins = {j for j in self.q_joins if self.now - self.join_at.get(j, 0) <= self.join_timeout}
        for j in sorted(self.q_joins - joins):
            out.append(Record.of("stale_join", node=j, at=self.join_at.get(j, 0)))
        self.join_at = {j: t for j, t in self.join_at.items() if j in joins}
        if not gone and not joins:
            return
        members = [m for m in self.view.members if m not in gone]
        members += sorted(j for j in joins if j not in members and j not in self.suspects)
        self.q_leaves = set()
        self.q_joins = set()
        why = []
        if joins:
            why.append("join " + "+".join(sorted(joins)))
        if gone:
            why.append("exclude " + "+".join(sorted(gone)))
        self._cast(members, out, joiners=tuple(sorted(joins)), why=", ".join(why))

    # ------------------------------------------------------------ failure detection

    def _ring_after_me(self) -> list[str]:
        assert self.view is not None
        ms = list(self.view.members)
        if self.node_id not in ms:
            return []
        i = ms.index(self.node_id)
        return ms[i + 1 :] + ms[:i]

    def _fd_suspected(self, now: int, src: str, node: str) -> list[Effect]:
        out: list[Effect] = []
        self.local_suspects.add(node)
        self._fd_announce(out, repeat=False)
        return out

    def _fd_unsuspected(self, now: int, src: str, node: str) -> list[Effect]:
        out: list[Effect] = []
        self.local_suspects.discard(node)
        if node in self.peers:  # a name outside the group's is no member to wait for
            self.revived[node] = self.now
        self.announced.discard(node)
        return out

    def _fd_announce(self, out: list[Effect], *, repeat: bool) -> None:
        """FD: SUSPECT every suspected successor up to the first live one (ping_dest)."""
        if self.view is None:
            return
        for m in self._ring_after_me():
            if m in self.suspects and m not in self.local_suspects:
                continue  # being excluded already: watch the next one (JGroups' FD too)
            if m not in self.local_suspects:
                break
            if m in self.announced and not repeat:
                continue
            self.announced.add(m)
            out.append(Record.of("suspect", node=m, view=self.view.view_id))
            for dst in self.view.members:
                if dst not in (self.node_id, m):
                    out.append(Send(dst, M.Suspect(m)))
            self._suspect(m, out)
            if self.view is None or self.state not in MEMBER_STATES:
                return

    def _fd_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        out.append(SetTimer(TIMER_OF[Ev.FD_TIMER], self.suspect_interval))
        self._fd_announce(out, repeat=True)
        return out

    def _on_suspect(self, now: int, src: str, msg: M.Suspect) -> list[Effect]:
        out: list[Effect] = []
        parse_id(format_id(msg.node, 0))
        self._suspect(msg.node, out)
        return out

    def _suspect(self, node: str, out: list[Effect]) -> None:
        """SUSPECT(node) from the failure-detection layer (this node's or a member's)."""
        if node == self.node_id or self.view is None:
            return
        view = self.view
        inst = self.install
        if self._am_coord():
            pending = inst.view if inst is not None else None
            if node in view or (pending is not None and node in pending):
                self.suspects.add(node)
                if inst is not None:
                    if self.mode == "two_phase":
                        if node in inst.view and inst.merge:
                            # A merge view is installed whole or not at all: a member
                            # suspected meanwhile is excluded by the next view, once this
                            # one is in; one that is gone never acknowledges, and the
                            # view_ack_collection_timeout restarts the first phase without
                            # it (a member that is gone, not one left behind).
                            return
                        if node in inst.view:
                            members = [m for m in inst.view.members if m != node]
                            self._restart(members, out, why=f"suspect {node} during phase one")
                        return  # otherwise the view being installed excludes it already
                    inst.missing_acks.discard(node)
                    if not inst.missing_acks:
                        self._finish(out)
                    return
                self._process_queue(out)
                return
            # SUSPECT(P) for a P outside the view (seed case B)
            if self.mode == "plain":
                out.append(Record.of("ignored_suspect", node=node, view=view.view_id))
                return
            out.append(Record.of("resend_view", view=view.view_id, reason=f"suspect {node}"))
            self._resend_view(view.members, out)
            return
        if node in view:
            self.suspects.add(node)
            self._check_takeover(out)

    def _resend_view(self, dsts: tuple[str, ...], out: list[Effect]) -> None:
        view = self.view
        assert view is not None
        msg: Any
        if self.mode == "two_phase":
            msg = M.CommitView(view.view_id, view.members)
        else:
            msg = M.ViewMsg(view.view_id, view.members)
        for m in dsts:
            if m != self.node_id:
                out.append(Send(m, msg))

    def _check_takeover(self, out: list[Effect]) -> None:
        """A participant that would be coordinator (the first unsuspected member) takes
        over and casts a view without the suspects."""
        view = self.view
        if view is None or self.state is not St.PARTICIPANT:
            return
        alive = [m for m in view.members if m not in self.suspects]
        if not alive or alive[0] != self.node_id:
            return
        out.append(
            Record.of(
                "takeover", view=view.view_id, suspects=sorted(self.suspects & set(view.members))
            )
        )
        self.state = St.COORDINATOR
        base = view
        floor = 0
        if self.mode == "two_phase":
            # A merge view it prepared is not carried on: the merge is its leader's (a
            # merge leader gone is a merge given up, as JGroups cancels it), and that
            # view less the suspects would merge the rest, a partial merge (hostile
            # seeds 5159, 7379: C:5, A's merge view less A, F and H, left H in A:3;
            # 9023: D carried on A's merge view, which its own coordinator never cast).
            p = self.prepared
            if p is not None and p.key > view.key and not self.prepared_merge:
                base = p  # restart the first phase of the view it prepared
                floor = p.counter
            elif view.coord != self.node_id:
                # restart the second phase: resend COMMIT_VIEW of the view it committed
                out.append(Record.of("recommit", view=view.view_id))
                self._resend_view(tuple(m for m in view.members if m not in self.suspects), out)
        members = [m for m in base.members if m not in self.suspects]
        kept = sum(1 for m in view.members if m in members)
        if 2 * kept <= len(view.members):
            # Cut off from most of its view, it casts an exclusion and nothing more: a
            # joiner the prepared view added may have formed a view of its own since (a
            # singleton when its JOIN went unanswered), and a view of it and a fragment
            # of this one is a partial merge of the two (hostile seed 659: E, alone in
            # a partition, took over with the joiner D; ``regress_takeover_takes_a_joiner``).
            # The joiner asks again.
            members = [m for m in members if m in view]
        self._cast(members, out, floor=floor, why="takeover")

    # ------------------------------------------------------------ views arriving

    def _on_view(self, now: int, src: str, msg: M.ViewMsg) -> list[Effect]:
        out: list[Effect] = []
        if self.mode == "two_phase":
            raise BadField("VIEW in two_phase mode")
        v = parse_view(msg.view_id, msg.members)
        out.append(Send(src, M.ViewAck(v.view_id)))
        assert self.view is not None
        self._older(v, src, out)
        if v.key > self.view.key:
            self._accept(v, out)
        elif (
            v.key < self.view.key and self.mode == "acks" and self._am_coord() and src in self.view
        ):
            out.append(Record.of("resend_view", view=self.view.view_id, reason="older view"))
            self._resend_view((src,), out)
        return out

    def _accept(self, v: GView, out: list[Effect]) -> None:
        """A greater view arrived: install it, or, excluded from it, start again alone."""
        if self.install is not None:
            self.install = None
            out.append(CancelTimer(TIMER_OF[Ev.ACK_TIMER]))
        if self.merge is not None:
            self._cancel_merge(f"view {v.view_id}", out)
        if self.node_id in v:
            self._install(v, out)
            self._check_takeover(out)
            self._process_queue(out)
            return
        out.append(Record.of("excluded", view=v.view_id))
        self.max_counter = max(self.max_counter, v.counter)
        counter = self._next_counter(out)
        self._install(GView(self.node_id, counter, (self.node_id,)), out)

    def _on_prepare_view(self, now: int, src: str, msg: M.PrepareView) -> list[Effect]:
        out: list[Effect] = []
        if self.mode != "two_phase":
            raise BadField(f"PREPARE_VIEW in {self.mode} mode")
        v = parse_view(msg.view_id, msg.members)
        if self.node_id not in v:
            raise BadField(f"PREPARE_VIEW {v.view_id} does not list this node")
        self.max_counter = max(self.max_counter, v.counter)
        self._older(v, src, out)
        if v.view_id in self.installed:
            out.append(Send(src, M.ViewAck(v.view_id)))
            return out
        current = self.view.key if self.view is not None else (0, "")
        if v.key <= current or v.counter <= self.past:
            return out
        if self.prepared is not None and v.key < self.prepared.key:
            return out
        if not self._may_prepare(v, msg.merge is True):
            out.append(Record.of("refused_view", view=v.view_id, creator=src))
            return out
        if self.install is not None and v.key > self.install.view.key:
            # a greater view is being installed by someone else (a merge, a takeover)
            # It stays the coordinator of its view until that view is committed: made a
            # participant of its own view, it left every merge to a coordinator that
            # deferred to it, for ever once the greater view was given up
            # (``regress_coordinator_left_as_participant``).
            self.install = None
            out.append(CancelTimer(TIMER_OF[Ev.ACK_TIMER]))
            if self.state is St.INSTALLING:
                assert self.view is not None
                mine = self.view.members[0] == self.node_id
                self.state = St.COORDINATOR if mine else St.PARTICIPANT
        self.prepared = v
        self.prepared_at = self.now
        self.prepared_merge = msg.merge is True
        out.append(Send(src, M.ViewAck(v.view_id)))
        out.append(SetTimer(TIMER_OF[Ev.STATUS_TIMER], self.status_timeout))
        return out

    def _older(self, v: GView, src: str, out: list[Effect]) -> None:
        """JGRP-1496 / JGRP-3036: a view older than the installed one arrived (a late
        retransmission, a duplicate, a reordered copy); it is ignored, and recorded
        (``older_view``) so that a trace shows views overtaking each other."""
        if self.view is not None and v.key < self.view.key:
            out.append(Record.of("older_view", view=v.view_id, current=self.view.view_id, src=src))

    def _may_prepare(self, v: GView, merge: bool) -> bool:
        """Whether this member may prepare ``v``: one created by a member of its view (its
        coordinator, or the next in line taking over), or a merge view (``merge``: its
        PREPARE_VIEW says so) that takes its view entire but for members it suspects.
        Any other view would split its group: a JOIN sent before this node got into
        another view and answered after, say, which took it out of that view and left
        the others behind (``regress_stale_join``), or, this node's view a singleton it
        formed after giving its JOIN up, merged that view with the JOIN's coordinator's
        alone (hostile seed 1197, ``regress_join_served_after_a_pause``)."""
        view = self.view
        if view is None or v.coord in view:
            return True
        return merge and all(m in v or m in self.suspects for m in view.members)

    def _on_commit_view(self, now: int, src: str, msg: M.CommitView) -> list[Effect]:
        out: list[Effect] = []
        if self.mode != "two_phase":
            raise BadField(f"COMMIT_VIEW in {self.mode} mode")
        v = parse_view(msg.view_id, msg.members)
        self.installed.setdefault(v.view_id, v)
        assert self.view is not None
        self._older(v, src, out)
        if v.key > self.view.key:
            self._accept(v, out)
        return out

    def _on_status_view(self, now: int, src: str, msg: M.StatusView) -> list[Effect]:
        out: list[Effect] = []
        v = parse_view(msg.view_id, msg.members)
        done = self.installed.get(v.view_id)
        if done is not None and done.members == v.members and self.mode == "two_phase":
            out.append(Record.of("status_answered", view=v.view_id, to=src))
            out.append(Send(src, M.CommitView(v.view_id, v.members)))
        elif (
            self.view is not None
            and self.view.key > v.key
            and src in self.view
            and self.mode == "two_phase"
        ):
            out.append(Send(src, M.CommitView(self.view.view_id, self.view.members)))
        return out

    def _status_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        p = self.prepared
        current = self.view.key if self.view is not None else (0, "")
        if p is None or p.key <= current:
            return out
        out.append(Record.of("status_view", view=p.view_id))
        for m in p.members:
            if m != self.node_id:
                out.append(Send(m, M.StatusView(p.view_id, p.members)))
        out.append(SetTimer(TIMER_OF[Ev.STATUS_TIMER], self.status_timeout))
        return out

    # ------------------------------------------------------------ leaving

    def _leave(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        view = self.view
        assert view is not None
        if self._am_coord() or view.members[0] == self.node_id:
            base = self.install.view if self.install is not None else view
            members = [m for m in base.members if m != self.node_id]
            self.install = None
            if not members:
                self.state = St.LEFT
                return out
            self.state = St.COORDINATOR
            self._cast(members, out, why=f"leave {self.node_id}")
            return out
        self.state = St.LEAVING
        out.append(Send(view.members[0], M.Leave()))
        out.append(SetTimer(TIMER_OF[Ev.LEAVE_TIMER], self.rto))
        return out

    def _leave_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        view = self.view
        if view is None or self.install is not None:
            return out
        coord = next((m for m in view.members if m not in self.suspects), None)
        if coord is None or coord == self.node_id:
            self.state = St.LEFT
            return out
        out.append(Send(coord, M.Leave()))
        out.append(SetTimer(TIMER_OF[Ev.LEAVE_TIMER], self.rto))
        return out

    def _leaver_view(self, now: int, src: str, msg: Any) -> list[Effect]:
        out: list[Effect] = []
        v = parse_view(msg.view_id, msg.members)
        if type(msg) is M.ViewMsg:
            out.append(Send(src, M.ViewAck(v.view_id)))
        if self.install is not None:
            return out  # a leaving coordinator finishes its own installation first
        if self.node_id not in v:
            self.state = St.LEFT
            return out
        if self.view is not None and v.key > self.view.key:
            # Still a member of a newer view: leave that one (its coordinator may be us).
            self._install(v, out)
            out += self._leave(self.now, "", None)
        return out

    def _leaver_prepare(self, now: int, src: str, msg: M.PrepareView) -> list[Effect]:
        out: list[Effect] = []
        v = parse_view(msg.view_id, msg.members)
        out.append(Send(src, M.ViewAck(v.view_id)))
        return out

    def _leaver_suspect(self, now: int, src: str, msg: M.Suspect) -> list[Effect]:
        out: list[Effect] = []
        if self.install is not None:
            self._suspect(msg.node, out)
        return out

    # ------------------------------------------------------------ discovery answers

    def _answer_find_mbrs(self, now: int, src: str, msg: M.FindMbrs) -> list[Effect]:
        """PING's answer; and a member of this view asking is a restarted node (node ids
        persist across restarts), so its previous incarnation is gone: SUSPECT it, as
        JGroups' FD would suspect the old UUID. Otherwise a member restarted before its
        FD neighbour noticed would stay listed, and the FD ring would watch nobody past
        it: with the coordinator gone too, every JOIN went to the dead coordinator."""
        out: list[Effect] = []
        if msg.restarted is True and self.view is not None and src in self.view:
            out.append(Record.of("restarted", node=src, view=self.view.view_id))
            self._suspect(src, out)
        assert self.view is not None
        out.append(Send(src, M.FindMbrsRsp(self.view.members[0], self.view.view_id)))
        return out

    # ------------------------------------------------------------ merge (MERGE3)

    def _info_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        assert self.view is not None
        out.append(Multicast(M.MergeInfo(self.view.view_id, self.view.members[0])))
        out.append(SetTimer(TIMER_OF[Ev.INFO_TIMER], self._jitter()))
        return out

    def _on_info(self, now: int, src: str, msg: M.MergeInfo) -> list[Effect]:
        out: list[Effect] = []
        parse_id(msg.view_id)
        parse_id(format_id(msg.coord, 0))
        old = self.info.get(src)
        view = self.view
        if (
            view is not None
            and (src not in view or id_key(msg.view_id) > view.key)
            and (old is None or old[1] != msg.view_id)
            and all(e[1] != msg.view_id for e in self.info.values())
            and src not in self.unaccounted
        ):
            self.foreign_changed = self.now
        self.info[src] = (self.now, msg.view_id, msg.coord)
        if (
            view is not None
            and msg.answer is not True
            and src not in view
            and msg.view_id != view.view_id
            and self.now - self.answered.get(src, -self.merge_interval) >= self.merge_interval // 2
        ):
            # A foreign INFO is answered at once (at most once per half interval per
            # sender): the node that will lead the merge learns of this view from its own
            # INFO instead of waiting for this node's next one, which loss may take
            # several intervals (``regress_foreign_info_lost``).
            self.answered[src] = self.now
            out.append(Send(src, M.MergeInfo(view.view_id, view.members[0], answer=True)))
        return out

    def _merge_check(self, now: int, src: str, arg: Any) -> list[Effect]:
        """MERGE3's check: lead a merge of every view heard of that is not this one.

        A coordinator leads when it heard of members outside its view, under other
        coordinators, and none of those coordinators is smaller than itself. A
        participant whose own coordinator reports another view, when no node heard
        of is the coordinator of the view it reports (JGRP-2092: everybody names
        somebody else), leads if it is the smallest node those views name first.
        The leader waits until no new foreign view was heard for a whole
        ``merge_interval`` (every member sends INFO at least that often), so that it
        merges everything reachable at once: no partial merges.
        """
        out: list[Effect] = []
        out.append(SetTimer(TIMER_OF[Ev.MERGE_TIMER], self.merge_interval // 2))
        view = self.view
        if view is None or self.state not in (St.COORDINATOR, St.PARTICIPANT):
            return out
        now = self.now
        if self.merge is not None:
            if now - self.merge.started < self.merge_interval:
                return out
            self._cancel_merge("timeout", out)
        if self.merge_lock is not None and self.merge_lock[1] > now:
            return out
        window = now - 2 * self.merge_interval
        # A node waited for (heard alive, its INFO not heard since: _unaccounted) keeps
        # the INFO last heard from it, older than two intervals or not: it is the best
        # picture of its view there is, and dropping it as the wait ended merged the
        # others without it (hostile seed 8238: B's INFO, heard 1.1 s before, behind a
        # link losing 71% one way). If its view changed since, its answer says so and
        # the merge is cancelled as stale.
        self.info = {
            n: e
            for n, e in self.info.items()
            if e[0] >= window or (n in self.unaccounted and n not in self.local_suspects)
        }
        if self.state is St.COORDINATOR:
            # A member outside this view that still names this node its coordinator is
            # an orphan (it missed the view that excluded it, or started after it): acks
            # and two_phase merge it back; plain keeps the MERGE2-era rule of JGroups
            # before JGRP-136, where only other coordinators' views count.
            # A member of this view that reports a *greater* view has moved on without
            # this node (it took over, excluded it, and the COMMIT_VIEW that told so was
            # lost): its view and this one must merge, or this node keeps listing it for
            # ever while it never lists this node (nobody outside either view would see
            # a split). A member reporting an older view is only late (its next INFO
            # shows this view): merging it would be churn.
            orphans = self.mode != "plain"
            foreign = {
                n: e
                for n, e in self.info.items()
                if (n not in view and e[1] != view.view_id and (orphans or e[2] != self.node_id))
                or (n in view and orphans and id_key(e[1]) > view.key)
            }
            if not foreign:
                return out
            coords = {n for n, e in foreign.items() if e[2] == n}
            if any(c < self.node_id for c in coords):
                return out  # a smaller coordinator leads this merge
        else:
            mine = self.info.get(view.members[0])
            if mine is None or mine[1] == view.view_id:
                return out  # my coordinator is alive and in my view (or unheard: FD's business)
            if any(e[2] == n for n, e in self.info.items()):
                return out  # an actual coordinator exists: it leads
            named = {e[2] for e in self.info.values()} | {view.members[0]}
            reachable = {n for n in named if n in self.info or n == self.node_id}
            if not reachable or min(reachable) != self.node_id:
                return out
            foreign = {n: e for n, e in self.info.items() if e[1] != view.view_id}
            if not foreign:
                return out
        if now - self.foreign_changed < self.merge_interval:
            return out  # wait until every reachable member has been heard
        if self._unaccounted(view, out):
            return out
        asked = self._merge_coords(foreign)
        self.merges += 1
        mid = f"{self.node_id}:{self.merges}"
        self.merge = _Merge(
            mid, set(asked), started=now, expected={n: foreign[n][1] for n in asked}
        )
        out.append(Record.of("merge_start", merge=mid, asked=sorted(asked)))
        for n in sorted(asked):
            out.append(Send(n, M.MergeReq(mid)))
        out.append(SetTimer(TIMER_OF[Ev.MERGE_REQ_TIMER], self.rto))
        return out

    def _unaccounted(self, view: GView, out: list[Effect]) -> bool:
        """Whether a merge waits for a node outside ``view`` that the failure detector
        hears alive but whose view this node has not heard since (no INFO since it was
        last heard again): a merge decided without it would leave a reachable
        subgroup behind (after a heal, the leader's picture of the other side is
        the one from before the partition until their INFO comes in: hostile seed
        454, a merge of B decided 259 ms after the heal while C's INFO was lost).
        Each such node is asked for its INFO (this node's INFO, answered at once),
        and waited for at most one ``merge_interval``: a node whose INFO does not
        come through by then is left to the next merge."""
        now = self.now
        wait = False
        seen: dict[str, int] = {}
        outside = set(self.peers) - set(view.members) - self.local_suspects
        for n in sorted(outside - {self.node_id}):
            e = self.info.get(n)
            if e is not None and e[0] >= self.revived.get(n, 0):
                continue
            if self.viewless.get(n, -1) >= self.revived.get(n, 0):
                continue  # joining: it has no view to report, its JOIN brings it in
            seen[n] = since = self.unaccounted.get(n, now)
            out.append(Send(n, M.MergeInfo(view.view_id, view.members[0])))
            wait = wait or now - since < self.merge_interval
        self.unaccounted = seen
        return wait

    def _merge_wave(self, mg: _Merge, view: GView, out: list[Effect]) -> bool:
        """Ask the views the answers heard of and this node did not (one node each, as
        :meth:`_merge_coords`): a subgroup whose INFO this node lost is still merged in
        this round, as JGroups' merge leader learns every view its subgroup coordinators
        know. Returns whether it asked (the merge waits for those answers too); at most
        ``MAX_WAVES`` rounds of asking."""
        if mg.waves >= MAX_WAVES:
            return False
        covered = set(view.members) | {m for v in mg.views.values() for m in v.members}
        known = {v.view_id for v in mg.views.values()} | {view.view_id}
        more = {
            n: (self.now, vid, coord)
            for n, (vid, coord) in mg.heard.items()
            if n not in covered and vid not in known and n != self.node_id
        }
        if not more:
            return False
        asked = self._merge_coords(more) - set(mg.expected)
        if not asked:
            return False
        mg.waves += 1
        mg.waiting |= asked
        mg.expected.update({n: more[n][1] for n in asked})
        out.append(Record.of("merge_start", merge=mg.merge_id, asked=sorted(asked), wave=mg.waves))
        for n in sorted(asked):
            out.append(Send(n, M.MergeReq(mg.merge_id)))
        out.append(SetTimer(TIMER_OF[Ev.MERGE_REQ_TIMER], self.rto))
        return True

    def _merge_coords(self, foreign: dict[str, tuple[int, str, str]]) -> set[str]:
        """Whom to ask: one node per foreign view, its coordinator when that was heard
        reporting the view itself, else the smallest node heard reporting it (JGroups'
        ``determineActualMergeCoords``). Each answers for its whole view, which the merge
        view takes entire; asking every member instead let two leaders each lock part
        of one subgroup and install overlapping views (``regress_overlapping_merges``)."""
        by_view: dict[str, set[str]] = {}
        for n, e in foreign.items():
            by_view.setdefault(e[1], set()).add(n)
        asked = set()
        for heard in by_view.values():
            coord = next(iter({foreign[n][2] for n in heard}))
            asked.add(coord if coord in heard else min(heard))
        return asked

    def _cancel_merge(self, reason: str, out: list[Effect]) -> None:
        """Give the merge under way up (``merge_cancelled``) and tell every node asked,
        so that those that answered are free for another leader at once instead of
        refusing everyone until their answer's lock expires (two intervals): three
        leaders each holding a lock on another's subgroup refused each other for the
        whole quiet end (``regress_merge_locks_outlive_the_merge``)."""
        mg = self.merge
        if mg is None:
            return
        self.merge = None
        out.append(Record.of("merge_cancelled", merge=mg.merge_id, reason=reason))
        for n in sorted(mg.expected):
            out.append(Send(n, M.MergeCancel(mg.merge_id)))

    def _on_merge_cancel(self, now: int, src: str, msg: M.MergeCancel) -> list[Effect]:
        out: list[Effect] = []
        lock = self.merge_lock
        if lock is not None and lock[0] == src and lock[2] == msg.merge_id:
            self.merge_lock = None
            self._process_queue(out)
        return out

    def _merge_req_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        """MERGE_REQ again, every ``rto``, to whoever has not answered: JGroups' merge
        requests ride on reliable unicast (UNICAST3); here they are datagrams, and a
        merge is all or nothing, so one lost request or answer among n subgroups
        would cancel it (with 7 of them at 12% loss, 5 attempts in 6 fail)."""
        out: list[Effect] = []
        mg = self.merge
        if mg is None or not mg.waiting:
            return out
        for n in sorted(mg.waiting):
            out.append(Send(n, M.MergeReq(mg.merge_id)))
        out.append(SetTimer(TIMER_OF[Ev.MERGE_REQ_TIMER], self.rto))
        return out

    def _on_merge_req(self, now: int, src: str, msg: M.MergeReq) -> list[Effect]:
        out: list[Effect] = []
        parse_id(msg.merge_id)
        view = self.view
        assert view is not None
        lock = self.merge_lock
        busy = (
            (lock is not None and lock[1] > self.now and lock[0] != src)
            or self.state is St.INSTALLING
            or (self.merge is not None and src > self.node_id)
        )
        if busy:
            out.append(Send(src, M.MergeRsp(msg.merge_id, view.view_id, view.members, True)))
            return out
        if self.merge is not None:
            self._cancel_merge(src, out)
        self.merge_lock = (src, self.now + 2 * self.merge_interval, msg.merge_id)
        window = self.now - 2 * self.merge_interval
        heard = tuple(
            f"{n}={e[1]}={e[2]}"
            for n, e in sorted(self.info.items())
            if e[0] >= window and e[1] != view.view_id and n not in view
        )[:MAX_HEARD]
        out.append(Send(src, M.MergeRsp(msg.merge_id, view.view_id, view.members, heard=heard)))
        return out

    def _refuse_merge_req(self, now: int, src: str, msg: M.MergeReq) -> list[Effect]:
        """A node in no view (restarted, discovering or joining) refuses a MERGE_REQ with
        no view: the leader asked it for the view it was in before (its INFO from then,
        kept while it is heard alive), and waiting for an answer that never came held
        the merge, and the locks on the coordinators it was joining, to the merge's
        timeout, merge after merge (hostile seed 3933, ``regress_merge_asks_a_joiner``)."""
        out: list[Effect] = []
        parse_id(msg.merge_id)
        out.append(Send(src, M.MergeRsp(msg.merge_id, "", (), True)))
        return out

    def _on_merge_rsp(self, now: int, src: str, msg: M.MergeRsp) -> list[Effect]:
        out: list[Effect] = []
        mg = self.merge
        if mg is None or msg.merge_id != mg.merge_id or src not in mg.waiting:
            return out
        if msg.refused:
            if not msg.view_id:
                # in no view: what its INFO said is gone, and there is no view of it
                # to wait for; its JOIN brings it in
                self.info.pop(src, None)
                self.viewless[src] = self.now
            self._cancel_merge(f"refused by {src}" + ("" if msg.view_id else " (no view)"), out)
            return out
        v = parse_view(msg.view_id, msg.members)
        if v.view_id != mg.expected.get(src, v.view_id):
            # The subgroup changed since its INFO was heard (a request sent into a
            # partition and answered after the heal, say): what the leader saw is stale,
            # and merging on it would leave out what it has not heard of yet. Start
            # again once everything reachable has been heard (all or nothing).
            self._cancel_merge(
                f"stale: {src} is in {v.view_id}, its INFO said {mg.expected[src]}", out
            )
            self.foreign_changed = self.now
            return out
        mg.waiting.discard(src)
        mg.views[src] = v
        for entry in msg.heard[:MAX_HEARD] if type(msg.heard) is tuple else ():
            node, vid, coord = [*str(entry).split("="), "", ""][:3]
            try:
                parse_id(vid)
                parse_id(format_id(node, 0))
                parse_id(format_id(coord, 0))
            except BadField:
                continue  # a malformed entry tells nothing: the answer's view still counts
            mg.heard.setdefault(node, (vid, coord))
        if mg.waiting:
            return out
        view = self.view
        assert view is not None
        if self._merge_wave(mg, view, out):
            return out
        self.merge = None
        subgroups: dict[str, GView] = {view.view_id: view}
        for v in mg.views.values():
            subgroups.setdefault(v.view_id, v)
        # JGroups' MergeView: every member of every subgroup's view, not only those that
        # answered (a merge that took only them left the rest of their views behind:
        # ``regress_partial_merge``), suspects included: a merge view is installed whole,
        # and the next view excludes them (a member that is gone never acknowledges it,
        # and the first phase restarts without it after view_ack_collection_timeout)
        others = {m for v in mg.views.values() for m in v.members} | set(mg.views)
        members = [self.node_id]
        members += [m for m in view.members if m != self.node_id]
        members += sorted(others - set(members))
        floor = max(v.counter for v in subgroups.values())
        out.append(
            Record.of(
                "merge",
                merge=mg.merge_id,
                subgroups=[
                    {"view": g.view_id, "members": [m for m in g.members if m in members]}
                    for g in subgroups.values()
                ],
            )
        )
        if self.state is St.PARTICIPANT:
            self.state = St.COORDINATOR  # a JGRP-2092 merge led by a participant
        self._cast(members, out, floor=floor, why=f"merge {mg.merge_id}", merge=True)
        if self.install is not None and self.install.merge:
            self.install.merge_id = mg.merge_id
            self.install.asked = tuple(sorted(mg.expected))
        return out

    # ------------------------------------------------------------ data path

    def _submit(self, now: int, src: str, ev: Submit) -> list[Effect]:
        out: list[Effect] = []
        self.data.submit(ev.msg_id, ev.payload, ev.order, out)
        return out

    def _hold(self, ev: Submit) -> list[Effect]:
        """A submit while the node is not a member (booting, rejoining after a restart
        or an exclusion): kept for its first view instead of lost (``docs/protocols/gms.md``,
        decisions); the host is held back once :data:`MAX_HELD` wait."""
        if len(self.held) >= MAX_HELD:
            self.dropped += 1
            return [Record.of("drop", reason="submit while not a member: too many held")]
        self.held.append(ev)
        return []

    def _release(self, out: list[Effect]) -> None:
        """Multicast the held submits in the view just installed, in submit order."""
        held, self.held = self.held, []
        for ev in held:
            self.data.submit(ev.msg_id, ev.payload, ev.order, out)

    def _on_msg(self, now: int, src: str, msg: M.Msg) -> list[Effect]:
        out: list[Effect] = []
        parse_id(msg.view_id)
        self.data.on_msg(src, msg, self.now, out)
        return out

    def _on_xmit_req(self, now: int, src: str, msg: M.XmitReq) -> list[Effect]:
        out: list[Effect] = []
        self.data.on_xmit_req(src, msg, out)
        return out

    def _on_xmit_gone(self, now: int, src: str, msg: M.XmitGone) -> list[Effect]:
        out: list[Effect] = []
        self.data.on_xmit_gone(src, msg, out)
        return out

    def _on_credit(self, now: int, src: str, msg: M.Credit) -> list[Effect]:
        out: list[Effect] = []
        self.data.on_credit(src, msg, out)
        return out

    def _stable_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        out.append(SetTimer(TIMER_OF[Ev.STABLE_TIMER], self.stable_interval))
        view = self.view
        assert view is not None
        d = self.data.digest()
        for m in view.members:
            if m != self.node_id:
                out.append(Send(m, d))
        return out

    def _on_stable(self, now: int, src: str, msg: M.Stable) -> list[Effect]:
        out: list[Effect] = []
        view = self.view
        assert view is not None
        if msg.view_id == view.view_id:
            self.data.on_stable(src, msg, self.now, out)
            return out
        w = parse_view(msg.view_id, msg.members)
        if self.mode != "acks":
            return out
        # SOLUTION 2: the view carried in the stability digest
        if w.key > view.key and self.node_id in w:
            if w.members[0] == self.node_id or self._am_coord():
                out.append(Record.of("digest_view", view=w.view_id, src=src))
                self._accept(w, out)
                assert self.view is not None
                if self.view.view_id == w.view_id and w.members[0] == self.node_id:
                    self._resend_view(w.members, out)
        elif w.key < view.key and self._am_coord() and src in view:
            out.append(Record.of("resend_view", view=view.view_id, reason=f"digest of {src}"))
            self._resend_view((src,), out)
        return out


def parse_injected(text: str, node: str) -> GView | None:
    """The view the setting ``inject_views`` gives ``node`` at boot, if any.

    ``"A@B:5=B,A,C; B@C:5=C,A,B"``: node A boots in view ``B:5`` with members B, A, C,
    node B in ``C:5``. A test hook, as JGroups' tests inject views (``GMS.installView``),
    to start a scenario from an inconsistent state (JGRP-2092)."""
    found = None
    for i, part in enumerate(p.strip() for p in text.split(";")):
        if not part:
            continue
        try:
            who, _, rest = part.partition("@")
            vid, _, members = rest.partition("=")
            v = parse_view(vid.strip(), tuple(m.strip() for m in members.split(",")))
        except BadField as e:
            raise ValueError(f"inject_views[{i}] {part!r}: {e}") from None
        if not who.strip() or not vid or not members:
            raise ValueError(f"inject_views[{i}] {part!r}: expected node@coord:counter=m1,m2,...")
        if who.strip() == node:
            if node not in v:
                raise ValueError(f"inject_views[{i}] {part!r}: {node} is not in its view")
            found = v
    return found
