"""Building trace rows from protocol records: column fields and canonical ``detail`` JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ringcast.trace.schema import Row

__all__ = ["RECORD_COLUMNS", "canonical_json", "encode_detail", "host_detail", "make_row"]

RECORD_COLUMNS: tuple[str, ...] = ("msg", "order", "view", "members", "transitional", "size")
"""Record fields with these names fill the trace column of that name, not ``detail``."""


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
    return json.dumps(
        fields,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=_lenient_default,
    )


def canonical_json(value: Any) -> str:
    """``value`` as JSON text that only depends on its content (see :func:`encode_detail`)."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_json_default,
    )


def make_row(
    run: str, node: str, t: int, i: int, kind: str, fields: Mapping[str, Any] | None = None
) -> Row:
    """A :class:`Row` from a protocol record: ``kind`` and its ``fields``.

    Fields named like a trace column (:data:`RECORD_COLUMNS`) fill that column
    (``members`` becomes a list); every other field, including one named like the
    fixed columns (``node``, ``t``, ...), goes to ``detail`` through
    :func:`encode_detail`.
    """
    if not fields:
        return Row(run, node, t, i, kind)
    members = fields.get("members")
    return Row(
        run,
        node,
        t,
        i,
        kind,
        fields.get("msg"),
        fields.get("order"),
        fields.get("view"),
        None if members is None else list(members),
        fields.get("transitional"),
        fields.get("size"),
        encode_detail({k: v for k, v in fields.items() if k not in RECORD_COLUMNS}),
    )


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
