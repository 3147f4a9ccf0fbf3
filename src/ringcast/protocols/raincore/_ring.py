"""Nodelist arithmetic shared by the token and the 911 message, and the primary
component rule (a decision where the Raincore paper is silent: see docs/protocols/raincore.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ringcast.core.ids import NodeId


def next_after(nodelist: Sequence[NodeId], node: NodeId) -> NodeId:
    """The node after ``node`` in the cyclic ``nodelist`` (``node`` itself if alone)."""
    i = nodelist.index(node)
    return nodelist[(i + 1) % len(nodelist)]


def without(nodelist: Sequence[NodeId], gone: NodeId) -> tuple[NodeId, ...]:
    return tuple(n for n in nodelist if n != gone)


def insert_after(
    nodelist: Sequence[NodeId], node: NodeId, new: Iterable[NodeId]
) -> tuple[NodeId, ...]:
    """``nodelist`` with ``new`` nodes (not yet on it) right after ``node``: the token
    then goes to the new node next ("It then sends the token to the new node")."""
    add = [n for n in dict.fromkeys(new) if n not in nodelist]
    i = nodelist.index(node) + 1
    return (*nodelist[:i], *add, *nodelist[i:])


def route_from(view: Sequence[NodeId], node: NodeId) -> tuple[NodeId, ...]:
    """``view`` as a ring starting at ``node`` (``node`` put first if it is not in it)."""
    if node not in view:
        return (node, *view)
    i = list(view).index(node)
    return (*view[i:], *view[:i])


def has_quorum(nodes: Iterable[NodeId], base: Sequence[NodeId]) -> bool:
    """A strict majority of ``base``, or exactly half of it including its first member.

    Any two sets that pass against the same ``base`` share a node (two disjoint
    halves cannot both hold ``base[0]``). The machine passes the universe, sorted, as
    ``base`` (decision 1). An empty ``base`` imposes nothing.
    """
    if not base:
        return True
    present = set(nodes) & set(base)
    twice = 2 * len(present)
    return twice > len(base) or (twice == len(base) and base[0] in present)
