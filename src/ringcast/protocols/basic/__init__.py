"""``basic``: a baseline without a token, for comparison and for testing the hosts.

Membership is the heartbeat failure detector's opinion (every node not suspected);
application multicast is a reliable-unicast fan-out delivered in per-sender FIFO
order. It gives no total order and no view agreement under partitions: it is the
yardstick the token protocols are measured against, and the smallest protocol that
exercises every part of the simulator and the runtime.

Flow control (a window per peer, in the protocol, not in the shared reliable layer):
the sender numbers its messages to each peer (``BasicData.seq``, per boot ``epoch``)
and counts those in flight, sent but not acknowledged. The receiver acknowledges
cumulatively with a small ``BasicAck(epoch, upto)``, sent reliably every ``window // 4``
messages from that sender. When a peer's in-flight count reaches ``window`` the node
emits ``Backpressure(True)`` (the host holds new submits), and ``Backpressure(False)``
once every peer is at or below ``window // 2``. So the reliable layer's retransmit
queue to any peer never holds more than ``window`` messages (plus a few acks), whatever
the application does. A peer that cannot be reached does not block the others: its
in-flight count is dropped when the transport reports ``SendFailed`` for a message to
it, or when the failure detector suspects it. The count is per sender boot, so a
restarted receiver (which acknowledges the sender's sequence numbers, not its own
counts) or a restarted sender (a new epoch; acks of the old one are ignored) never
leaves a stale count behind. A receiver takes each message's seq as it comes (one boot's
messages arrive in order), so a corrupted one far above the rest does not stop its acks.

A message for an earlier boot (session 39; found by the hostile generator once basic
declared its failure-detection timeout, seed 168). The reliable layer hands a restarted
receiver every frame its sender still retransmits, so a message the old boot delivered,
whose ack was lost before the crash, was delivered again by the new boot: the lab's
integrity check (each message at most once at a node) failed. Each ``BasicData`` now
names the destination's boot its sender last heard of (``dst_epoch``: from the
destination's own messages and from the ``receiver_epoch`` of its acks; 0 before any),
and a node does not deliver a message named for an earlier boot of itself: that was sent
to a process that crashed. It still acknowledges it, so the sender's window drains. A
message sent before the sender heard of the new boot is not delivered there either;
basic promises nothing to a process about what was sent before it started. Since
Raincore's decision 33 the reliable layer refuses frames meant for an earlier
incarnation of their receiver itself and reports them with ``SendFailed`` (which
settles the in-flight count); ``dst_epoch`` is kept, and still drops what the layer
lets through: messages sent after the sender's layer heard of the new boot (from its
acks) but before basic did.

The failure-detection timeout the lab's hostile generator scales its faults by is
``heartbeat_interval`` x ``heartbeat_misses`` (200 ms by default), as GMS's.
"""

from collections.abc import Mapping
from typing import Any

from ringcast.core.units import MS
from ringcast.protocols.basic.machine import BasicAck, BasicData, BasicMachine, make_basic
from ringcast.protocols.registry import ProtocolSpec, Setting, register


def _suspicion_time(settings: Mapping[str, Any]) -> int:
    """The failure-detection timeout: ``heartbeat_misses`` silent heartbeat periods."""
    return int(settings["heartbeat_interval"]) * int(settings["heartbeat_misses"])


SPEC = register(
    ProtocolSpec(
        "basic",
        make_basic,
        settings={
            "heartbeat_interval": Setting("duration", 50 * MS, "heartbeat period", minimum=1),
            "heartbeat_misses": Setting("int", 4, "missed heartbeats before suspicion", minimum=1),
            "rto": Setting(
                "duration", 20 * MS, "reliable unicast retransmission timeout", minimum=1
            ),
            "max_tries": Setting("int", 5, "transmissions before failure-on-delivery", minimum=1),
            "window": Setting(
                "int",
                256,
                "messages in flight to one peer (unacknowledged by it) before Backpressure",
                minimum=1,
            ),
        },
        doc=__doc__ or "",
        # The baseline: reliable per-sender FIFO and a heartbeat membership; no total
        # order and no view agreement across partitions (the lab's negative control).
        claims=frozenset({"integrity", "fifo", "convergence"}),
        total_orders=None,
        timeout=_suspicion_time,
        wire_ids=(0x0010, 0x001F),
    )
)

__all__ = ["SPEC", "BasicAck", "BasicData", "BasicMachine", "make_basic"]
