"""View ids and views as GMS sees them (JGroups' ``ViewId`` and ``View``).

A view id is ``(creator, counter)``, written ``"A:3"``; the creator is the coordinator
that cast the view (a leaving coordinator creates its successor's first view), the
view's coordinator is its first member. Ids are ordered as JGroups
orders them: by counter first, then by the coordinator's id, so every node ranks two
views alike. A merge view's counter is one more than the largest counter of the views
it merges, so it is greater than every subgroup's view.
"""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.ids import check_node_id

MAX_MEMBERS = 4096


class BadField(ValueError):
    """A field of a received message is malformed (the message is dropped and counted)."""


@dataclass(frozen=True, slots=True, order=False)
class GView:
    """A view: its id ``(coord, counter)`` (``coord`` is the member that created it) and
    its ordered members; the view's coordinator is its first member."""

    coord: str
    counter: int
    members: tuple[str, ...]

    @property
    def view_id(self) -> str:
        return format_id(self.coord, self.counter)

    @property
    def key(self) -> tuple[int, str]:
        return (self.counter, self.coord)

    def __contains__(self, node: object) -> bool:
        return node in self.members


def format_id(coord: str, counter: int) -> str:
    return f"{coord}:{counter}"


def parse_id(view_id: object) -> tuple[str, int]:
    """``"A:3"`` -> ``("A", 3)``; :class:`BadField` for anything else."""
    if not isinstance(view_id, str) or ":" not in view_id:
        raise BadField(f"view id {view_id!r} is not 'coord:counter'")
    coord, _, num = view_id.rpartition(":")
    if not num.isdigit() or len(num) > 18:
        raise BadField(f"view id {view_id!r} has no counter")
    try:
        check_node_id(coord)
    except ValueError as e:
        raise BadField(f"view id {view_id!r}: {e}") from None
    return coord, int(num)


def id_key(view_id: str) -> tuple[int, str]:
    coord, counter = parse_id(view_id)
    return (counter, coord)


def parse_view(view_id: object, members: object) -> GView:
    """A view from a message's fields, validated: the id parses and the members are
    distinct node ids. The id names the view's *creator* (JGroups' ViewId): a leaving
    coordinator creates the view its successor coordinates."""
    coord, counter = parse_id(view_id)
    if not isinstance(members, tuple) or not members or len(members) > MAX_MEMBERS:
        raise BadField(f"view {view_id}: members must be a non-empty list")
    for m in members:
        try:
            check_node_id(m)
        except ValueError as e:
            raise BadField(f"view {view_id}: {e}") from None
    if len(set(members)) != len(members):
        raise BadField(f"view {view_id}: a member is listed twice")
    return GView(coord, counter, members)
