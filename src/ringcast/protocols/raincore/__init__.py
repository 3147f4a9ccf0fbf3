"""``raincore``: the Raincore token-ring Group Communication Manager (the Raincore paper).

A token circulates on a logical ring over reliable unicast (the Transport Manager);
each node runs the seven-state machine of Figure 11 (View State Agreement / Chaos /
Reserve x Token State Eating / Hungry / Starving), commits the agreed membership to its
globalView vector, regenerates a lost token through the 911 message, and admits new
nodes by their 911. The token carries a totally ordered reliable multicast and the
group's mutual-exclusion lock. See docs/protocols/raincore.md.
"""

from typing import Any

from ringcast.core.machine import Machine, MachineContext
from ringcast.core.scale import doublings
from ringcast.core.units import MS
from ringcast.layers import ReliableUnicast, Stack
from ringcast.protocols.raincore._messages import MESSAGE_TYPES, Msg911, Status, Token
from ringcast.protocols.raincore._state import (
    ROWS,
    STATES,
    TABLE,
    TokenState,
    ViewState,
    mermaid,
)
from ringcast.protocols.raincore.machine import RaincoreMachine, RaincoreSettings
from ringcast.protocols.registry import ProtocolSpec, Setting, register

SETTINGS = {
    "eating_timeout": Setting(
        "duration", 5 * MS, "how long a node keeps the token before passing it on", minimum=1
    ),
    "hungry_timeout": Setting(
        "duration",
        500 * MS,
        "time without the token before a node starves and sends a 911 "
        "(must exceed a rotation plus rto * max_tries)",
        minimum=1,
    ),
    "hungry_per_member": Setting(
        "duration",
        15 * MS,
        "the hungry timeout in force is at least this per configured node (a rotation "
        "crosses every member; 0: hungry_timeout alone; decision 33)",
        minimum=0,
    ),
    "starving_timeout": Setting("duration", 100 * MS, "period of a starving node's 911", minimum=1),
    "rto": Setting("duration", 10 * MS, "transport manager retransmission timeout", minimum=1),
    "rto_max": Setting(
        "duration",
        40 * MS,
        "the transport's wait doubles after each unanswered try up to this (RFC 6298 "
        "back-off): failure-on-delivery after 10+20+40+40+40+40 = 190 ms with the defaults, "
        "not 60, so a next node kept off the CPU that long is not cut from the ring "
        "(rto: no back-off; decision 36)",
        minimum=1,
    ),
    "max_tries": Setting(
        "int",
        6,
        "transmissions before the transport reports failure-on-delivery in a ring of "
        "up to 8 configured nodes (decisions 32 and 33)",
        minimum=1,
    ),
    "tries_per_doubling": Setting(
        "int",
        1,
        "transmissions a hop adds each time the configured ring doubles beyond 8 nodes "
        "(16: +1, 32: +2, 64: +3; decision 33)",
        minimum=0,
    ),
    "initial_token_seq": Setting(
        "int", 1, "sequence number of the first token (the figures use 11)", minimum=0
    ),
    "lock_max_hold": Setting(
        "duration",
        50 * MS,
        "longest time the lock keeps the token at one node (keep below hungry_timeout)",
        minimum=0,
    ),
    "max_token_messages": Setting(
        "int", 64, "most application messages riding on the token at once", minimum=1
    ),
    "max_token_bytes": Setting(
        "int",
        48 * 1024,
        "most bytes of application messages (estimated encoded size) on the token at once; "
        "keeps the token within one UDP datagram",
        minimum=1024,
    ),
    "max_pending": Setting(
        "int",
        512,
        "submitted messages a node queues for the token before it applies Backpressure",
        minimum=1,
    ),
    "busy_eating_timeout": Setting(
        "duration",
        1 * MS,
        "how long a node keeps the token while traffic flows (the token carries messages or "
        "some wait for it); eating_timeout paces an idle token",
        minimum=1,
    ),
    "token_confirmations": Setting(
        "int",
        1,
        "times a token hop whose transmissions all went unanswered is sent once more to "
        "the same next node, with the transport's whole budget again, before that node "
        "is cut from the ring (decision 37)",
        minimum=0,
    ),
    "primary_component": Setting(
        "bool",
        True,
        "only a ring holding a majority of the group's universe (every node of the "
        "broadcast domain; ties: the half with its first node) reserves a view, keeps "
        "or regenerates the token (false: the Raincore paper's rule, no partition safety)",
    ),
}


def in_force(settings: dict[str, Any], nodes: int) -> dict[str, Any]:
    """The settings a ring of ``nodes`` configured nodes runs with (decision 33).

    A rotation crosses every member, so it takes longer, and drops a live member more
    often, the larger the ring: the hungry timeout in force is at least
    ``hungry_per_member`` a node, and a token hop tries ``tries_per_doubling`` more
    times each time the ring doubles beyond eight nodes
    (:func:`~ringcast.core.scale.doublings`). Each try of a hop fails when its send or
    its ack is lost, about half the time at 30 % loss, so one more try a doubling keeps
    the chance that a rotation drops a live member where it is in a ring of eight.
    Rings of up to eight (33 for the timeout) are unchanged.
    """
    s = dict(settings)
    s["hungry_timeout"] = max(int(s["hungry_timeout"]), int(s["hungry_per_member"]) * nodes)
    s["max_tries"] = int(s["max_tries"]) + int(s["tries_per_doubling"]) * doublings(nodes)
    return s


def make_raincore(ctx: MachineContext) -> Machine:
    """The factory: a :class:`RaincoreMachine` on top of the reliable-unicast layer."""
    s = {k: v.default for k, v in SETTINGS.items()}
    s.update(ctx.settings)
    s = in_force(s, len({*ctx.peers, *ctx.members, ctx.node_id}))
    machine = RaincoreMachine(ctx, RaincoreSettings.from_mapping(s))
    reliable = ReliableUnicast(
        ctx.node_id,
        rto=int(s["rto"]),
        max_tries=int(s["max_tries"]),
        storage=dict(ctx.storage),
        rto_max=max(int(s["rto"]), int(s["rto_max"])),
    )
    return Stack(machine, reliable=reliable)


SPEC = register(
    ProtocolSpec(
        "raincore",
        make_raincore,
        settings=SETTINGS,
        doc=__doc__ or "",
        offers_lock=True,
        claims=frozenset(
            {
                "view_agreement",
                "total_order",
                "integrity",
                "fifo",
                "mutual_exclusion",
                "single_token",
                "convergence",
                "leader_agreement",
                "delivery_progress",
            }
        ),
        # one token orders every delivery of a run, whatever its order
        order_scope="run",
        total_orders=None,
        # a node may commit an unchanged membership at a global-view index the others
        # skip, so equal memberships can carry different indexes (docs/protocols)
        converge_on="members",
        trace_kinds=("token", "911", "join", "join_request", "null_commit"),
        timeout="hungry_timeout",
        wire_ids=(0x0100, 0x01FF),
    )
)

__all__ = [
    "MESSAGE_TYPES",
    "ROWS",
    "SETTINGS",
    "SPEC",
    "STATES",
    "TABLE",
    "Msg911",
    "RaincoreMachine",
    "RaincoreSettings",
    "Status",
    "Token",
    "TokenState",
    "ViewState",
    "in_force",
    "make_raincore",
    "mermaid",
]
