"""Installing a view (JGRP-136, ``view_install``): the coordinator's castViewChange in
the modes ``plain``, ``acks`` and ``two_phase`` (VIEW, VIEW_ACK, PREPARE_VIEW,
COMMIT_VIEW), its restart after a takeover, and a member's side: views arriving,
older views ignored (JGRP-1496, JGRP-3036) and STATUS_VIEW for a commit it missed."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import (
    CancelTimer,
    Effect,
    InstallView,
    LeaderChanged,
    Multicast,
    Persist,
    Record,
    Send,
    SetTimer,
)
from ringcast.core.ids import View
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._common import (
    COUNTER_KEY,
    KEEP_INSTALLED,
    TIMER_OF,
    GmsFields,
    Installation,
)
from ringcast.protocols.gms._state import Ev, St
from ringcast.protocols.gms._views import BadField, GView, parse_view


class InstallMixin(GmsFields):
    """The GMS machine's steps: casting and installing views."""

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
            self.install = Installation(
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
        self.install = Installation(
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
            out.append(self.fsm.state_changed(phase="prepared", pending=inst.view.view_id))
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
                if not alive:
                    alive = self._outsiders_alive(members, silent)
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
        PREPARE_VIEW says so) that takes its view entire but for members it suspects,
        itself or by a member's SUSPECT (a crashed member of a stale subgroup that the
        merge view's restart left out: hostile seed 3244, and
        ``regress_restarted_merge_view_refused``). Any other view would split its group:
        a JOIN sent before this node got into another view and answered after, say,
        which took it out of that view and left the others behind
        (``regress_stale_join``), or, this node's view a singleton it formed after giving
        its JOIN up, merged that view with the JOIN's coordinator's alone (hostile seed
        1197, ``regress_join_served_after_a_pause``)."""
        view = self.view
        if view is None or v.coord in view:
            return True
        gone = self.suspects | self.local_suspects
        return merge and all(m in v or m in gone for m in view.members)

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
