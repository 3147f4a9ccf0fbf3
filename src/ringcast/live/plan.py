"""What a scenario asks of a live run, checked before the run starts.

The live nemesis applies a fault with the real thing or not at all: every scenario
feature it cannot apply is refused here, with a one-line error naming the key, before a
namespace is made (see ``docs/live.md`` for the mapping).
"""

from __future__ import annotations

from ringcast.live.tools import LiveError
from ringcast.sim.scenario import MAX_DATAGRAM, Scenario

LIVE_ACTIONS = (
    "crash",
    "restart",
    "pause",
    "resume",
    "partition",
    "heal",
    "cut",
    "link_down",
    "link_up",
    "join",
    "leave",
)
"""The nemesis actions a live run applies; the others (``garble``, ``ungarble``) are
refused."""


def check_live(sc: Scenario, *, real_latency: bool, netem: bool) -> None:
    """Raise :class:`LiveError` for the first feature of ``sc`` a live run cannot apply.

    ``real_latency``: the caller accepts the bridges' own latency in place of the
    scenario's latency model; ``netem``: whether this kernel has tc's netem.
    """
    src = sc.source
    why_netem = (
        "this kernel has no tc netem"
        if not netem
        else "the live nemesis does not drive tc netem yet"
    )
    net = sc.network
    if net.reorder:
        raise LiveError(
            f"{src}: network.reorder: a live run cannot hold a message back to reorder it "
            f"({why_netem})"
        )
    if net.corrupt:
        raise LiveError(
            f"{src}: network.corrupt: a live run cannot flip bits in flight (the simulator can)"
        )
    if net.drops:
        raise LiveError(
            f"{src}: network.drop: a live run cannot drop the nth message of a class "
            "(frames are sealed; the simulator can)"
        )
    if net.max_datagram != MAX_DATAGRAM:
        raise LiveError(
            f"{src}: network.max_datagram: a live run has the kernel's UDP limit, not "
            f"{net.max_datagram}"
        )
    if not real_latency:
        raise LiveError(
            f"{src}: network.latency: a live run cannot add delay ({why_netem}); pass "
            "--real-latency to run on the bridges' own latency instead"
        )
    for i, link in enumerate(net.links):
        where = f"{src}: network.links[{i}]"
        if link.match is not None:
            raise LiveError(
                f"{where}.match: a live run cannot tell message classes apart on the "
                "wire (frames are sealed; the simulator can)"
            )
        if link.latency is not None and not real_latency:
            raise LiveError(f"{where}.latency: a live run cannot add delay ({why_netem})")
    for i, wl in enumerate(sc.workloads):
        if wl.kind == "lock" and wl.rate == 0:
            raise LiveError(f"{src}: workload[{i}].rate: a lock workload needs a rate > 0")
    for a in sc.nemesis:
        where = f"{src}: nemesis ({a.action} at {a.at / 1e9:g}s)"
        if a.action not in LIVE_ACTIONS:
            raise LiveError(
                f"{where}: a live run cannot apply {a.action!r} (the runtime's nodes "
                "send only what they mean to; the simulator can)"
            )
