"""A scenario's latency as tc ``netem`` queueing disciplines, where the kernel has netem.

netem (tc-netem(8)) delays what leaves an interface. On a lab's switch-side veth port
``p<k>n<net>``, what leaves is what node k receives on that network, so one netem a port
gives each *receiver* its latency: the scenario's latency model is expressible this way
when every sender's link to a receiver has the same distribution (no
``[[network.links]]`` latency that differs by sender) and the distribution is one netem
draws: ``constant`` (``delay D``), ``uniform`` (``delay mid jitter half``: netem's jitter
without a distribution table is uniform) and ``normal`` with no floor (``delay mean
stddev distribution normal``). netem's own ``reorder`` does not match the simulator's
(netem sends a share of packets *without* the delay; the simulator holds a share back
*longer*), so a scenario with ``reorder``, or an exponential latency, or a per-sender
latency, goes through the delay box (:mod:`ringcast.live.delaybox`) even on a kernel
with netem.

This path is used only where :func:`ringcast.live.tools.has_netem` finds netem; the
machine the project is developed on has none, so it is exercised by its unit tests (the
command lines) only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ringcast.live.delaybox import link_models
from ringcast.sim.latency import Latency
from ringcast.sim.scenario import NetworkModel


def _us(ns: int) -> str:
    return f"{round(ns / 1000)}us"


def netem_delay(lat: Latency) -> list[str] | None:
    """netem's arguments for ``lat`` (``[]``: no delay), or None if netem cannot draw it."""
    if lat.dist == "constant":
        return ["delay", _us(lat.value)] if lat.value > 0 else []
    if lat.dist == "uniform":
        mid, half = (lat.low + lat.high) // 2, (lat.high - lat.low) // 2
        return ["delay", _us(mid), _us(half)] if half else ["delay", _us(mid)]
    if lat.dist == "normal" and lat.floor == 0:
        return ["delay", _us(lat.mean), _us(lat.stddev), "distribution", "normal"]
    return None


def netem_plan(
    model: NetworkModel, nodes: Sequence[str], *, real_latency: bool = False
) -> dict[str, list[str]] | None:
    """netem's arguments for each receiver (absent: nothing to apply), or None when the
    scenario needs the delay box (see the module's docstring)."""
    if model.reorder:
        return None
    links = link_models(model, nodes, real_latency=real_latency)
    out = {}
    for dst in nodes:
        lats = {links[(src, dst)].latency for src in nodes if src != dst}
        if len(lats) > 1:
            return None
        if not lats:
            continue
        args = netem_delay(lats.pop())
        if args is None:
            return None
        if args:
            out[dst] = args
    return out


def netem_commands(
    tc: str,
    switch: str,
    plan: Mapping[str, Sequence[str]],
    ports: Mapping[str, Sequence[str]],
) -> list[list[str]]:
    """The ``tc`` command lines that put ``plan`` on the switch's ports (``ports[n][k]``:
    node n's port on network k): a root netem on each receiver's port of every network."""
    cmds = []
    for dst, args in plan.items():
        for port in ports[dst]:
            cmds.append([tc, "-n", switch, "qdisc", "add", "dev", port, "root", "netem", *args])
    return cmds
