"""Totem single-ring protocol: total order, agreed and safe delivery, membership, recovery
with extended virtual synchrony, flow control (seeds 001 and 002).

See ``docs/protocols/totem.md`` for how the seed maps to code and every default.
"""

from __future__ import annotations

from ringcast.core.machine import MachineContext
from ringcast.protocols.registry import ProtocolSpec, Setting, register
from ringcast.protocols.totem._messages import MESSAGE_TYPES
from ringcast.protocols.totem._state import TRANSITIONS, State, render_mermaid
from ringcast.protocols.totem.machine import TotemMachine

SETTINGS: dict[str, Setting] = {
    "token_timeout": Setting("duration", 200_000_000, "token loss timeout", 1),
    "token_retransmit_timeout": Setting(
        "duration", 10_000_000, "resend the token when the next node shows no sign of it", 1
    ),
    "token_hold": Setting("duration", 2_000_000, "hold an idle token this long", 1),
    "join_timeout": Setting("duration", 20_000_000, "rebroadcast interval of join messages", 1),
    "consensus_timeout": Setting("duration", 240_000_000, "time allowed to reach consensus", 1),
    "merge_detect_timeout": Setting(
        "duration", 200_000_000, "interval of the representative's merge-detect message", 1
    ),
    "fail_to_recv_const": Setting("int", 50, "token visits with a stuck aru before failing", 1),
    "seqno_unchanged_const": Setting("int", 30, "idle visits before the token is held", 1),
    "window_size": Setting("int", 50, "frames broadcast per rotation, all members", 1),
    "max_messages": Setting("int", 17, "frames one node broadcasts per token visit", 1),
    "frame_size": Setting("int", 1400, "bytes of messages packed into one frame", 64),
    "max_pending": Setting("int", 256, "pending submits before Backpressure(True)", 2),
}


def _factory(ctx: MachineContext) -> TotemMachine:
    settings = SPEC.resolve_settings(ctx.settings) if ctx.settings is not None else {}
    return TotemMachine(ctx, settings)


SPEC = register(
    ProtocolSpec(
        "totem",
        _factory,
        settings=SETTINGS,
        doc="Totem single ring: token-ordered agreed/safe multicast, extended virtual synchrony",
        claims=frozenset(
            {
                "view_agreement",
                "total_order",
                "integrity",
                "fifo",
                "virtual_synchrony",
                "safe_delivery",
                "convergence",
                "leader_agreement",
            }
        ),
        # extended virtual synchrony: total order among deliveries of one configuration
        order_scope="view",
        trace_kinds=("token", "retransmit"),
        timeout="token_timeout",
        wire_ids=(0x0200, 0x02FF),
    )
)

__all__ = [
    "MESSAGE_TYPES",
    "SETTINGS",
    "SPEC",
    "TRANSITIONS",
    "State",
    "TotemMachine",
    "render_mermaid",
]
