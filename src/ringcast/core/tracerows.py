"""Building trace rows without the trace format's libraries: a host's trace sink and
protocol records split into column fields and canonical ``detail`` JSON.

The effect interpreter writes through :class:`TraceSink`, so it lives in the sans-IO core,
which imports nothing of Arrow; :mod:`ringcast.trace.rows` re-exports it beside
:func:`~ringcast.trace.rows.make_row`, which builds a :class:`~ringcast.trace.schema.Row`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "RECORD_COLUMNS",
    "TraceSink",
    "canonical_json",
    "encode_detail",
    "host_detail",
    "record_columns",
]

RECORD_COLUMNS: tuple[str, ...] = ("msg", "order", "view", "members", "transitional", "size")
"""Record fields with these names fill the trace column of that name, not ``detail``.
(A field named ``network`` stays in ``detail``: that column is the host's, the network
a packet travelled on.)"""

_COLUMN_NAMES = frozenset(RECORD_COLUMNS)


class TraceSink:
    """One node's trace rows: the one place a host's trace row is spelled.

    :meth:`add` takes the event columns (``t``, ``kind`` and, by name or in order,
    ``msg`` .. ``network``), supplies ``run``, ``node`` and ``i``, and appends the row
    (a plain tuple in the trace schema's column order, :class:`ringcast.trace.schema.Row`'s) to
    :attr:`rows`, a list the owner reads and may swap for an empty one. The effect
    interpreter writes through it, and so do the hosts for their own rows: the
    simulator's recorder (all nodes of a run share one list, so rows stay in event
    order) and the runtime's rotating trace log.

    ``index`` gives each row's ``i`` (a counter; the runtime's survives restarts);
    ``shift`` is added to the host's time ``t`` (the runtime moves its monotonic clock
    onto the run's wall-clock axis); ``on_full`` is called once :attr:`rows` holds
    ``limit`` rows.
    """

    __slots__ = ("index", "limit", "node", "on_full", "rows", "run", "shift")

    def __init__(
        self,
        run: str,
        node: str,
        rows: list[tuple[Any, ...]] | None = None,
        *,
        index: Callable[[], int],
        shift: int = 0,
        limit: int = sys.maxsize,
        on_full: Callable[[], None] | None = None,
    ):
        self.run = run
        self.node = node
        self.rows: list[tuple[Any, ...]] = [] if rows is None else rows
        self.index = index
        self.shift = shift
        self.limit = limit
        self.on_full = on_full

    def add(
        self,
        t: int,
        kind: str,
        msg: str | None = None,
        order: str | None = None,
        view: str | None = None,
        members: list[str] | None = None,
        transitional: bool | None = None,
        size: int | None = None,
        detail: str | None = None,
        network: int | None = None,
    ) -> None:
        """One row: ``t`` the host's time of the event, ``detail`` JSON text (or None),
        ``network`` the network a packet travelled on (None for other events)."""
        rows = self.rows
        rows.append(
            (
                self.run,
                self.node,
                t + self.shift,
                self.index(),
                kind,
                msg,
                order,
                view,
                members,
                transitional,
                size,
                detail,
                network,
            )
        )
        if self.on_full is not None and len(rows) >= self.limit:
            self.on_full()


def encode_detail(fields: Mapping[str, Any] | None) -> str | None:
    """The canonical JSON text of ``fields`` for the ``detail`` column, or None if empty.

    Keys are sorted and separators compact (``","`` and ``":"``), non-ASCII text is
    kept as is, so equal mappings always give the same string. Tuples become
    lists and sets become sorted lists. Raises :class:`TypeError` for a value JSON
    cannot hold and :class:`ValueError` for NaN or an infinity.
    """
    if not fields:
        return None
    return canonical_json(fields)


def host_detail(fields: Mapping[str, Any] | None) -> str | None:
    """Like :func:`encode_detail`, but never raises: what the hosts use for the trace.

    A host must not crash on what a protocol records, so a value JSON cannot hold is
    written as text (bytes as hex), and NaN or an infinity as JSON's extended literals.
    """
    if not fields:
        return None
    return _HOST_JSON.encode(fields)


def canonical_json(value: Any) -> str:
    """``value`` as JSON text that only depends on its content (see :func:`encode_detail`)."""
    return _CANONICAL_JSON.encode(value)


def record_columns(
    fields: Mapping[str, Any],
    encode: Callable[[Mapping[str, Any] | None], str | None] = host_detail,
) -> tuple[dict[str, Any], str | None]:
    """A protocol record's ``fields`` split into trace columns and the ``detail`` JSON.

    Fields named like a column (:data:`RECORD_COLUMNS`) fill it (``members`` as a list
    of strings, ``view`` as a string); every other field, including one named like the
    fixed columns (``node``, ``t``, ...), goes to ``detail`` through ``encode``
    (:func:`host_detail`, which never raises, for the hosts; :func:`encode_detail`,
    which refuses what JSON cannot hold, for :func:`ringcast.trace.rows.make_row`).
    """
    if _COLUMN_NAMES.isdisjoint(fields):  # the common case: every field is detail
        return {}, encode(fields)
    cols = {k: fields[k] for k in RECORD_COLUMNS if k in fields}
    rest = {k: v for k, v in fields.items() if k not in cols}
    members = cols.get("members")
    if members is not None:
        cols["members"] = [str(m) for m in members]
    view = cols.get("view")
    if view is not None:
        cols["view"] = str(view)
    return cols, encode(rest)


def _lenient_default(value: object) -> object:
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _json_default(value: object) -> object:
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"detail value {value!r} of type {type(value).__name__} is not JSON data")


# The two encoders, built once: ``json.dumps`` with these options builds a new encoder
# at every call, and the hosts encode a detail for many trace rows.
_HOST_JSON = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_lenient_default
)
_CANONICAL_JSON = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
    default=_json_default,
)
