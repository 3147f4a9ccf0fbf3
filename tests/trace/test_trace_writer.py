"""Writers: round trips, byte-identical output, row groups, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ringcast.trace import (
    COLUMNS,
    SCHEMA,
    TRACE_VERSION,
    VERSION_KEY,
    JsonlTraceWriter,
    ParquetTraceWriter,
    Row,
    TraceSchemaError,
    open_writer,
    read_trace,
)
from ringcast.trace.writer import PARQUET_COMPRESSION


def _write(path: Path, fmt: str, rows: list[Row]) -> Path:
    with open_writer(path, fmt) as writer:
        writer.write(rows)
    return path


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_round_trip_gives_the_same_table(tmp_path, rows, make_table, fmt):
    path = _write(tmp_path / f"trace.{fmt}", fmt, rows)
    table = read_trace(path)
    assert table.schema.equals(SCHEMA)
    assert table.equals(make_table(rows))
    back = table.to_pylist()
    assert back[0]["members"] == ["A", "B", "C"]
    assert back[1]["members"] == []
    assert back[1]["transitional"] is True
    assert back[2]["members"] is None
    assert back[2]["transitional"] is None
    assert back[4]["detail"] == '{"from":"idle","to":"gather","é":"ü"}'


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_empty_trace_round_trips(tmp_path, fmt):
    path = _write(tmp_path / f"trace.{fmt}", fmt, [])
    table = read_trace(path)
    assert table.num_rows == 0
    assert table.schema.equals(SCHEMA)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_same_rows_give_identical_bytes(tmp_path, make_rows, fmt):
    rows = make_rows(3000)
    first = _write(tmp_path / f"a.{fmt}", fmt, rows).read_bytes()
    second = _write(tmp_path / f"b.{fmt}", fmt, list(rows)).read_bytes()
    assert first == second


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_bytes_do_not_depend_on_how_rows_arrive(tmp_path, make_rows, make_table, fmt):
    rows = make_rows(250)
    whole = _write(tmp_path / f"whole.{fmt}", fmt, rows).read_bytes()

    def by_row(writer):
        for row in rows:
            writer.write_row(row)

    def by_chunks(writer):
        for start in range(0, len(rows), 7):
            writer.write(iter(rows[start : start + 7]))

    def mixed(writer):
        writer.write(tuple(row) for row in rows[:50])
        for batch in make_table(rows[50:200]).to_batches(max_chunksize=33):
            writer.write_batch(batch)
        values = zip(*rows[200:], strict=True)
        columns = {name: list(v) for name, v in zip(COLUMNS, values, strict=True)}
        writer.write_columns(columns)

    for n, feed in enumerate([by_row, by_chunks, mixed]):
        path = tmp_path / f"{n}.{fmt}"
        writer = (
            ParquetTraceWriter(path, batch_rows=64)
            if fmt == "parquet"
            else JsonlTraceWriter(path, batch_rows=64)
        )
        with writer:
            feed(writer)
        if fmt == "jsonl":
            assert path.read_bytes() == whole, feed.__name__
        else:
            reference = _write_parquet(tmp_path / "ref.parquet", rows, batch_rows=64)
            assert path.read_bytes() == reference, feed.__name__


def test_parquet_pages_do_not_depend_on_batch_boundaries(tmp_path, make_table):
    # Enough data for several data pages a column chunk: Arrow cuts pages at points that
    # depend on the input chunks unless the writer makes each row group contiguous.
    pad = "x" * 80
    rows = [
        Row("r", "A", k, k, "deliver", msg=f"A:{k}", detail=f'{{"k":{k},"pad":"{pad}"}}')
        for k in range(30000)
    ]
    whole = _write_parquet(tmp_path / "whole.parquet", rows, batch_rows=30000)
    path = tmp_path / "chunked.parquet"
    with ParquetTraceWriter(path, batch_rows=30000) as writer:
        for batch in make_table(rows).to_batches(max_chunksize=777):
            writer.write_batch(batch)
    assert path.read_bytes() == whole


def _write_parquet(path: Path, rows: list[Row], batch_rows: int) -> bytes:
    with ParquetTraceWriter(path, batch_rows=batch_rows) as writer:
        writer.write(rows)
    return path.read_bytes()


def test_parquet_row_groups_hold_batch_rows(tmp_path, make_rows, make_table):
    rows = make_rows(250)
    path = tmp_path / "trace.parquet"
    with ParquetTraceWriter(path, batch_rows=100) as writer:
        writer.write(rows[:30])
        writer.write(rows[30:])
        assert writer.rows_written == 250
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [100, 100, 50]
    assert read_trace(path).equals(make_table(rows))


def test_parquet_file_has_fixed_codec_and_no_extra_metadata(tmp_path, rows):
    path = _write(tmp_path / "trace.parquet", "parquet", rows)
    meta = pq.ParquetFile(path).metadata
    codecs = {meta.row_group(0).column(c).compression for c in range(meta.num_columns)}
    assert codecs == {PARQUET_COMPRESSION.upper()}
    assert set(meta.metadata) == {b"ARROW:schema", VERSION_KEY.encode()}
    assert meta.metadata[VERSION_KEY.encode()] == str(TRACE_VERSION).encode()


def test_jsonl_lines_are_compact_objects_in_column_order(tmp_path):
    row = Row("r", "A", 5, 0, "view", view="v", members=["A"], transitional=False)
    path = _write(tmp_path / "trace.jsonl", "jsonl", [row])
    text = path.read_text(encoding="utf-8")
    assert text == (
        '{"run":"r","node":"A","t":5,"i":0,"kind":"view","msg":null,"order":null,'
        '"view":"v","members":["A"],"transitional":false,"size":null,"detail":null,'
        '"network":null}\n'
    )
    assert list(json.loads(text)) == list(COLUMNS)


def test_jsonl_keeps_detail_a_json_string(tmp_path):
    row = Row("r", "A", 5, 0, "lock", detail='{"op":"granted"}')
    path = _write(tmp_path / "trace.jsonl", "jsonl", [row])
    assert json.loads(path.read_text(encoding="utf-8"))["detail"] == '{"op":"granted"}'


def test_write_batch_casts_compatible_types_and_drops_extra_columns(tmp_path, rows, make_table):
    expected = make_table(rows)
    batch = pa.table(
        {
            **{name: expected.column(name) for name in COLUMNS},
            "t": expected.column("t").cast(pa.int32()),
            "node": expected.column("node").cast(pa.large_string()),
            "extra": pa.array(range(len(rows))),
        }
    ).to_batches()[0]
    path = tmp_path / "trace.parquet"
    with ParquetTraceWriter(path) as writer:
        writer.write_batch(batch)
    assert read_trace(path).equals(expected)


def test_write_batch_refuses_a_batch_missing_columns(tmp_path, rows, make_table):
    batch = make_table(rows).drop_columns(["kind", "t"]).to_batches()[0]
    with (
        ParquetTraceWriter(tmp_path / "trace.parquet") as writer,
        pytest.raises(TraceSchemaError, match="missing columns: kind, t"),
    ):
        writer.write_batch(batch)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("r", "A", 1, 0), r"row 2: expected 13 values, got 4"),
        (Row("r", "A", "soon", 0, "x"), r"row 2: column 't' expects int64, got str 'soon'"),
        (Row("r", None, 1, 0, "x"), r"row 2: column 'node' must not be null"),
        (Row("r", "A", 1, 0, "x", size=2**40), r"row 2: column 'size' expects int32"),
        (Row("r", "A", 1, 0, "x", members="AB"), r"row 2: column 'members' expects a list"),
        (Row("r", "A", 1, 0, "x", members={"A"}), r"row 2: column 'members' expects a list"),
        (Row("r", "A", 1, 0, "x", detail={"a": 1}), r"row 2: column 'detail' expects string"),
    ],
)
@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_bad_rows_are_named(tmp_path, fmt, row, message):
    good = Row("r", "A", 0, 0, "x")
    writer = open_writer(tmp_path / f"trace.{fmt}", fmt)
    writer.write([good, good])
    writer.write_row(row)
    with pytest.raises(TraceSchemaError, match=message):
        writer.close()
    assert writer.closed


def test_rows_given_as_lists_are_accepted(tmp_path, rows, make_table):
    path = tmp_path / "trace.parquet"
    with ParquetTraceWriter(path) as writer:
        writer.write([list(row) for row in rows])
    assert read_trace(path).equals(make_table(rows))


def test_write_columns_names_missing_and_unknown_columns(tmp_path):
    with (
        ParquetTraceWriter(tmp_path / "trace.parquet") as writer,
        pytest.raises(TraceSchemaError, match="missing columns: detail; unknown columns: extra"),
    ):
        columns = {name: [] for name in COLUMNS if name != "detail"}
        writer.write_columns({**columns, "extra": []})


def test_open_writer_refuses_an_unknown_format(tmp_path):
    with pytest.raises(ValueError, match=r"unknown trace format 'csv': expected one of 'parquet'"):
        open_writer(tmp_path / "trace.csv", "csv")


def test_writing_after_close_is_refused(tmp_path, rows):
    writer = open_writer(tmp_path / "trace.parquet", "parquet")
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(rows)


def test_batch_rows_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="batch_rows"):
        ParquetTraceWriter(tmp_path / "trace.parquet", batch_rows=0)


def test_an_exception_in_the_block_still_closes_a_readable_file(tmp_path, rows, make_table):
    path = tmp_path / "trace.parquet"
    with pytest.raises(RuntimeError), ParquetTraceWriter(path, batch_rows=2) as writer:
        writer.write(rows[:3])
        raise RuntimeError("boom")
    assert writer.closed
    assert read_trace(path).equals(make_table(rows[:2]))


_WRITE_IN_CHILD = """
import sys
from ringcast.trace import Row, encode_detail, make_row, open_writer
rows = [
    make_row("r", "A", k, k, "view", {"view": str(k), "members": ["A", "B"], "seen": {"x", "y"}})
    for k in range(50)
] + [Row("r", "B", 1, 0, "lock", detail=encode_detail({"op": "granted", "who": "B"}))]
for fmt in ("parquet", "jsonl"):
    with open_writer(sys.argv[1] + "." + fmt, fmt) as writer:
        writer.write(rows)
"""


def test_output_is_identical_across_processes(tmp_path):
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        prefix = tmp_path / f"seed{seed}"
        subprocess.run([sys.executable, "-c", _WRITE_IN_CHILD, str(prefix)], check=True, env=env)
        outputs.append(
            (prefix.with_suffix(".parquet").read_bytes(), prefix.with_suffix(".jsonl").read_bytes())
        )
    assert outputs[0] == outputs[1]


def test_a_parquet_trace_names_its_protocol(tmp_path, rows, make_table):
    """Given a protocol, the writer names it in the file's metadata (and nothing else
    changes: the rows read back alike, the same rows and protocol give the same bytes);
    ``trace_protocol`` reads it from the footer. A file written without one, as every
    file was before the key existed, still reads and names none; so does JSON Lines."""
    from ringcast.trace import PROTOCOL_KEY, trace_protocol

    named = tmp_path / "named.parquet"
    with open_writer(named, "parquet", protocol="totem") as writer:
        writer.write(rows)
    meta = pq.ParquetFile(named).metadata.metadata
    assert meta[PROTOCOL_KEY.encode()] == b"totem"
    assert set(meta) == {b"ARROW:schema", PROTOCOL_KEY.encode(), VERSION_KEY.encode()}
    assert trace_protocol(named) == "totem"
    assert read_trace(named).equals(make_table(rows))
    assert named.read_bytes() != _write(tmp_path / "plain.parquet", "parquet", rows).read_bytes()
    with ParquetTraceWriter(tmp_path / "same.parquet", protocol="totem") as writer:
        writer.write(rows)
    assert (tmp_path / "same.parquet").read_bytes() == named.read_bytes()
    assert trace_protocol(tmp_path / "plain.parquet") is None
    assert read_trace(tmp_path / "plain.parquet").equals(make_table(rows))
    jsonl = tmp_path / "t.jsonl"
    with open_writer(jsonl, "jsonl", protocol="totem") as writer:
        writer.write(rows)
    assert trace_protocol(jsonl) is None
    with pytest.raises(ValueError, match="protocol must be a non-empty string"):
        ParquetTraceWriter(tmp_path / "bad.parquet", protocol="")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(TraceSchemaError, match=r"junk\.parquet: not a readable Parquet file"):
        trace_protocol(tmp_path / "junk.parquet")


def test_the_simulator_and_the_runtime_name_their_protocol(tmp_path):
    """Both writers of ringcast's traces give the trace writer their protocol: a
    simulated run's ``trace.parquet`` and a runtime node's segment files name it."""
    from ringcast.runtime.storage import StateStore
    from ringcast.runtime.tracelog import TraceLog
    from ringcast.sim import Simulation, load_scenario
    from ringcast.trace import trace_protocol

    root = Path(__file__).resolve().parents[2]
    result = Simulation(load_scenario(root / "scenarios/raincore/fig13_crash.toml"), seed=1).run()
    assert trace_protocol(result.write(tmp_path / "sim")) == "raincore"
    log = TraceLog(
        tmp_path / "rt",
        run="r",
        node="A",
        fmt="parquet",
        origin_ns=0,
        store=StateStore(tmp_path / "state", fsync=False),
        boot=1,
        protocol="totem",
    )
    log.add(0, "view", view="1", members=["A"], transitional=False)
    log.close()
    (segment,) = sorted((tmp_path / "rt").glob("*.parquet"))
    assert trace_protocol(segment) == "totem"
    assert read_trace(segment).num_rows == 1


def test_a_runtime_row_is_stamped_with_its_events_time_on_the_wall_clock_axis(
    tmp_path: Path,
) -> None:
    """Rows of one event share its time, however long carrying its effects out takes
    (a row after a send used to read the clock again, and could come out later than
    the receiver's row about that packet); the axis is wall time since the origin."""
    from ringcast.runtime.storage import StateStore
    from ringcast.runtime.tracelog import TraceLog

    origin = time.time_ns() - 5_000_000_000
    log = TraceLog(
        tmp_path / "rt",
        run="r",
        node="A",
        fmt="jsonl",
        origin_ns=origin,
        store=StateStore(tmp_path / "state", fsync=False),
        boot=1,
    )
    now = time.monotonic_ns()
    log.add(now, "token", detail='{"op":"sent"}')
    log.add(now, "state")
    stamps = [r[2] for r in log.sink.rows]
    assert stamps[0] == stamps[1]
    # the event's monotonic time, moved onto the run's axis: about 5 s after the origin
    assert 4_000_000_000 < stamps[0] < 60_000_000_000
    log.close()
