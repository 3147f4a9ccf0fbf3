"""The trace schema: one Arrow schema for simulated and real runs.

Every trace event is one row with the columns of :data:`SCHEMA`, in that order. The
meaning of each column, the ``kind`` values and what ``detail`` holds are described in
``docs/trace-schema.md``.
"""

from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa

__all__ = [
    "ADDED_COLUMNS",
    "COLUMNS",
    "NON_NULL",
    "NULLABLE",
    "PROTOCOL_KEY",
    "REQUIRED",
    "SCHEMA",
    "TRACE_VERSION",
    "VERSION_KEY",
    "Row",
]

SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("run", pa.string(), nullable=False),
        pa.field("node", pa.string(), nullable=False),
        pa.field("t", pa.int64(), nullable=False),
        pa.field("i", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("msg", pa.string()),
        pa.field("order", pa.string()),
        pa.field("view", pa.string()),
        pa.field("members", pa.list_(pa.string())),
        pa.field("transitional", pa.bool_()),
        pa.field("size", pa.int32()),
        pa.field("detail", pa.string()),
        pa.field("network", pa.int32()),
    ]
)
"""The trace columns, names, types and order. ``run``..``kind`` never hold nulls."""

TRACE_VERSION = 2
"""The version of the trace format the writers write. 1: the twelve columns ``run`` ..
``detail``; 2: ``network`` added (the network a packet travelled on)."""

ADDED_COLUMNS: dict[str, int] = {"network": 2}
"""Columns added after version 1, with the version that added them. A trace of an
earlier version lacks them; it is read with the column null in every row."""

COLUMNS: tuple[str, ...] = tuple(SCHEMA.names)
"""The column names in schema order."""

REQUIRED: tuple[str, ...] = tuple(c for c in COLUMNS if c not in ADDED_COLUMNS)
"""The columns a reader insists on: those of version 1 (a column added later, when
absent, reads as null; extra columns are accepted and ignored)."""

NON_NULL: tuple[str, ...] = tuple(f.name for f in SCHEMA if not f.nullable)
"""The columns that must hold a value in every row: run, node, t, i, kind."""

NULLABLE: tuple[str, ...] = tuple(f.name for f in SCHEMA if f.nullable)
"""The columns that may be null: msg, order, view, members, transitional, size, detail,
network."""


PROTOCOL_KEY = "ringcast.protocol"
"""The Parquet key-value metadata key under which a trace file names the protocol its
runs come from (written by :class:`~ringcast.trace.writer.ParquetTraceWriter` when
given one; read by :func:`~ringcast.trace.reader.trace_protocol`). A file without it
(written before the key existed, or by another writer) names no protocol."""

VERSION_KEY = "ringcast.trace_version"
"""The Parquet key-value metadata key under which a trace file written by
:class:`~ringcast.trace.writer.ParquetTraceWriter` gives its format version
(:data:`TRACE_VERSION`, as decimal text; read by
:func:`~ringcast.trace.reader.trace_version`). Files of version 1 have no such key."""


class Row(NamedTuple):
    """One trace event, its fields in column order, for writers that work row by row.

    ``members`` is a sequence of node ids (a list or tuple); ``detail`` is a JSON
    string (see :func:`ringcast.trace.rows.encode_detail`), not a dict.
    """

    run: str
    node: str
    t: int
    i: int
    kind: str
    msg: str | None = None
    order: str | None = None
    view: str | None = None
    members: list[str] | tuple[str, ...] | None = None
    transitional: bool | None = None
    size: int | None = None
    detail: str | None = None
    network: int | None = None
