"""A deliberately buggy protocol for the lab's tests: ``arrival`` claims total order but
is the ``basic`` fan-out, which delivers in arrival order. A sweep must catch it."""

from __future__ import annotations

from ringcast.lab.properties import claim
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
