"""Checking that a table is a trace: columns present, types exact, required values set, order.

Every problem is reported through :class:`TraceSchemaError`, whose message starts with
the source (usually the file name) and names every problem found, for example::

    trace.parquet: missing columns: kind, t; column 'i' has type string, expected int64
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ringcast.trace.arrowtypes import same_type, type_name
from ringcast.trace.schema import COLUMNS, NON_NULL, REQUIRED, SCHEMA

__all__ = ["TraceSchemaError", "presence_problems", "schema_problems", "validate_table"]


class TraceSchemaError(ValueError):
    """A table or file is not a valid trace; the message names the source and every problem."""


def validate_table(
    table: pa.Table | pa.RecordBatch, source: str = "trace", *, check_order: bool = False
) -> None:
    """Raise :class:`TraceSchemaError` unless ``table`` conforms to :data:`SCHEMA`.

    Checks that every column of the schema is present (a column added after version 1,
    :data:`~ringcast.trace.schema.ADDED_COLUMNS`, may be absent: the table is a trace
    of an earlier version; extra columns are ignored, column order is not checked),
    that each has exactly the schema's type (a list's item field name is not
    compared), and that ``run``, ``node``, ``t``, ``i`` and
    ``kind`` hold no nulls. The message names every missing column (alphabetically),
    every mistyped column with the type found and the type expected, and every
    column with nulls, all prefixed by ``source``.

    With ``check_order=True`` it also checks that ``i`` is strictly increasing, in
    row order, within each (``run``, ``node``); the message names the run, the node
    and the first offending row (0-based row index of the table).
    """
    problems = schema_problems(table.schema)
    if not problems:
        problems = _null_problems(table)
    if problems:
        raise TraceSchemaError(f"{source}: " + "; ".join(problems))
    if check_order:
        _check_order(table, source)


def schema_problems(schema: pa.Schema) -> list[str]:
    """The missing, repeated and mistyped columns of ``schema`` as message fragments."""
    problems = presence_problems(schema)
    names = set(schema.names)
    for expected in SCHEMA:
        index = schema.get_field_index(expected.name)
        if expected.name not in names or index < 0:
            continue
        found = schema.field(index).type
        if not same_type(found, expected.type):
            problems.append(
                f"column '{expected.name}' has type {type_name(found)}, "
                f"expected {type_name(expected.type)}"
            )
    return problems


def presence_problems(schema: pa.Schema) -> list[str]:
    """The missing (alphabetically) and repeated schema columns of ``schema`` (empty if none).

    A column added after version 1 is not missing when absent (a trace of an earlier
    version)."""
    names = set(schema.names)
    problems: list[str] = []
    missing = sorted(name for name in REQUIRED if name not in names)
    if missing:
        problems.append("missing columns: " + ", ".join(missing))
    for name in COLUMNS:
        if schema.names.count(name) > 1:
            problems.append(f"column '{name}' appears more than once")
    return problems


def _null_problems(table: pa.Table | pa.RecordBatch) -> list[str]:
    problems: list[str] = []
    for name in NON_NULL:
        nulls = table.column(name).null_count
        if nulls:
            first = _first_true(pc.is_null(table.column(name)))
            problems.append(
                f"column '{name}' has {nulls} null value{'s' if nulls != 1 else ''} "
                f"(first at row {first}), nulls are not allowed"
            )
    return problems


def _check_order(table: pa.Table | pa.RecordBatch, source: str) -> None:
    if table.num_rows < 2:
        return
    keys = table.select(["run", "node"])
    # A stable sort: within one (run, node) the rows keep their table order.
    order = pc.sort_indices(keys, sort_keys=[("run", "ascending"), ("node", "ascending")])
    run = pc.take(table.column("run"), order)
    node = pc.take(table.column("node"), order)
    index = pc.take(table.column("i"), order)
    same_group = pc.and_(pc.equal(run[1:], run[:-1]), pc.equal(node[1:], node[:-1]))
    bad = pc.and_(same_group, pc.less_equal(index[1:], index[:-1]))
    if not pc.any(bad).as_py():
        return
    positions = pc.indices_nonzero(bad)
    offending_rows = pc.take(order[1:], positions)
    first_row = pc.min(offending_rows).as_py()
    pos = positions[pc.index(offending_rows, first_row).as_py()].as_py()
    prev_row = order[pos].as_py()
    raise TraceSchemaError(
        f"{source}: column 'i' is not strictly increasing for node "
        f"'{node[pos + 1].as_py()}' of run '{run[pos + 1].as_py()}': "
        f"row {first_row} has i={index[pos + 1].as_py()} "
        f"after row {prev_row} with i={index[pos].as_py()}"
    )


def _first_true(mask: pa.Array | pa.ChunkedArray) -> int:
    return int(pc.indices_nonzero(mask)[0].as_py())
