"""``basic``: a baseline without a token, for comparison and for testing the hosts.

Membership is the heartbeat failure detector's opinion (every node not suspected);
application multicast is a reliable-unicast fan-out delivered in per-sender FIFO
order. It gives no total order and no view agreement under partitions: it is the
yardstick the token protocols are measured against, and the smallest protocol that
exercises every part of the simulator and the runtime.

Flow control is the reliable layer's window, as Tribes has it
(``ringcast.layers.reliable``): once ``window`` messages to some peer are
unacknowledged, the layer emits ``Backpressure(True)`` and the host holds new submits,
until every peer is at or below ``window // 2`` again. The receiver delivers a message
as its reliable layer takes it, so the layer's acknowledgement is the delivery's. A
peer that cannot be reached holds its senders until the layer gives up on it
(``max_tries`` x ``rto``, then ``SendFailed`` for what was queued to it), not for good.

A message for an earlier boot of its receiver (a frame its sender still retransmits to
a node that restarted) is refused by the reliable layer and reported to the sender with
``SendFailed``, so a restarted node never delivers again what its earlier boot did
(docs/protocols/raincore.md, decision 34).

The failure-detection timeout the lab's hostile generator scales its faults by is
``heartbeat_interval`` x ``heartbeat_misses`` (200 ms by default), as GMS's, plus
``suspect_verify_timeout`` (150 ms): a silent peer is probed directly and suspected
only if still silent that much later, so a node stopped or kept off the CPU for up to
about 350 ms, or heard behind a link that loses most heartbeats, is not dropped from
the view (docs/protocols/gms.md, "Suspicions confirmed before they count").

Failure detection in a large group (found by ``sweeps/scale.toml``).
basic's membership is each node's own detector, which watches every other node: a group
of n watches n x (n - 1) links, and at independent loss p each falsely suspects its peer
about (1 - p) x p^4 times a heartbeat period, each time a view change at that node and
another when the peer is heard again. With 4 misses whatever the size, 32 members at
30 % loss changed views 2,212 times in 10 s without a fault (8 members: 99), and 19 of
the scale sweep's 60 runs of 16 to 32 members ended unconverged (9 of 200 at 3 to 8).
The detector needs ``heartbeat_misses_per_doubling`` (1) more missed heartbeats each
time the configured group doubles beyond 8 (``ringcast.core.scale.doublings``): 5
at 9 to 16 members, 6 at 17 to 32, 7 at 33 to 64. Doubling the group multiplies its
links by about 4, and one more miss divides each link's rate by 1/p, 4 at 25 % loss, so
the group's false suspicions stay about where they are at 8 members (32 members at 30 %
loss: 170 view changes in 10 s; the same 60 runs: 2 unconverged, both with a link losing
50 % or more in one direction), and groups of up to 8 are unchanged. The price is
detection: a crash is suspected one heartbeat period later per doubling, within (misses
in force + 1) periods of it, 350 ms at 32 members (measured 323 ms; 223 before). The
declared failure-detection timeout stays the one above, as Totem's stays its
``token_timeout``. GMS shares the detector: docs/protocols/gms.md ("Failure detection
that scales with the group") has the reasoning and what was set aside, and
docs/benchmarks.md the runs.
"""

from ringcast.core.units import MS
from ringcast.layers import detector
from ringcast.protocols.basic.machine import BasicData, BasicMachine, make_basic
from ringcast.protocols.registry import ProtocolSpec, Setting, register

SPEC = register(
    ProtocolSpec(
        "basic",
        make_basic,
        settings={
            **detector.SETTINGS,
            "rto": Setting(
                "duration", 20 * MS, "reliable unicast retransmission timeout", minimum=1
            ),
            "max_tries": Setting("int", 5, "transmissions before failure-on-delivery", minimum=1),
            "window": Setting(
                "int",
                256,
                "messages in flight to one peer (unacknowledged by it) before Backpressure",
                minimum=2,
            ),
        },
        doc=__doc__ or "",
        # The baseline: reliable per-sender FIFO and a heartbeat membership; no total
        # order and no view agreement across partitions (the lab's negative control).
        claims=frozenset({"integrity", "fifo", "convergence", "delivery_progress"}),
        total_orders=None,
        timeout=detector.suspicion_time,
        wire_ids=(0x0010, 0x001F),
    )
)

__all__ = ["SPEC", "BasicData", "BasicMachine", "make_basic"]
