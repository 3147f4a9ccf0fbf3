"""A group on a lossy network, the scenario the scale tests of every family run."""

from __future__ import annotations

from typing import Any

from ringcast.sim import SimResult, Simulation, parse_scenario

LATENCY = {"dist": "uniform", "low": "0.3ms", "high": "1.5ms"}


def lossy_group(
    protocol: str,
    nodes: list[str],
    loss: float,
    duration: str,
    seed: int = 1,
    **extra: Any,
) -> SimResult:
    """Run ``nodes`` of ``protocol`` for ``duration`` on a network of 0.3-1.5 ms latency
    that loses ``loss`` of its packets; ``extra`` adds scenario keys (``settings``,
    ``nemesis``, ``workload``)."""
    doc = {
        "name": f"{protocol}_{len(nodes)}_at_{loss:.0%}",
        "protocol": protocol,
        "nodes": nodes,
        "duration": duration,
        "network": {"latency": LATENCY, "loss": loss},
        **extra,
    }
    return Simulation(parse_scenario(doc), seed).run()
