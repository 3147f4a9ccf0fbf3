"""Totem single-ring protocol: total order, agreed and safe delivery, membership, recovery
with extended virtual synchrony, flow control (seeds 001 and 002).

See ``docs/protocols/totem.md`` for how the Totem paper maps to code and every default.
"""

from __future__ import annotations

from ringcast.core.machine import Machine, MachineContext
from ringcast.layers import Stack
from ringcast.protocols.registry import ProtocolSpec, Setting, register
from ringcast.protocols.totem._messages import MESSAGE_TYPES
from ringcast.protocols.totem._state import ROWS, State, render_mermaid
from ringcast.protocols.totem.machine import TotemMachine
from ringcast.protocols.totem.rrp import MODES, RedundantRing, RrpSettings

SETTINGS: dict[str, Setting] = {
    "token_timeout": Setting("duration", 200_000_000, "token loss timeout", 1),
    "token_per_member": Setting(
        "duration",
        20_000_000,
        "the token timeout in force is at least this per configured node (a rotation's "
        "hops; 0: token_timeout alone)",
        0,
    ),
    "token_retransmit_timeout": Setting(
        "duration", 10_000_000, "resend the token when the next node shows no sign of it", 1
    ),
    "token_hold": Setting("duration", 2_000_000, "hold an idle token this long", 1),
    "join_timeout": Setting("duration", 20_000_000, "rebroadcast interval of join messages", 1),
    "consensus_timeout": Setting("duration", 240_000_000, "time allowed to reach consensus", 1),
    "join_silence_const": Setting(
        "int", 0, "Gather: fail a last-ring member silent this many join timeouts (0: off)", 0
    ),
    "fail_unanswered": Setting(
        "bool",
        True,
        "answer retransmitted tokens; in Gather, fail at once the next node if the token "
        "passed to it went unanswered for half the token timeout",
    ),
    "merge_detect_timeout": Setting(
        "duration", 200_000_000, "interval of the representative's merge-detect message", 1
    ),
    "fail_to_recv_const": Setting("int", 50, "token visits with a stuck aru before failing", 1),
    "seqno_unchanged_const": Setting("int", 30, "idle visits before the token is held", 1),
    "window_size": Setting("int", 50, "frames broadcast per rotation, all members", 1),
    "max_messages": Setting("int", 17, "frames one node broadcasts per token visit", 1),
    "frame_size": Setting(
        "int",
        1400,
        "bytes of an encoded frame (its headers and the messages packed into it); with the "
        "runtime's envelope and IP/UDP headers the default stays within a 1500-byte MTU",
        64,
    ),
    "max_pending": Setting("int", 256, "pending submits before Backpressure(True)", 2),
    # The redundant ring (docs/protocols/totem-rrp.md); corosync 2's names and defaults.
    "rrp_mode": Setting("str", "none", f"redundant ring: {', '.join(MODES)}"),
    "rrp_copies": Setting("int", 2, "active_passive: networks each packet goes on (K)", 2),
    "rrp_token_expired_timeout": Setting(
        "duration", 0, "active: wait for a token's copy on each network (0: retransmit)", 0
    ),
    "rrp_problem_count_threshold": Setting(
        "int", 10, "active: missed token copies / passive: tokens behind, to be faulty", 1
    ),
    "rrp_problem_count_mcast_threshold": Setting(
        "int", 100, "passive: frames behind the best network to be faulty", 1
    ),
    "rrp_problem_count_timeout": Setting(
        "duration", 2_000_000_000, "active: a problem count decays by one this often", 1
    ),
    "rrp_autorecovery_check_timeout": Setting(
        "duration", 1_000_000_000, "probe a faulty network this often", 1
    ),
    "rrp_readmit_probes": Setting(
        "int", 10, "probes a round that must all go round the ring to re-admit a network", 1
    ),
    "rrp_token_turns": Setting(
        "int", 1, "passive: faulty after no token in this many round-robin turns (0: off)", 0
    ),
    "rrp_silence_timeout": Setting(
        "duration", 250_000_000, "faulty: silent this long while others carry 100+ packets", 0
    ),
    "rrp_flap_window": Setting(
        "duration",
        10_000_000_000,
        "faulty again this soon after re-admission: back off (rounds 2x apart, 2x probes)",
        0,
    ),
}


def _factory(ctx: MachineContext) -> Machine:
    resolved = SPEC.resolve_settings(ctx.settings or {})
    rrp = RrpSettings(resolved, ctx.networks)
    # A context without settings leaves the machine to its own defaults, as it always has.
    machine = TotemMachine(ctx, resolved if ctx.settings is not None else {})
    if rrp.mode == "none":
        return machine  # the single ring alone: its traces as they always were
    layer = RedundantRing(ctx.node_id, ctx.networks, rrp, epoch=ctx.seed, peers=ctx.peers)
    return Stack(machine, layer)


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
                "delivery_progress",
            }
        ),
        # extended virtual synchrony: total order among deliveries of one configuration
        order_scope="view",
        trace_kinds=("token", "retransmit", "silent", "unanswered"),
        timeout="token_timeout",
        wire_ids=(0x0200, 0x02FF),  # and the redundant ring's 0x0501-0x0502
        networks=None,  # the redundant ring uses any number (rrp_mode)
    )
)

__all__ = [
    "MESSAGE_TYPES",
    "ROWS",
    "SETTINGS",
    "SPEC",
    "RedundantRing",
    "State",
    "TotemMachine",
    "render_mermaid",
]
