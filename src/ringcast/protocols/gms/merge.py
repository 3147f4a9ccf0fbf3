"""Merging as JGroups' MERGE3: INFO every ``merge_interval``; the smallest coordinator
that heard of foreign views asks one node per view (MERGE_REQ), and installs one merge
view of every member of every view answered (MERGE_RSP) or none (MERGE_CANCEL): a
merge is all or nothing (the lab's ``merge_atomicity``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ringcast.core.effects import (
    Effect,
    Multicast,
    Record,
    Send,
    SetTimer,
)
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._common import (
    MAX_HEARD,
    MAX_WAVES,
    TIMER_OF,
    GmsFields,
    MergeRound,
)
from ringcast.protocols.gms._state import Ev, St
from ringcast.protocols.gms._views import BadField, GView, format_id, id_key, parse_id, parse_view


class MergeMixin(GmsFields):
    """The GMS machine's steps: merging."""

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
        p = self.prepared
        if (
            p is not None
            and self.mode == "two_phase"
            and msg.view_id == p.view_id
            and src == p.coord == msg.coord
            and (view is None or p.key > view.key)
            and self.now - self.prepared_at >= self.status_timeout
        ):
            # The coordinator of the view this node prepared reports it as its view: it
            # installed it, which it does on committing it; asked for by STATUS_VIEW
            # already (status_timeout passed), the commit was lost: this is it (hostile seed 2316:
            # every COMMIT_VIEW and STATUS_VIEW answer from A to C lost behind a link
            # losing 67 %, C held A:6 prepared for four seconds while A's INFO of A:6
            # came through). STATUS_VIEW remains the way a commit is recovered first.
            out.append(Record.of("commit_from_info", view=p.view_id))
            return out + self._on_commit_view(now, src, M.CommitView(p.view_id, p.members))
        mg = self.merge
        if mg is not None and view is not None and src not in view:
            # Heard while a merge is under way (after a heal, a side the leader could
            # not hear when it started): counted as the answers' INFO is, so a view the
            # merge does not take yet is asked in its next wave rather than left to a
            # merge of its own after this one (hostile seed 7197: A's merge of C, asked
            # during a three-way partition and answered after the heal, left B out).
            mg.heard.setdefault(src, (msg.view_id, msg.coord))
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
        lock = self.merge_lock
        if lock is not None and lock[1] <= now:
            # The lock outlived its merge (its MERGE_CANCEL lost, its leader gone): the
            # view handler resumes, as when the merge ends, and casts what it queued
            # meanwhile (hostile seed 6578: B, locked by A's merge, whose MERGE_CANCEL
            # was lost before A crashed, suspected C throughout the lock and never
            # excluded it; C restarted alone and, still a member of B's view, was never
            # merged back).
            self.merge_lock = None
            self._process_queue(out)
            if self.state not in (St.COORDINATOR, St.PARTICIPANT):
                return out
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
        self.merge = MergeRound(
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
        for n in self._unheard_outsiders(view):
            seen[n] = since = self.unaccounted.get(n, now)
            out.append(Send(n, M.MergeInfo(view.view_id, view.members[0])))
            wait = wait or now - since < self.merge_interval
        self.unaccounted = seen
        return wait

    def _unheard_outsiders(self, view: GView) -> list[str]:
        """The nodes outside ``view`` that the failure detector hears alive and whose
        INFO this node has not heard since it last heard them again, in name order; a
        node in no view (joining) is left out: its JOIN brings it in."""
        found = []
        for n in sorted(self._outsiders_alive(view.members)):
            e = self.info.get(n)
            if e is None or e[0] < self.revived.get(n, 0):
                found.append(n)
        return found

    def _outsiders_alive(self, members: Iterable[str], silent: Iterable[str] = ()) -> set[str]:
        """The nodes outside ``members`` and ``silent`` that the failure detector hears
        alive, a joining node (in no view) left out: a merge restarted without its
        silent members that left such a node out would be a merge of part of what is
        reachable (hostile seed 7364: A's merge, decided 4 ms after a heal on answers
        asked during the partition, restarted without the crashed G 500 ms later and
        left out F, alive on the other side since the heal)."""
        outside = set(self.peers) - set(members) - set(silent) - self.local_suspects
        return {
            n
            for n in outside
            if n != self.node_id and self.viewless.get(n, -1) < self.revived.get(n, 0)
        }

    def _merge_wave(self, mg: MergeRound, view: GView, out: list[Effect]) -> bool:
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
            # The answer is the newest word of its view: taken as its INFO, so the next
            # attempt asks for that view, where the stale INFO (behind a lossy link, it
            # may be the last heard for seconds) had the next one cancelled again.
            self.info[src] = (self.now, v.view_id, v.members[0] if v.members else src)
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
