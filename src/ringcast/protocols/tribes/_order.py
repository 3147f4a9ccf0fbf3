"""The absolute order of members (Tribes' ``AbsoluteOrder``), one total order.

Tribes' ``AbsoluteOrder.comp`` compares members by address bytes, then port, then
unique id, and compared the address bytes as *signed* Java bytes, so 10.0.0.200 sorted
before 10.0.0.1. ringcast's order is documented and total:

1. higher ``priority`` first (the ``priorities`` setting; every member has 0 unless
   listed), then
2. the node id, compared as strings (Unicode code points, which is the unsigned order of
   their UTF-8 bytes).

With no priorities it is the order of the node ids. The first member in this order is
the leader ("coordinator") of any member set; the token visits members in this order.
"""

from __future__ import annotations

from collections.abc import Iterable

from ringcast.core.ids import NodeId, check_node_id


def key(priority: int, node: NodeId) -> tuple[int, NodeId]:
    """Sort key of a member: smaller comes first in the absolute order."""
    return (-priority, node)


def parse_priorities(text: str) -> dict[NodeId, int]:
    """``"A:10, B:5"`` -> ``{"A": 10, "B": 5}``; a ``ValueError`` names a bad entry."""
    out: dict[NodeId, int] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        node, sep, value = item.rpartition(":")
        if not sep:
            raise ValueError(
                f"settings.priorities: entry {item!r} is not node:priority (e.g. 'A:10, B:5')"
            )
        try:
            check_node_id(node)
        except ValueError as e:
            raise ValueError(f"settings.priorities: entry {item!r}: {e}") from None
        try:
            prio = int(value)
        except ValueError:
            raise ValueError(
                f"settings.priorities: entry {item!r}: priority {value!r} is not an integer"
            ) from None
        if node in out:
            raise ValueError(f"settings.priorities: node {node!r} listed twice")
        out[node] = prio
    return out


def ordered(members: Iterable[tuple[int, NodeId]]) -> list[tuple[int, NodeId]]:
    """``(priority, node)`` pairs in absolute order."""
    return sorted(members, key=lambda pm: key(*pm))
