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


def check_live(sc: Scenario, *, real_latency: bool = False, netem: bool = False) -> None:
    """Raise :class:`LiveError` for the first feature of ``sc`` a live run cannot apply.

    Latency and reordering are always applied (by tc netem where the kernel has it and
    netem can draw the scenario's model, by the delay box, :mod:`ringcast.live.delaybox`,
    otherwise), so neither ``real_latency`` (the bridges' own latency in place of the
    scenario's model) nor ``netem`` (whether this kernel has it) refuses anything; they
    are kept for the callers that state them.
    """
    del real_latency, netem
    src = sc.source
    net = sc.network
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
    for i, link in enumerate(net.links):
        where = f"{src}: network.links[{i}]"
        if link.match is not None:
            raise LiveError(
                f"{where}.match: a live run cannot tell message classes apart on the "
                "wire (frames are sealed; the simulator can)"
            )
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
