"""Failure detection as JGroups' FD ring: a member acts only on its successors in its
view (its ping_dest), multicasting SUSPECT for them while they remain in its view, and
the next in line takes over when the coordinator is suspected."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import (
    Effect,
    Record,
    Send,
    SetTimer,
)
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._common import (
    TIMER_OF,
    GmsFields,
)
from ringcast.protocols.gms._state import MEMBER_STATES, Ev, St
from ringcast.protocols.gms._views import format_id, parse_id


class DetectMixin(GmsFields):
    """The GMS machine's steps: failure detection and takeover."""

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
        if self.direct_info and self.state is St.COORDINATOR:
            self._ask_info(out)
        return out

    def _ask_info(self, out: list[Effect]) -> None:
        """A coordinator asks every node outside its view that the failure detector
        hears alive, and whose INFO it has not heard since, for its view: it sends its
        own INFO to it, which a node of another view answers at once. MERGE3's INFO
        comes every ``merge_interval``, and behind a link losing 75 % it is heard once
        in two seconds; asked every ``suspect_interval``, the two sides of a split
        learn of each other's views in a few hundred milliseconds."""
        view = self.view
        assert view is not None
        ask = set(self._unheard_outsiders(view))
        # A coordinator that defers to a smaller one (it leads the merge) tells it of
        # this view, which it may not have heard (hostile seed 3007: B, restarted alone,
        # heard A's INFO and deferred to it; A, behind a link losing 84 % from B, heard
        # none of B's for four seconds).
        for n, e in self.info.items():
            if n not in view and e[2] == n and e[1] != view.view_id and n < self.node_id:
                ask.add(n)
        for n in sorted(ask - self.local_suspects):
            out.append(Send(n, M.MergeInfo(view.view_id, view.members[0])))

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
