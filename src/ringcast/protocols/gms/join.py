"""Joining and the coordinator's requests (JGroups' ``ClientGmsImpl`` and the JOIN and LEAVE
requests of ``CoordGmsImpl``): discovery (FIND_MBRS), JOIN to the coordinator most
answers name, JoinRsp; a coordinator's queue of JOIN and LEAVE requests while it
installs a view; the answers to FIND_MBRS."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import (
    CancelTimer,
    Effect,
    Multicast,
    Persist,
    Record,
    Send,
    SetTimer,
)
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._common import (
    BOOTS_KEY,
    TIMER_OF,
    GmsFields,
)
from ringcast.protocols.gms._state import Ev, St
from ringcast.protocols.gms._views import BadField, GView, format_id, id_key, parse_id, parse_view


class JoinMixin(GmsFields):
    """The GMS machine's steps: joining, the JOIN and LEAVE queue, FIND_MBRS answers."""

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
        out.append(self.fsm.state_changed())

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
        self.q_joins = joins
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
