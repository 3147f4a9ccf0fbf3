"""Format version 2 (the ``network`` column) and traces of version 1, which lack it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ringcast.trace import (
    COLUMNS,
    SCHEMA,
    TRACE_VERSION,
    VERSION_KEY,
    Row,
    TraceSchemaError,
    open_writer,
    read_trace,
    trace_protocol,
    trace_version,
    validate_table,
)
from ringcast.trace.conform import conform_table

V1_SCHEMA = pa.schema([f for f in SCHEMA if f.name != "network"])
"""The trace schema of format version 1: the twelve columns run .. detail."""


def _v1_rows() -> list[Row]:
    return [
        Row("r", "A", 0, 0, "view", view="1", members=["A", "B"], transitional=False),
        Row("r", "A", 5, 1, "token", detail='{"op":"sent","seq":1}'),
        Row("r", "B", 7, 0, "deliver", msg="A:1", order="agreed", size=3),
    ]


def _write_v1_parquet(path: Path, protocol: str | None = None) -> Path:
    """A Parquet file as the version 1 writer made it: twelve columns, no version key."""
    rows = _v1_rows()
    table = pa.Table.from_pylist([r._asdict() for r in rows], schema=SCHEMA).drop_columns(
        ["network"]
    )
    assert table.schema.equals(V1_SCHEMA)
    if protocol is not None:
        table = table.replace_schema_metadata({"ringcast.protocol": protocol})
    pq.write_table(table, path, compression="zstd")
    return path


def test_the_writer_writes_version_2_with_the_network_column(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    with open_writer(path, "parquet", protocol="totem") as w:
        w.write([Row("r", "A", 0, 0, "send", size=40, detail='{"type":"Token"}', network=1)])
    assert TRACE_VERSION == 2
    assert pq.read_schema(path).metadata[VERSION_KEY.encode()] == b"2"
    assert trace_version(path) == 2
    assert trace_protocol(path) == "totem"
    assert read_trace(path).column("network").to_pylist() == [1]


def test_a_version_1_parquet_trace_reads_with_network_null(tmp_path: Path) -> None:
    old = _write_v1_parquet(tmp_path / "old.parquet", protocol="raincore")
    assert "network" not in pq.read_schema(old).names
    assert trace_version(old) is None  # version 1 named no version
    assert trace_protocol(old) == "raincore"
    table = read_trace(old, check_order=True)
    assert table.schema.equals(SCHEMA)
    assert table.column("network").to_pylist() == [None, None, None]
    expected = [r._asdict() for r in _v1_rows()]
    assert table.to_pylist() == expected


def test_a_version_1_jsonl_trace_reads_with_network_null(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    lines = [
        json.dumps({k: v for k, v in r._asdict().items() if k != "network"}, separators=(",", ":"))
        for r in _v1_rows()
    ]
    assert '"network"' not in lines[0]
    old.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = read_trace(old)
    assert table.column("network").null_count == table.num_rows == 3
    assert trace_version(old) is None


def test_a_directory_of_both_versions_reads_as_one_trace(tmp_path: Path) -> None:
    _write_v1_parquet(tmp_path / "a.parquet")
    with open_writer(tmp_path / "b.parquet", "parquet") as w:
        w.write([Row("r", "C", 1, 0, "recv", size=9, detail='{"src":"A"}', network=0)])
    table = read_trace(tmp_path)
    assert table.column("network").to_pylist() == [None, None, None, 0]


def test_validate_accepts_version_1_and_conform_adds_the_column() -> None:
    old = pa.Table.from_pylist(
        [{k: v for k, v in r._asdict().items() if k != "network"} for r in _v1_rows()],
        schema=V1_SCHEMA,
    )
    validate_table(old, "old")  # a trace of version 1 is a trace
    new = conform_table(old, "old")
    assert new.schema.equals(SCHEMA)
    assert new.column("network").null_count == 3
    # the column, when present, must have its type
    bad = new.set_column(COLUMNS.index("network"), "network", pa.array(["x"] * 3))
    with pytest.raises(TraceSchemaError, match="column 'network' has type string"):
        validate_table(bad, "bad")
    twice = new.append_column("network", pa.array([1, 2, 3], pa.int32()))
    with pytest.raises(TraceSchemaError, match="column 'network' appears more than once"):
        conform_table(twice, "twice")


def test_writers_take_version_1_columns_and_batches(tmp_path: Path) -> None:
    cols = {c: [] for c in COLUMNS if c != "network"}
    for r in _v1_rows():
        for c in cols:
            cols[c].append(getattr(r, c))
    path = tmp_path / "t.jsonl"
    with open_writer(path, "jsonl") as w:
        w.write_columns(cols)
        w.write_batch(pa.Table.from_pydict(cols, schema=V1_SCHEMA))
    table = read_trace(path)
    assert table.num_rows == 6 and table.column("network").null_count == 6
    assert all(json.loads(line)["network"] is None for line in path.read_text().splitlines())
