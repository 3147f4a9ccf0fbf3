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
from typing import Any

from ringcast.core.effects import (
    Backpressure,
    Effect,
    Record,
    Send,
    SetTimer,
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
from ringcast.core.machine import MachineContext
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._common import (
    BOOTS_KEY,
    COUNTER_KEY,
    EVENT_OF_MSG,
    MAX_HELD,
    MODES,
    TIMER_OF,
    TIMERS,
    Installation,
    MergeRound,
)
from ringcast.protocols.gms._state import TABLES, Ev, St
from ringcast.protocols.gms._views import BadField, GView, parse_id, parse_view
from ringcast.protocols.gms.detect import DetectMixin
from ringcast.protocols.gms.install import InstallMixin
from ringcast.protocols.gms.join import JoinMixin
from ringcast.protocols.gms.leave import LeaveMixin
from ringcast.protocols.gms.merge import MergeMixin
from ringcast.protocols.gms.nakack import Nakack


class GmsMachine(JoinMixin, InstallMixin, DetectMixin, LeaveMixin, MergeMixin):
    def __init__(self, ctx: MachineContext, s: dict[str, Any]):
        mode = s["view_install"]
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
        self.commit_delay = int(s["commit_delay"])
        self.direct_info = bool(s["direct_info"])
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
        self.install: Installation | None = None
        self.q_joins: set[str] = set()
        self.join_at: dict[str, int] = {}
        """When each queued JOIN arrived (its latest copy)."""
        self.q_leaves: set[str] = set()
        self.plain_retx: dict[str, tuple[Any, set[str]]] = {}
        # merge
        self.info: dict[str, tuple[int, str, str]] = {}
        self.merge: MergeRound | None = None
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
        self.injected = parse_injected(str(s["inject_views"]), ctx.node_id)
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
            status=self.status,
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
            out.append(self.fsm.state_changed())
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

    def status(self) -> dict[str, Any]:
        """The fields of the ``state`` trace row, written at each change of role."""
        return {
            "role": self.state.value,
            "view": self.view.view_id if self.view else "",
            "mode": self.mode,
            "dropped": self.dropped,
        }

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
