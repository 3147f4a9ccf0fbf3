"""The schema, its column tuples and Row; make_row and encode_detail."""

from __future__ import annotations

import pyarrow as pa
import pytest

import ringcast.trace as trace
from ringcast.trace import COLUMNS, NON_NULL, REQUIRED, SCHEMA, Row, encode_detail, make_row


def test_schema_columns_types_and_order():
    assert [(f.name, f.type) for f in SCHEMA] == [
        ("run", pa.string()),
        ("node", pa.string()),
        ("t", pa.int64()),
        ("i", pa.int64()),
        ("kind", pa.string()),
        ("msg", pa.string()),
        ("order", pa.string()),
        ("view", pa.string()),
        ("members", pa.list_(pa.string())),
        ("transitional", pa.bool_()),
        ("size", pa.int32()),
        ("detail", pa.string()),
        ("network", pa.int32()),
    ]
    assert SCHEMA.metadata is None


def test_column_tuples():
    assert tuple(SCHEMA.names) == COLUMNS
    assert tuple(c for c in COLUMNS if c != "network") == REQUIRED  # network: version 2
    assert trace.ADDED_COLUMNS == {"network": 2}
    assert trace.TRACE_VERSION == 2
    assert NON_NULL == ("run", "node", "t", "i", "kind")
    assert all(not SCHEMA.field(name).nullable for name in NON_NULL)
    assert all(SCHEMA.field(name).nullable for name in COLUMNS if name not in NON_NULL)


def test_row_fields_follow_the_columns_and_default_to_none():
    assert Row._fields == COLUMNS
    row = Row("r", "A", 1, 0, "fault")
    assert row[5:] == (None,) * 8


def test_package_exports():
    for name in [
        "SCHEMA",
        "COLUMNS",
        "Row",
        "TraceWriter",
        "ParquetTraceWriter",
        "JsonlTraceWriter",
        "open_writer",
        "read_trace",
        "validate_table",
        "TraceSchemaError",
    ]:
        assert name in trace.__all__
        assert getattr(trace, name) is not None
    assert issubclass(trace.TraceSchemaError, ValueError)


def test_encode_detail_is_canonical():
    assert encode_detail(None) is None
    assert encode_detail({}) is None
    one = encode_detail({"b": (1, 2), "a": {"z": 1, "y": "é"}, "s": {"q", "p"}})
    assert one == '{"a":{"y":"é","z":1},"b":[1,2],"s":["p","q"]}'
    with pytest.raises(TypeError, match="not JSON data"):
        encode_detail({"x": object()})
    with pytest.raises(ValueError):
        encode_detail({"x": float("nan")})


def test_make_row_splits_columns_from_detail():
    row = make_row(
        "r",
        "A",
        10,
        3,
        "view",
        {"view": "7", "members": ("A", "B"), "transitional": False, "state": "operational"},
    )
    assert row == Row(
        "r",
        "A",
        10,
        3,
        "view",
        view="7",
        members=["A", "B"],
        transitional=False,
        detail='{"state":"operational"}',
    )
    assert make_row("r", "A", 1, 0, "token") == Row("r", "A", 1, 0, "token")
    deliver = make_row("r", "B", 2, 1, "deliver", {"msg": "A:1", "order": "agreed", "size": 4})
    assert (deliver.msg, deliver.order, deliver.size, deliver.detail) == ("A:1", "agreed", 4, None)


def test_make_row_puts_other_fields_in_detail_even_when_named_like_fixed_columns():
    row = make_row("r", "A", 1, 0, "join_request", {"node": "B", "t": 5})
    assert (row.node, row.t, row.detail) == ("A", 1, '{"node":"B","t":5}')


def test_host_detail_never_raises_and_matches_canonical_for_json_data() -> None:
    from ringcast.trace.rows import encode_detail, host_detail

    fields = {"b": [1, 2], "a": "é", "s": {"y", "x"}}
    assert host_detail(fields) == encode_detail(fields)
    odd = host_detail({"raw": b"\x01\xff", "obj": object, "nan": float("nan")})
    assert odd is not None and '"raw":"01ff"' in odd and "NaN" in odd
    assert host_detail({}) is None
