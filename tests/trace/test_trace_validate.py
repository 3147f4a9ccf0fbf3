"""validate_table: every problem named, with the source; per-node order of ``i``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ringcast.trace import COLUMNS, Row, TraceSchemaError, validate_table


def test_a_conforming_table_passes(rows, make_table):
    validate_table(make_table(rows), check_order=True)


def test_extra_columns_and_column_order_are_accepted(rows, make_table):
    table = make_table(rows)
    shuffled = table.select(list(reversed(COLUMNS))).append_column("extra", pa.array([1] * 6))
    validate_table(shuffled)


def test_every_missing_and_mistyped_column_is_named(rows, make_table):
    table = make_table(rows).drop_columns(["t", "kind"])
    table = table.set_column(
        table.column_names.index("i"), "i", table.column("i").cast(pa.string())
    )
    table = table.set_column(
        table.column_names.index("members"), "members", pa.array([None] * 6, pa.string())
    )
    with pytest.raises(TraceSchemaError) as info:
        validate_table(table, "trace.parquet")
    assert str(info.value) == (
        "trace.parquet: missing columns: kind, t; column 'i' has type string, expected int64; "
        "column 'members' has type string, expected list<string>"
    )


def test_the_source_defaults_to_trace(rows, make_table):
    with pytest.raises(TraceSchemaError, match=r"^trace: missing columns: run$"):
        validate_table(make_table(rows).drop_columns(["run"]))


def test_a_list_named_element_is_a_list_of_string(rows, make_table):
    table = make_table(rows)
    spark_members = table.column("members").cast(pa.list_(pa.field("element", pa.string())))
    validate_table(table.set_column(COLUMNS.index("members"), "members", spark_members))


def test_nulls_in_required_columns_are_named(rows, make_table):
    table = make_table(rows)
    nodes = pa.array(["A", "B", None, "A", None, "C"])
    table = table.set_column(COLUMNS.index("node"), "node", nodes)
    with pytest.raises(
        TraceSchemaError, match=r"column 'node' has 2 null values \(first at row 2\)"
    ):
        validate_table(table, "x")


def test_repeated_columns_are_named(rows, make_table):
    table = make_table(rows)
    table = table.append_column("kind", table.column("kind"))
    with pytest.raises(TraceSchemaError, match="column 'kind' appears more than once"):
        validate_table(table)


def _order_table(make_table, pairs: list[tuple[str, str, int]]) -> pa.Table:
    return make_table([Row(run, node, 0, i, "k") for run, node, i in pairs])


def test_order_is_checked_per_run_and_node(make_table):
    table = _order_table(
        make_table,
        [("r1", "A", 0), ("r1", "B", 0), ("r1", "A", 1), ("r2", "A", 0), ("r1", "B", 5)],
    )
    validate_table(table, check_order=True)


def test_order_violation_names_node_and_first_offending_row(make_table):
    table = _order_table(
        make_table,
        [
            ("r1", "B", 3),
            ("r1", "A", 0),
            ("r1", "A", 4),
            ("r1", "B", 9),
            ("r1", "A", 4),  # first offender: equal is not increasing
            ("r1", "B", 1),  # later offender
        ],
    )
    validate_table(table)  # not checked unless asked
    with pytest.raises(TraceSchemaError) as info:
        validate_table(table, "t.parquet", check_order=True)
    assert str(info.value) == (
        "t.parquet: column 'i' is not strictly increasing for node 'A' of run 'r1': "
        "row 4 has i=4 after row 2 with i=4"
    )


def test_order_check_works_across_chunks(make_table):
    first = _order_table(make_table, [("r", "A", 0), ("r", "A", 2)])
    second = _order_table(make_table, [("r", "A", 1)])
    with pytest.raises(TraceSchemaError, match="row 2 has i=1 after row 1 with i=2"):
        validate_table(pa.concat_tables([first, second]), check_order=True)
