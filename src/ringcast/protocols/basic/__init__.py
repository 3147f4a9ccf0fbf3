"""``basic``: a baseline without a token, for comparison and for testing the hosts.

Membership is the heartbeat failure detector's opinion (every node not suspected);
application multicast is a reliable-unicast fan-out delivered in per-sender FIFO
order. It gives no total order and no view agreement under partitions: it is the
yardstick the token protocols are measured against, and the smallest protocol that
exercises every part of the simulator and the runtime.
"""

from ringcast.core.units import MS
from ringcast.protocols.basic.machine import BasicMachine, make_basic
from ringcast.protocols.registry import ProtocolSpec, Setting, register

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
        },
        doc=__doc__ or "",
    )
)

__all__ = ["SPEC", "BasicMachine", "make_basic"]
