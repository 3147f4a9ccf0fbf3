"""Deliberately buggy protocols for the lab's tests; a sweep must catch each.

* ``arrival`` claims total order but is the ``basic`` fan-out, which delivers in
  arrival order;
* ``totem_no_rtr`` is Totem with a bug switched on: no node ever answers a
  retransmission request, so a lost frame is never recovered.
"""

from __future__ import annotations

from ringcast.lab.properties import claim, claims
from ringcast.protocols import registry

NAME = "arrival"


def register_arrival() -> None:
    """Register the protocol (idempotent: called in every Spark task and the driver)."""
    if NAME in registry.names():
        return
    basic = registry.get("basic")
    registry.register(
        registry.ProtocolSpec(
            NAME,
            basic.factory,
            settings=dict(basic.settings),
            doc="basic fan-out claiming total order (a planted bug)",
        )
    )


def claim_total_order() -> None:
    claim(NAME, {"total_order", "integrity", "fifo"})


SCENARIO = """
name = "arrival_burst"
protocol = "arrival"
nodes = ["A", "B", "C", "D"]
duration = "1s"

[network]
latency = { dist = "normal", mean = "1ms", stddev = "400us", floor = "100us" }

[[workload]]
nodes = "all"
rate = 200
size = 20
order = "agreed"
start = "100ms"
duration = "700ms"
"""


TOTEM_NO_RTR = "totem_no_rtr"


def register_totem_no_rtr() -> None:
    """Register Totem with a bug switched on: no node ever answers a retransmission
    request (the token's ``rtr`` list is dropped on arrival, so nothing is rebroadcast
    and no request travels on). Idempotent, like :func:`register_arrival`."""
    if TOTEM_NO_RTR in registry.names():
        return
    import dataclasses

    from ringcast.protocols.totem import SPEC, TotemMachine

    class NoRtrTotem(TotemMachine):
        def _process_token(self, tok, log, recovering, out):  # type: ignore[no-untyped-def]
            return super()._process_token(dataclasses.replace(tok, rtr=()), log, recovering, out)

    def factory(ctx):  # type: ignore[no-untyped-def]
        settings = SPEC.resolve_settings(ctx.settings) if ctx.settings is not None else {}
        return NoRtrTotem(ctx, settings)

    registry.register(
        registry.ProtocolSpec(
            TOTEM_NO_RTR,
            factory,
            settings=dict(SPEC.settings),
            doc="Totem never answering rtr",
            timeout=SPEC.timeout,  # convergence's bound is stated in it
        )
    )


def claim_totem_properties() -> None:
    claim(TOTEM_NO_RTR, claims("totem"))


TRIBES_LAZY = "tribes_lazy"


def register_tribes_lazy() -> None:
    """Register Tribes with one step broken: a node that already has a view and cannot
    improve a token (its merge adds nobody) and is not its leader never forwards it (a
    plausible "nothing new for me" shortcut). The first view still forms, but after a
    member is lost the token dies at the first node that agrees with it, the election
    never ends and the survivors stay on the view with the dead member. Idempotent,
    like :func:`register_arrival`."""
    if TRIBES_LAZY in registry.names():
        return
    from ringcast.core.effects import Send
    from ringcast.layers import ReliableUnicast, Stack
    from ringcast.protocols.tribes import SPEC, CoordRequest, TribesMachine, TribesSettings

    class LazyTribes(TribesMachine):
        def _handleOtherToken(self, now, tok, sender):  # type: ignore[no-untyped-def]
            out = super()._handleOtherToken(now, tok, sender)
            sent = self.last_token
            if (
                sent is not None
                and self.view_id is not None
                and sent.leader != self.node_id
                and [m.node for m in sent.members] == [m.node for m in tok.members]
            ):
                out = [e for e in out if not (type(e) is Send and type(e.msg) is CoordRequest)]
            return out

    def factory(ctx):  # type: ignore[no-untyped-def]
        s = SPEC.resolve_settings(ctx.settings)
        reliable = ReliableUnicast(
            ctx.node_id, rto=s["rto"], max_tries=s["max_tries"], storage=dict(ctx.storage)
        )
        return Stack(LazyTribes(ctx, TribesSettings.from_mapping(s)), reliable=reliable)

    registry.register(
        registry.ProtocolSpec(
            TRIBES_LAZY,
            factory,
            settings=dict(SPEC.settings),
            doc="Tribes never forwarding a token it cannot improve",
            claims=SPEC.claims,
            timeout=SPEC.timeout,  # convergence's bound is stated in it
            converge_on=SPEC.converge_on,
            order_scope=SPEC.order_scope,
            total_orders=SPEC.total_orders,
            trace_kinds=SPEC.trace_kinds,
        )
    )


GMS_NO_STATUS = "gms_no_status"


def register_gms_no_status() -> None:
    """Register GMS with a bug switched on: no member ever answers STATUS_VIEW, so a
    participant that prepared a view and missed its COMMIT_VIEW (JGRP-136, case C in
    two_phase) waits for ever. Idempotent, like :func:`register_arrival`."""
    if GMS_NO_STATUS in registry.names():
        return
    from ringcast.layers import HeartbeatDetector, Stack
    from ringcast.protocols.gms import SPEC, GmsMachine

    class NoStatusGms(GmsMachine):
        def _on_status_view(self, now, src, msg):  # type: ignore[no-untyped-def]
            return []

    def factory(ctx):  # type: ignore[no-untyped-def]
        s = SPEC.resolve_settings(ctx.settings)
        return Stack(
            NoStatusGms(ctx, s),
            detector=HeartbeatDetector(
                ctx.node_id,
                ctx.peers,
                interval=s["heartbeat_interval"],
                misses=s["heartbeat_misses"],
            ),
        )

    registry.register(
        registry.ProtocolSpec(
            GMS_NO_STATUS,
            factory,
            settings=dict(SPEC.settings),
            doc="GMS never answering STATUS_VIEW",
            claims=SPEC.claims,
            timeout=SPEC.timeout,  # convergence's bound is stated in it
            order_scope=SPEC.order_scope,
            total_orders=SPEC.total_orders,
            trace_kinds=SPEC.trace_kinds,
        )
    )


GMS_FIRST_COORD = "gms_first_coord"


def register_gms_first_coord() -> None:
    """Register GMS with a merge bug switched on: the merge leader casts its merge view
    as soon as the first subgroup coordinator answers its MERGE_REQ, with that
    coordinator's subgroup only (every other subgroup it asked stays out). A merge that
    is not all or nothing: ``merge_atomicity`` must catch it. Idempotent, like
    :func:`register_arrival`."""
    if GMS_FIRST_COORD in registry.names():
        return
    from ringcast.layers import HeartbeatDetector, Stack
    from ringcast.protocols.gms import SPEC, GmsMachine

    class FirstCoordGms(GmsMachine):
        def _on_merge_rsp(self, now, src, msg):  # type: ignore[no-untyped-def]
            mg = self.merge
            if mg is not None and msg.merge_id == mg.merge_id and not msg.refused:
                mg.waiting &= {src}
            return super()._on_merge_rsp(now, src, msg)

    def factory(ctx):  # type: ignore[no-untyped-def]
        s = SPEC.resolve_settings(ctx.settings)
        return Stack(
            FirstCoordGms(ctx, s),
            detector=HeartbeatDetector.from_settings(ctx.node_id, ctx.peers, s),
        )

    registry.register(
        registry.ProtocolSpec(
            GMS_FIRST_COORD,
            factory,
            settings=dict(SPEC.settings),
            doc="GMS merging the first subgroup coordinator that answers, alone",
            claims=SPEC.claims,
            order_scope=SPEC.order_scope,
            total_orders=SPEC.total_orders,
            trace_kinds=SPEC.trace_kinds,
            timeout=SPEC.timeout,
        )
    )
