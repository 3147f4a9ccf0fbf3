"""read_trace: files, directories with hive partitions, casting, malformed input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ringcast.trace import COLUMNS, SCHEMA, ParquetTraceWriter, TraceSchemaError, read_trace


def _parquet(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_foreign_parquet_with_compatible_types_is_cast(tmp_path, rows, make_table):
    expected = make_table(rows)
    foreign = pa.table(
        {
            "extra": pa.array(["x"] * len(rows)),
            **{name: expected.column(name) for name in COLUMNS},
            "t": expected.column("t").cast(pa.int32()),
            "i": expected.column("i").cast(pa.uint16()),
            "kind": expected.column("kind").dictionary_encode(),
            "msg": expected.column("msg").cast(pa.large_string()),
            "members": expected.column("members").cast(pa.large_list(pa.large_string())),
            "size": expected.column("size").cast(pa.int64()),
        }
    )
    table = read_trace(_parquet(tmp_path / "foreign.parquet", foreign))
    assert table.schema.equals(SCHEMA)
    assert table.column_names == list(COLUMNS)
    assert table.equals(expected)


def test_a_value_that_does_not_fit_is_named(tmp_path, rows, make_table):
    table = make_table(rows)
    table = table.set_column(
        COLUMNS.index("size"), "size", pa.array([2**40] * len(rows), type=pa.int64())
    )
    path = _parquet(tmp_path / "big.parquet", table)
    with pytest.raises(TraceSchemaError, match=r"big\.parquet: column 'size' of type int64"):
        read_trace(path)


def test_jsonl_missing_nullable_keys_are_null(tmp_path):
    path = _jsonl(
        tmp_path / "t.jsonl",
        [
            '{"run":"r","node":"A","t":1,"i":0,"kind":"view","members":["A"],"other":1}',
            "",
            '{"run":"r","node":"A","t":2,"i":1,"kind":"deliver","msg":"A:1","order":"safe",'
            '"view":"1","transitional":true,"size":3,"detail":{"b":1,"a":[1,2]}}',
        ],
    )
    got = read_trace(path).to_pylist()
    assert got[0] == {
        "run": "r",
        "node": "A",
        "t": 1,
        "i": 0,
        "kind": "view",
        "msg": None,
        "order": None,
        "view": None,
        "members": ["A"],
        "transitional": None,
        "size": None,
        "detail": None,
        "network": None,
    }
    assert got[1]["detail"] == '{"a":[1,2],"b":1}'
    assert got[1]["transitional"] is True


def test_directory_with_hive_partitions(tmp_path, make_rows, make_table):
    rows = make_rows(12)
    table = make_table(rows)
    root = tmp_path / "lab"
    _parquet(root / "protocol=totem" / "scenario=s%201" / "part-0.parquet", table.slice(0, 4))
    _parquet(root / "protocol=totem" / "scenario=s2" / "part-0.parquet", table.slice(4, 4))
    (root / "protocol=raincore").mkdir()
    with ParquetTraceWriter(root / "protocol=raincore" / "part-1.parquet") as writer:
        writer.write(rows[8:10])
    _jsonl(
        root / "protocol=raincore" / "part-2.jsonl",
        [json.dumps(row._asdict()) for row in rows[10:]],
    )
    _jsonl(root / "_SUCCESS", [])
    _parquet(root / "_temporary" / "part-9.parquet", pa.table({"junk": [1]}))
    _jsonl(root / ".hidden.jsonl", ["not json"])
    (root / "notes.txt").write_text("ignored")

    plain = read_trace(root)
    assert plain.schema.equals(SCHEMA)
    # Files are read in order of relative path: raincore/... before totem/...
    assert plain.equals(pa.concat_tables([table.slice(8, 4), table.slice(0, 8)]))

    kept = read_trace(root, keep_partitions=True)
    assert kept.column_names == [*COLUMNS, "protocol", "scenario"]
    assert kept.select(list(COLUMNS)).equals(plain)
    assert kept.column("protocol").to_pylist() == ["raincore"] * 4 + ["totem"] * 8
    assert kept.column("scenario").to_pylist() == [None] * 4 + ["s 1"] * 4 + ["s2"] * 4


def test_partition_columns_fill_schema_columns_missing_from_files(tmp_path, rows, make_table):
    table = make_table(rows)
    root = tmp_path / "spark"
    _parquet(root / "run=r1" / "part-0.parquet", table.drop_columns(["run"]).slice(0, 3))
    _parquet(root / "run=r2" / "part-0.parquet", table.drop_columns(["run"]).slice(3))
    got = read_trace(root, keep_partitions=True)
    assert got.column_names == list(COLUMNS)
    assert got.column("run").to_pylist() == ["r1"] * 3 + ["r2"] * (len(rows) - 3)
    assert got.drop_columns(["run"]).equals(table.drop_columns(["run"]))


def test_directory_errors_name_the_bad_file(tmp_path, rows, make_table):
    root = tmp_path / "runs"
    _parquet(root / "a" / "part-0.parquet", make_table(rows))
    bad = _parquet(root / "b" / "part-0.parquet", make_table(rows).drop_columns(["node"]))
    with pytest.raises(TraceSchemaError, match=rf"^{re.escape(str(bad))}: missing columns: node$"):
        read_trace(root)


def test_garbage_parquet_is_a_trace_error(tmp_path):
    path = tmp_path / "trace.parquet"
    path.write_bytes(b"\x00garbage, not parquet at all\xff" * 10)
    with pytest.raises(TraceSchemaError, match=r"trace\.parquet: not a readable Parquet file"):
        read_trace(path)


def test_truncated_parquet_is_a_trace_error(tmp_path, rows):
    path = tmp_path / "trace.parquet"
    with ParquetTraceWriter(path) as writer:
        writer.write(rows)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(TraceSchemaError, match=r"trace\.parquet: not a readable Parquet file"):
        read_trace(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"line 3: not valid JSON"),
        ("[1, 2]", r"line 3: expected a JSON object, got list"),
        ('{"run":"r","node":"A","t":"x","i":1,"kind":"k"}', r"line 3: column 't' expects int64"),
        ('{"run":"r","node":"A","t":2,"kind":"k"}', r"line 3: column 'i' is missing or null"),
        (
            '{"run":"r","node":"A","t":2,"i":1,"kind":"k","members":"A"}',
            r"line 3: column 'members'",
        ),
    ],
)
def test_bad_jsonl_line_is_named(tmp_path, line, message):
    good = '{"run":"r","node":"A","t":1,"i":0,"kind":"k"}'
    path = _jsonl(tmp_path / "trace.jsonl", [good, good, line, good])
    with pytest.raises(TraceSchemaError, match=rf"trace\.jsonl: {message}"):
        read_trace(path)


def test_jsonl_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"run":"r","node":"A","t":1,"i":0,"kind":"k"}\n\xff\xfe\n')
    with pytest.raises(TraceSchemaError, match=r"trace\.jsonl: line 2: not UTF-8"):
        read_trace(path)


def test_jsonl_without_a_column_names_all_missing_columns(tmp_path):
    path = _jsonl(tmp_path / "trace.jsonl", ['{"run":"r","node":"A","i":0}'])
    with pytest.raises(TraceSchemaError, match=r"trace\.jsonl: missing columns: kind, t$"):
        read_trace(path)


def test_missing_path_unsupported_file_and_empty_directory(tmp_path):
    with pytest.raises(TraceSchemaError, match="no such file or directory"):
        read_trace(tmp_path / "absent.parquet")
    (tmp_path / "trace.csv").write_text("run,node\n")
    with pytest.raises(TraceSchemaError, match=r"trace\.csv: unsupported trace file type '\.csv'"):
        read_trace(tmp_path / "trace.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceSchemaError, match=r"holds no \.parquet or \.jsonl files"):
        read_trace(tmp_path / "empty")


def test_read_trace_checks_order_when_asked(tmp_path):
    path = _jsonl(
        tmp_path / "trace.jsonl",
        [
            '{"run":"r","node":"A","t":1,"i":0,"kind":"k"}',
            '{"run":"r","node":"A","t":2,"i":0,"kind":"k"}',
        ],
    )
    assert read_trace(path).num_rows == 2
    with pytest.raises(TraceSchemaError, match="not strictly increasing for node 'A'"):
        read_trace(path, check_order=True)
