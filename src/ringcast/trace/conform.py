"""Bringing a table with compatible types into the exact trace schema."""

from __future__ import annotations

import pyarrow as pa

from ringcast.trace.arrowtypes import compatible, type_name
from ringcast.trace.messages import first_line
from ringcast.trace.schema import ADDED_COLUMNS, SCHEMA
from ringcast.trace.validate import TraceSchemaError, presence_problems

__all__ = ["conform_table"]


def conform_table(table: pa.Table | pa.RecordBatch, source: str = "trace") -> pa.Table:
    """Return ``table`` as a table with exactly :data:`SCHEMA`'s columns, order and types.

    Compatible types are cast (see :func:`ringcast.trace.arrowtypes.compatible`;
    e.g. an ``int32`` ``t`` becomes ``int64``, a ``large_string`` becomes ``string``),
    extra columns are dropped, schema metadata is dropped. Raises
    :class:`TraceSchemaError` naming every missing column, every column of an
    incompatible type and every value that does not fit its column (e.g. a ``size``
    beyond ``int32``). A column added after version 1
    (:data:`~ringcast.trace.schema.ADDED_COLUMNS`, e.g. ``network``) that ``table``
    lacks, as a trace of an earlier version does, is added null in every row. Nulls
    in required columns are not checked here; see
    :func:`ringcast.trace.validate.validate_table`.
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    problems = presence_problems(table.schema)
    columns: list[pa.ChunkedArray] = []
    for expected in SCHEMA:
        if table.schema.get_field_index(expected.name) < 0:
            if expected.name in ADDED_COLUMNS:
                columns.append(pa.chunked_array([pa.nulls(table.num_rows, expected.type)]))
            continue
        column = table.column(expected.name)
        found = column.type
        if _identical(found, expected.type):
            columns.append(column)
            continue
        if not compatible(found, expected.type):
            problems.append(
                f"column '{expected.name}' has type {type_name(found)}, "
                f"expected {type_name(expected.type)}"
            )
            continue
        try:
            columns.append(column.cast(expected.type, safe=True))
        except (pa.ArrowException, ValueError, TypeError) as exc:
            problems.append(
                f"column '{expected.name}' of type {type_name(found)} cannot be cast to "
                f"{type_name(expected.type)}: {first_line(exc)}"
            )
    if problems:
        raise TraceSchemaError(f"{source}: " + "; ".join(problems))
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def _identical(found: pa.DataType, expected: pa.DataType) -> bool:
    """Equal types, including the item field's name of a list (``item``, not ``element``)."""
    if not found.equals(expected):
        return False
    if pa.types.is_list(expected):
        return found.value_field.name == expected.value_field.name and _identical(
            found.value_type, expected.value_type
        )
    return True
