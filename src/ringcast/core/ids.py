"""Node ids and views (configurations).

A node id is a short printable string ("A", "n3", "db-1"). Ids are totally ordered by
plain string comparison; protocols that need "the smallest id" or "a higher node id"
(Totem's representative, Raincore's 911 veto tie-break) use that order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

NodeId = str

MAX_NODE_ID_BYTES = 64


def check_node_id(node: object) -> NodeId:
    """Return ``node`` if it is a valid node id, else raise ``ValueError`` naming the problem."""
    if not isinstance(node, str):
        raise ValueError(f"node id must be a string, got {type(node).__name__} {node!r}")
    _check_str_id(node)
    return node


@functools.lru_cache(maxsize=4096)
def _check_str_id(node: str) -> None:
    """The checks of a string id, remembered for the ids found valid (a failed check
    raises and is not cached): every received frame names a few ids of one cluster."""
    if not node:
        raise ValueError("node id must not be empty")
    if len(node.encode()) > MAX_NODE_ID_BYTES:
        raise ValueError(f"node id {node!r} is longer than {MAX_NODE_ID_BYTES} bytes")
    if not node.isprintable() or any(c.isspace() for c in node):
        raise ValueError(f"node id {node!r} must be printable and contain no whitespace")


@dataclass(frozen=True, slots=True)
class View:
    """A configuration: its id (protocol-specific, as a string) and its ordered members.

    ``transitional`` marks a Totem transitional configuration (extended virtual synchrony).
    """

    view_id: str
    members: tuple[NodeId, ...]
    transitional: bool = False

    def __contains__(self, node: object) -> bool:
        return node in self.members

    @property
    def leader(self) -> NodeId | None:
        """The configuration's leader for a protocol that elects none of its own: its
        first member. Every node that installs the view has the same member list, so
        every one of them names the same leader; None for an empty view."""
        return self.members[0] if self.members else None
