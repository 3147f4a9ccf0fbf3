"""Building trace rows: a host's trace sink, protocol records split into column fields
and canonical ``detail`` JSON (:mod:`ringcast.core.tracerows`, which the sans-IO core
uses without Arrow), and :func:`make_row`, a :class:`~ringcast.trace.schema.Row` from a
protocol record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ringcast.core.tracerows import (
    RECORD_COLUMNS,
    TraceSink,
    canonical_json,
    encode_detail,
    host_detail,
    record_columns,
)
from ringcast.trace.schema import Row

__all__ = [
    "RECORD_COLUMNS",
    "TraceSink",
    "canonical_json",
    "encode_detail",
    "host_detail",
    "make_row",
    "record_columns",
]


def make_row(
    run: str, node: str, t: int, i: int, kind: str, fields: Mapping[str, Any] | None = None
) -> Row:
    """A :class:`Row` from a protocol record: ``kind`` and its ``fields``, split as the
    hosts split a ``Record`` (:func:`record_columns`), ``detail`` through
    :func:`encode_detail`."""
    if not fields:
        return Row(run, node, t, i, kind)
    cols, detail = record_columns(fields, encode_detail)
    return Row(run, node, t, i, kind, detail=detail, **cols)
