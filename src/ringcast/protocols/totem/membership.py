"""The membership protocol's bookkeeping (the Totem paper, "Membership Protocol", "Gather State").

:class:`Gatherer` keeps ``my_proc_set``, ``my_fail_set`` and who agrees with them
(consensus). A join from another node is merged in: its proc_set and fail_set are added to
this node's sets; if they changed, the previous consensus is abandoned and a new join is
broadcast. Consensus is reached when every node of ``my_proc_set - my_fail_set`` sent a join
with exactly this node's sets; the representative (the smallest id) then builds the commit
token, whose ring_id.seq is the largest ring seq known plus 4 (the corosync Totem slides).

Fail sets are scoped to a membership round ("fail-set camps" in
docs/protocols/totem.md). A round is named by the largest ring seq its members know
(``Join.ring_seq``): every commit token, accepted or not, raises it by 4, so a node that
sees a larger one knows some nodes have moved past its round. A join's fail_set, the
"it fails me, so I fail it" rule and consensus count only for joins of this node's
round; a join of a newer round starts this node's round over, its fail set emptied
(:meth:`Gatherer.new_round`). Membership agreement does not rest on fail sets: a member
accepts only a commit token whose memb_list is its own proposal, and extended virtual
synchrony is kept by Recovery whatever the fail sets were.
"""

from __future__ import annotations

from ringcast.protocols.totem._messages import CommitToken, Join, MembEntry, RingId

RING_SEQ_STEP = 4
"""The new ring_id.seq is the largest old or proposed seq plus 4 (the corosync Totem slides)."""


class Gatherer:
    __slots__ = ("consensus", "heard", "me", "my_fail_set", "my_proc_set")

    def __init__(self, me: str) -> None:
        self.me = me
        self.my_proc_set: set[str] = {me}
        self.my_fail_set: set[str] = set()
        self.consensus: set[str] = {me}
        self.heard: set[str] = {me}  # nodes whose join arrived since the last consensus timeout

    def start(self, proc: set[str], fail: set[str]) -> None:
        self.my_proc_set = proc | {self.me}
        self.my_fail_set = fail - {self.me}
        self.consensus = {self.me}
        self.heard = {self.me}

    def join_msg(self, ring_seq: int) -> Join:
        return Join(
            self.me, ring_seq, tuple(sorted(self.my_proc_set)), tuple(sorted(self.my_fail_set))
        )

    def members(self) -> tuple[str, ...]:
        """The proposed membership, ``my_proc_set - my_fail_set``, in ring order."""
        return tuple(sorted(self.my_proc_set - self.my_fail_set))

    def matches(self, join: Join) -> bool:
        return set(join.proc_set) == self.my_proc_set and set(join.fail_set) == self.my_fail_set

    def new_round(self) -> None:
        """A newer round began (a join or ring with a larger ring seq was seen): this node's
        fail set belonged to the round that ended and is dropped; its proc_set stays (those
        nodes were alive); consensus starts over. Members that are really gone are failed
        again at the next consensus timeout."""
        self.my_fail_set = set()
        self.consensus = {self.me}

    def merge(self, src: str, join: Join, same_round: bool = True) -> bool:
        """Merge the join of ``src`` into this node's sets; True if they changed.

        This node never takes itself as failed: a node that lists it as failed forms a ring
        without it, and the two rings merge later through foreign messages. A join of an
        older round (``same_round`` false: its sender knew a smaller ring seq when it sent
        it) adds its proc_set only: its fail_set was about a round that is over (a late
        copy, or a node that has not yet heard of the newer round), and it is no vote for
        consensus, which is reached among joins of one round.
        """
        self.heard.add(src)
        if not same_round:
            return self.add_procs(set(join.proc_set) | {src})
        if self.me in join.fail_set:
            # Decision: ``src`` has failed this node in this round; it ignores this node's
            # joins until its round ends, so it will never agree to a ring with this node in
            # it: fail it too. (Otherwise fail sets that name each other in a cycle deadlock
            # Gather.) Scoped to the round: once ``src`` moves on, its joins carry a larger
            # ring seq and this node starts the new round with an empty fail set.
            proc = self.my_proc_set | set(join.proc_set) | {src}
            fail = self.my_fail_set | {src}
            changed = proc != self.my_proc_set or fail != self.my_fail_set
            if changed:
                self.my_proc_set, self.my_fail_set = proc, fail
                self.consensus = {self.me}
            return changed
        proc = self.my_proc_set | set(join.proc_set) | {src}
        fail = self.my_fail_set | (set(join.fail_set) - {self.me})
        changed = proc != self.my_proc_set or fail != self.my_fail_set
        if changed:
            self.my_proc_set, self.my_fail_set = proc, fail
            self.consensus = {self.me}
        if self.matches(join):
            self.consensus.add(src)
        return changed

    def add_procs(self, nodes: set[str]) -> bool:
        new = nodes - self.my_proc_set - self.my_fail_set
        if not new:
            return False
        self.my_proc_set |= new
        self.consensus = {self.me}
        return True

    def agreed(self) -> bool:
        return (self.my_proc_set - self.my_fail_set) <= self.consensus

    def fail_missing(self) -> bool:
        """Consensus timeout: the members not heard from since the last one are failed.

        A member that keeps sending joins is alive: it is not failed for disagreeing (its
        sets only grow, so agreement comes), consensus just starts over. True if any failed.
        """
        missing = self.fail_unheard(self.my_proc_set)
        self.consensus = {self.me}
        self.heard = {self.me}
        return bool(missing)

    def fail_unheard(self, among: set[str]) -> set[str]:
        """Fail the live members of ``among`` whose join has not arrived since the last
        consensus timeout (or the start of Gather); consensus starts over if any was.
        Returns them."""
        missing = (among & (self.my_proc_set - self.my_fail_set)) - self.heard
        if missing:
            self.my_fail_set |= missing
            self.consensus = {self.me}
        return missing

    def representative(self) -> str:
        return self.members()[0]


def new_commit_token(
    ring_seq: int, me: str, memb: tuple[str, ...], entry: MembEntry
) -> CommitToken:
    """The commit token the representative sends once consensus is reached."""
    return CommitToken(RingId(ring_seq + RING_SEQ_STEP, me), 0, memb, 0, (entry,))
