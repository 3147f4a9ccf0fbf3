"""``tribes``: Apache Tomcat Tribes' auto-merging, non-blocking coordinator election
(Tomcat's ``NonBlockingCoordinator``), complete.

Every member announces itself periodically (McastService's heartbeat, with its priority
and start time) and is dropped after ``member_drop_time`` without one, so a member's
view may be partial and asymmetric. On that membership, an election token
(``COORD_REQUEST``) travels along the absolute order of the members, merges each node's
knowledge, is re-led by the highest member known, returns to its source, is resent while
its member list changed, and ends with ``COORD_CONF`` to every member, who install the
view; its first member is the coordinator. Elections start at start-up and on every
member added or gone. Application multicasts (reliable, per-sender FIFO, as a Tribes
channel gives) flow during an election. See docs/protocols/tribes.md.
"""

from ringcast.core.machine import Machine, MachineContext
from ringcast.core.units import MS
from ringcast.layers import ReliableUnicast, Stack
from ringcast.protocols.registry import ProtocolSpec, Setting, register
from ringcast.protocols.tribes._messages import (
    AppData,
    CoordAlive,
    CoordConf,
    CoordMember,
    CoordRequest,
    MemberBeacon,
    MemberShutdown,
)
from ringcast.protocols.tribes._state import TABLE, Ev, State, mermaid
from ringcast.protocols.tribes.machine import TribesMachine, TribesSettings

SETTINGS = {
    "heartbeat_interval": Setting(
        "duration", 50 * MS, "period of a member's beacon (McastService frequency)", minimum=1
    ),
    "member_drop_time": Setting(
        "duration",
        250 * MS,
        "a member not heard for this long disappears (McastService dropTime)",
        minimum=1,
    ),
    "drop_beacons_per_doubling": Setting(
        "int",
        1,
        "member_drop_time grows by this many heartbeat_intervals each time the configured "
        "group doubles beyond 8 members (0: member_drop_time whatever the size)",
        minimum=0,
    ),
    "start_wait": Setting(
        "duration",
        120 * MS,
        "how long a starting member collects beacons before its first election",
        minimum=0,
    ),
    "wait_for_coord_msg_timeout": Setting(
        "duration",
        500 * MS,
        "waitForCoordMsgTimeout: how long a member waits for a token or COORD_CONF before "
        "it starts an election itself (plus rto per member, for a round through a large group)",
        minimum=1,
    ),
    "rto": Setting("duration", 20 * MS, "reliable unicast retransmission timeout", minimum=1),
    "max_tries": Setting(
        "int", 5, "transmissions before the transport reports failure-on-delivery", minimum=1
    ),
    "window": Setting(
        "int",
        256,
        "messages in flight to a member (sent, not yet acknowledged) before the application "
        "is held with Backpressure, released at half (decision 20)",
        minimum=2,
    ),
    "priorities": Setting(
        "str",
        "",
        "member priorities, 'A:10, B:5' (higher first in the absolute order; unlisted: 0)",
    ),
}


def make_tribes(ctx: MachineContext) -> Machine:
    """The factory: a :class:`TribesMachine` on the reliable-unicast layer."""
    s = {k: v.default for k, v in SETTINGS.items()}
    s.update(ctx.settings)
    nodes = len(set(ctx.peers) | {ctx.node_id})
    machine = TribesMachine(ctx, TribesSettings.from_mapping(s, nodes=nodes))
    reliable = ReliableUnicast(
        ctx.node_id,
        rto=int(s["rto"]),
        max_tries=int(s["max_tries"]),
        storage=dict(ctx.storage),
        window=int(s["window"]),
        # Decision 26: the wait before a retransmission adapts to the peer's round
        # trips, up to the election's own timeout.
        rto_ceiling=max(int(s["rto"]), int(s["wait_for_coord_msg_timeout"])),
    )
    return Stack(machine, reliable=reliable)


SPEC = register(
    ProtocolSpec(
        "tribes",
        make_tribes,
        settings=SETTINGS,
        doc=__doc__ or "",
        # Views are confirmed by COORD_CONF with a unique id, so every member of a
        # confirmed view installs it with the same members and leader; application
        # multicast is per-sender FIFO with no total order.
        claims=frozenset(
            {
                "view_agreement",
                "leader_agreement",
                "convergence",
                "integrity",
                "fifo",
                "delivery_progress",
            }
        ),
        total_orders=None,
        order_scope="view",
        converge_on="view",
        trace_kinds=("coord",),
        wire_ids=(0x0300, 0x03FF),
        timeout="member_drop_time",
    )
)

__all__ = [
    "SETTINGS",
    "SPEC",
    "TABLE",
    "AppData",
    "CoordAlive",
    "CoordConf",
    "CoordMember",
    "CoordRequest",
    "Ev",
    "MemberBeacon",
    "MemberShutdown",
    "State",
    "TribesMachine",
    "TribesSettings",
    "make_tribes",
    "mermaid",
]
