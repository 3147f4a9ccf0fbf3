"""The membership protocol's bookkeeping (seed 002, "Membership Protocol", "Gather State").

:class:`Gatherer` keeps ``my_proc_set``, ``my_fail_set`` and who agrees with them
(consensus). A join from another node is merged in: its proc_set and fail_set are added to
this node's sets; if they changed, the previous consensus is abandoned and a new join is
broadcast. Consensus is reached when every node of ``my_proc_set - my_fail_set`` sent a join
with exactly this node's sets; the representative (the smallest id) then builds the commit
token, whose ring_id.seq is the largest ring seq known plus 4 (seed 001).
"""

from __future__ import annotations

from ringcast.protocols.totem._messages import CommitToken, Join, MembEntry, RingId

RING_SEQ_STEP = 4
"""The new ring_id.seq is the largest old or proposed seq plus 4 (seed 001)."""


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

    def merge(self, src: str, join: Join, fresh: bool = True) -> bool:
        """Merge the join of ``src`` into this node's sets; True if they changed.

        This node never takes itself as failed: a node that lists it as failed forms a ring
        without it, and the two rings merge later through foreign messages. The fail_set is
        merged only from a ``fresh`` join (its sender knows no older ring than this node), so
        failures seen in an earlier round do not keep coming back.
        """
        self.heard.add(src)
        if self.me in join.fail_set:
            # Decision: ``src`` has failed this node; it ignores this node's joins until it
            # has formed a ring, so it will never agree to one with this node: fail it too.
            # (Otherwise fail sets that name each other in a cycle deadlock Gather.)
            proc = self.my_proc_set | set(join.proc_set) | {src}
            fail = self.my_fail_set | {src}
            changed = proc != self.my_proc_set or fail != self.my_fail_set
            if changed:
                self.my_proc_set, self.my_fail_set = proc, fail
                self.consensus = {self.me}
            return changed
        proc = self.my_proc_set | set(join.proc_set) | {src}
        fail = self.my_fail_set | (set(join.fail_set) - {self.me}) if fresh else self.my_fail_set
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
        missing = (self.my_proc_set - self.my_fail_set) - self.heard
        self.my_fail_set |= missing
        self.consensus = {self.me}
        self.heard = {self.me}
        return bool(missing)

    def representative(self) -> str:
        return self.members()[0]


def new_commit_token(
    ring_seq: int, me: str, memb: tuple[str, ...], entry: MembEntry
) -> CommitToken:
    """The commit token the representative sends once consensus is reached."""
    return CommitToken(RingId(ring_seq + RING_SEQ_STEP, me), 0, memb, 0, (entry,))
