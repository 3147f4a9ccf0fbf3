"""How the built-in families' budgets grow with the group (docs/architecture.md, "What
every protocol family must stand").

A count of tries or missed heartbeats whose failure is tried once per member (a token
hop) or once per link (a heartbeat detector) grows by one each time the configured group
doubles beyond :data:`SIZED_FOR`: Raincore's ``tries_per_doubling``, the heartbeat
detector's ``heartbeat_misses_per_doubling`` (GMS and basic) and Tribes'
``drop_beacons_per_doubling``. Groups of up to :data:`SIZED_FOR` keep the configured
numbers, so every bundled scenario and every 3-8 member soak runs as before.
"""

from __future__ import annotations

SIZED_FOR = 8
"""The largest group that keeps the configured counts."""


def doublings(nodes: int) -> int:
    """How many times a group of ``nodes`` doubles :data:`SIZED_FOR`, rounded up:
    ceil(log2(nodes / 8)); 0 up to 8 members, 1 at 9-16, 2 at 17-32, 3 at 33-64."""
    k, size = 0, SIZED_FOR
    while size < nodes:
        k, size = k + 1, 2 * size
    return k
