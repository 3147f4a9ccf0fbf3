"""The total ordering protocol (the Totem paper, "Total Ordering Protocol"; the corosync
Totem slides, "Пример").

A :class:`RingLog` holds one ring's frames at one node: ``my_aru`` (every frame up to it is
here), ``high_seq`` (the highest seen), ``delivered`` (this node's high-water mark of
delivery) and ``safe_upto`` (frames up to it are known to be held by every member: the
token's aru covered them on two successive visits). It also applies the Totem paper's aru / aru_id
rules and builds the rtr list. Per frame the work is O(1): a dict insert and, when the frame
fills the gap at ``my_aru``, advancing ``my_aru`` over the frames already held.
"""

from __future__ import annotations

from ringcast.protocols.totem._messages import Mcast, RecoveryMcast, RingId

Frame = Mcast | RecoveryMcast

RTR_MAX = 30
"""At most this many sequence numbers in a token's rtr list (as corosync)."""


class RingLog:
    """The frames of ring ``ring_id`` received (or broadcast) by this node."""

    __slots__ = (
        "delivered",
        "freed",
        "high_seq",
        "last_aru",
        "msgs",
        "my_aru",
        "ring_id",
        "safe_upto",
    )

    def __init__(self, ring_id: RingId) -> None:
        self.ring_id = ring_id
        self.msgs: dict[int, Frame] = {}
        self.my_aru = 0
        self.high_seq = 0
        self.delivered = 0
        self.safe_upto = 0
        self.last_aru = 0  # the aru this node put on the token at its last visit
        self.freed = 0

    def add(self, m: Frame) -> bool:
        """Keep frame ``m`` (False if a duplicate); advance ``my_aru`` over any gap it fills."""
        seq = m.seq
        msgs = self.msgs
        if seq <= self.my_aru or seq in msgs:
            return False
        msgs[seq] = m
        if seq > self.high_seq:
            self.high_seq = seq
        if seq == self.my_aru + 1:
            while seq + 1 in msgs:
                seq += 1
            self.my_aru = seq
        return True

    def missing(self, upto: int, have: tuple[int, ...]) -> list[int]:
        """Sequence numbers in (my_aru, upto] not held and not already in ``have`` (the rtr)."""
        out: list[int] = []
        room = RTR_MAX - len(have)
        msgs = self.msgs
        s = self.my_aru + 1
        while s <= upto and len(out) < room:
            if s not in msgs and s not in have:
                out.append(s)
            s += 1
        return out

    def update_aru(
        self, aru: int, aru_id: str, seq_before: int, seq: int, me: str
    ) -> tuple[int, str]:
        """The Totem paper's aru / aru_id rules, applied after this node broadcast up to ``seq``.

        - my_aru below the token's aru: lower aru to my_aru and set aru_id to this node;
        - aru_id is this node (nobody lowered it during the rotation): set aru to my_aru;
        - aru equal to seq before this visit: raise aru in step with seq, aru_id null.
        """
        my_aru = self.my_aru
        if my_aru < aru:
            return my_aru, me
        if aru_id == me:
            aru = my_aru if my_aru < seq else seq
            return aru, ("" if aru == seq else me)
        if aru == seq_before:
            return (my_aru if my_aru < seq else seq), ""
        return aru, aru_id

    def stabilize(self, arrived_aru: int) -> None:
        """Safe order: frames up to min(aru now, aru at my last visit) are held by everyone."""
        s = self.last_aru if self.last_aru < arrived_aru else arrived_aru
        if s > self.my_aru:
            s = self.my_aru
        if s > self.safe_upto:
            self.safe_upto = s

    def free(self) -> None:
        """Drop frames every member holds and this node delivered (never needed again)."""
        upto = self.safe_upto if self.safe_upto < self.delivered else self.delivered
        msgs = self.msgs
        for s in range(self.freed + 1, upto + 1):
            msgs.pop(s, None)
        if upto > self.freed:
            self.freed = upto
