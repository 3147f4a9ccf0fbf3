"""The recovery protocol (the Totem paper, "Recovery Protocol"; the corosync Totem slides,
"Протокол Восстановления").

The six steps:

1. old-ring messages above the lowest ``my_aru`` of the members that came from the same old
   ring are rebroadcast on the new ring (:func:`make_plan` lists what this node can send);
2. old-ring messages are delivered in order until a gap, or a safe message above
   ``high_ring_delivered`` (the highest seq any of those members delivered);
3. the transitional configuration (``my_trans_memb``) is installed;
4. the remaining old-ring messages are delivered: up to the first gap, then past gaps
   those whose sender is a member of the transitional configuration;
5. the regular configuration is installed;
6. the node shifts to Operational.

Steps 2-6 happen atomically at each node once the exchange of step 1 is known to be complete
(:func:`old_ring_deliveries` computes steps 2 and 4).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ringcast.protocols.totem._messages import CommitToken, Mcast, RingId
from ringcast.protocols.totem.ordering import RingLog


@dataclass(slots=True)
class RecoveryPlan:
    new_ring: RingId
    memb: tuple[str, ...]
    old_ring: RingId
    my_trans_memb: tuple[str, ...]
    low_ring_aru: int
    high_ring_delivered: int
    high_seq: int
    deliver_memb: tuple[str, ...] = ()
    """my_deliver_memb: the transitional members and the senders of every unfinished
    recovery of the old ring that a member of it took part in (see :func:`make_plan`)."""
    queue: deque[int] = field(default_factory=deque)
    recovered: set[int] = field(default_factory=set)
    visits: int = 0


def make_plan(ct: CommitToken, old: RingLog) -> RecoveryPlan:
    """Read the commit token's second rotation: who shares my old ring, what to resend.

    ``ct`` has passed :func:`._validate.second_rotation`, so it carries this node's own
    entry for ``old`` and ``mine`` is never empty."""
    mine = [e for e in ct.entries if e.ring_id == old.ring_id]
    # The Totem paper, "Failure of Recovery": a member that took part in an earlier recovery of
    # this old ring and did not install its ring may be the only one left of a
    # transitional configuration in which another member delivered frames past a gap
    # (safe ones among them). Every member of the new transitional configuration
    # delivers those senders' frames too, so that it delivers them "during the next
    # transitional configuration", and all of them deliver the same ones.
    deliver = {e.node for e in mine}.union(*(e.deliver_memb for e in mine))
    low = min(e.my_aru for e in mine)
    high_delivered = max(e.high_delivered for e in mine)
    high_seq = max(e.high_seq for e in mine)
    # The frames this node holds above low, in order: a walk over what it holds, never a
    # range bounded by a commit-token field (a bad my_aru made that loop endless). Only
    # the old ring's messages: a frame of the old ring's own recovery carries a message
    # of the ring before, which every receiver refuses to carry again ("old: not a
    # regular frame"), so the new ring's aru would never pass it (docs, "Recovery frames
    # are not sent again").
    queue = deque(sorted(s for s, m in old.msgs.items() if s > low and type(m) is Mcast))
    return RecoveryPlan(
        new_ring=ct.ring_id,
        memb=ct.memb_list,
        old_ring=old.ring_id,
        my_trans_memb=tuple(sorted(e.node for e in mine)),
        deliver_memb=tuple(sorted(deliver)),
        low_ring_aru=low,
        high_ring_delivered=high_delivered,
        high_seq=high_seq,
        queue=queue,
    )


def old_ring_deliveries(
    old: RingLog, high_ring_delivered: int, my_deliver_memb: tuple[str, ...]
) -> tuple[list[Mcast], list[Mcast]]:
    """Steps 2 and 4: the old ring's undelivered frames before and after the transitional
    configuration.

    Step 2 delivers in order until a gap or the first safe frame above
    ``high_ring_delivered``. Step 4 delivers "all remaining messages from the old ring by
    processors in my_deliver_memb": the frames that follow in order, of any sender, up to
    the first gap, and past it the frames whose sender is a member of the transitional
    configuration. A gap is a frame that no member held after the exchange of step 1 (a
    sender holds its own frames), so it is a departed processor's, every member skips
    the same ones, and a member's own frame behind it is still delivered (it used to be
    dropped for good: Totem's self-delivery, 1,406 of 10,000 hostile runs).
    """
    before: list[Mcast] = []
    after: list[Mcast] = []
    msgs = old.msgs
    s = old.delivered + 1
    while True:  # step 2
        m = msgs.get(s)
        if m is None or (type(m) is Mcast and m.safe and s > high_ring_delivered):
            break
        if type(m) is Mcast:
            before.append(m)
        s += 1
    members = set(my_deliver_memb)
    held = sorted(k for k in msgs if k >= s)  # step 4: a walk over the frames held
    gap = False
    for k in held:
        gap = gap or k != s
        m = msgs[k]
        if type(m) is Mcast and (not gap or m.sender in members):
            after.append(m)
        s = k + 1
    old.delivered = s - 1
    return before, after
