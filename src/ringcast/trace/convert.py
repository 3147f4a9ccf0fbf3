"""Turning Python rows or column lists into an Arrow table of the trace schema.

Rows of tuples go through one :func:`pyarrow.array` call for the whole group (a
struct array split into columns), column lists through one call a column; both keep
Python out of the per-value work, which is what makes writing millions of rows cheap.
Errors name the offending row and column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ringcast.trace.arrowtypes import type_name
from ringcast.trace.messages import shorten
from ringcast.trace.schema import ADDED_COLUMNS, COLUMNS, NON_NULL, SCHEMA
from ringcast.trace.validate import TraceSchemaError

__all__ = ["columns_to_table", "rows_to_table"]

_CONVERSION_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)
_ROW_TYPE = pa.struct(list(SCHEMA))
_MEMBERS = itemgetter(COLUMNS.index("members"))
_SEQUENCE_TYPES = frozenset((type(None), list, tuple))


def rows_to_table(
    rows: Sequence[Sequence[Any]], source: str = "trace", first_row: int = 0
) -> pa.Table:
    """A table of :data:`SCHEMA` from ``rows``, each a :class:`Row` or a tuple of 13 values.

    ``first_row`` is the index of ``rows[0]`` in the whole trace, used in messages.
    Raises :class:`TraceSchemaError` naming the row (and column) of a row of the
    wrong length, a value of the wrong type or a null in a required column.
    """
    if not rows:
        return SCHEMA.empty_table()
    table = _tuples_to_table(rows, source, first_row)
    if table is not None:
        return table
    try:
        columns = list(zip(*rows, strict=True))
    except (TypeError, ValueError):
        columns = []
    if len(columns) != len(COLUMNS):
        raise _bad_length(rows, source, first_row)
    return _to_table(dict(zip(COLUMNS, columns, strict=True)), source, first_row)


def _tuples_to_table(rows: Sequence[Any], source: str, first_row: int) -> pa.Table | None:
    """The fast path for rows that are all tuples of the right values, else None."""
    if not all(issubclass(kind, tuple) for kind in set(map(type, rows))):
        return None
    try:
        members = list(map(_MEMBERS, rows))
    except IndexError:
        return None
    _check_sequences("members", members, source, first_row)
    try:
        array = pa.array(rows, type=_ROW_TYPE)
    except _CONVERSION_ERRORS:
        return None
    if array.null_count:
        return None
    table = pa.Table.from_batches([pa.RecordBatch.from_struct_array(array)], schema=SCHEMA)
    for name in NON_NULL:
        column = table.column(name)
        if column.null_count:
            row = pc.indices_nonzero(pc.is_null(column))[0].as_py()
            raise _null_error(name, source, first_row + row)
    return table


def columns_to_table(
    columns: Mapping[str, Sequence[Any]], source: str = "trace", first_row: int = 0
) -> pa.Table:
    """A table of :data:`SCHEMA` from a mapping of column name to its list of values.

    Every column of the schema must be present and all of the same length, but for
    those added after version 1 (:data:`~ringcast.trace.schema.ADDED_COLUMNS`), null
    when left out; extra keys are refused. Errors are reported as for
    :func:`rows_to_table`.
    """
    if any(name not in columns for name in ADDED_COLUMNS):
        length = max((len(values) for values in columns.values()), default=0)
        columns = {
            **columns,
            **{name: [None] * length for name in ADDED_COLUMNS if name not in columns},
        }
    missing = sorted(set(COLUMNS) - set(columns))
    extra = sorted(set(columns) - set(COLUMNS))
    problems = []
    if missing:
        problems.append("missing columns: " + ", ".join(missing))
    if extra:
        problems.append("unknown columns: " + ", ".join(extra))
    lengths = {len(columns[name]) for name in COLUMNS if name in columns}
    if len(lengths) > 1:
        problems.append(
            "columns differ in length: "
            + ", ".join(f"{name}={len(columns[name])}" for name in COLUMNS if name in columns)
        )
    if problems:
        raise TraceSchemaError(f"{source}: " + "; ".join(problems))
    return _to_table(columns, source, first_row)


def _to_table(columns: Mapping[str, Sequence[Any]], source: str, first_row: int) -> pa.Table:
    arrays: list[pa.Array] = []
    for field in SCHEMA:
        values = columns[field.name]
        if pa.types.is_list(field.type):
            _check_sequences(field.name, values, source, first_row)
        try:
            array = pa.array(values, type=field.type)
        except _CONVERSION_ERRORS:
            raise _bad_value(field, values, source, first_row) from None
        if array.null_count and field.name in NON_NULL:
            row = next(n for n, value in enumerate(values) if value is None)
            raise _null_error(field.name, source, first_row + row)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _null_error(name: str, source: str, row: int) -> TraceSchemaError:
    return TraceSchemaError(f"{source}: row {row}: column '{name}' must not be null")


def _check_sequences(name: str, values: Sequence[Any], source: str, first_row: int) -> None:
    """Refuse anything but a list or tuple in a list column.

    Arrow would split a string into characters and take a set in hash order, which
    differs between processes and would break byte-identical output.
    """
    if set(map(type, values)) <= _SEQUENCE_TYPES:
        return
    for n, value in enumerate(values):
        if value is not None and not isinstance(value, list | tuple):
            raise TraceSchemaError(
                f"{source}: row {first_row + n}: column '{name}' expects a list or tuple "
                f"of strings, got {type(value).__name__} {shorten(repr(value))}"
            )


def _bad_length(rows: Sequence[Any], source: str, first_row: int) -> TraceSchemaError:
    for n, row in enumerate(rows):
        try:
            length = len(row)
        except TypeError:
            return TraceSchemaError(
                f"{source}: row {first_row + n}: expected a row of {len(COLUMNS)} values, "
                f"got {type(row).__name__}"
            )
        if length != len(COLUMNS):
            return TraceSchemaError(
                f"{source}: row {first_row + n}: expected {len(COLUMNS)} values, got {length}"
            )
    return TraceSchemaError(f"{source}: rows are not sequences of {len(COLUMNS)} values")


def _bad_value(
    field: pa.Field, values: Sequence[Any], source: str, first_row: int
) -> TraceSchemaError:
    for n, value in enumerate(values):
        try:
            pa.array([value], type=field.type)
        except _CONVERSION_ERRORS:
            return TraceSchemaError(
                f"{source}: row {first_row + n}: column '{field.name}' expects "
                f"{type_name(field.type)}, got {type(value).__name__} {shorten(repr(value))}"
            )
    return TraceSchemaError(
        f"{source}: column '{field.name}' cannot be converted to {type_name(field.type)}"
    )
