"""The lab reads traces of both format versions: version 1 (no ``network`` column) loads
with the column null, alone, beside version 2 files, and as JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ringcast.lab.load import load_traces
from ringcast.sim import Simulation, load_scenario
from ringcast.trace import SCHEMA

ROOT = Path(__file__).resolve().parents[2]


def _version_1(table: pa.Table, path: Path) -> Path:
    """``table`` written as the version 1 writer wrote it: no network, no version key."""
    old = table.drop_columns(["network"]).replace_schema_metadata({"ringcast.protocol": "raincore"})
    pq.write_table(old, path)
    return path


def test_load_reads_version_1_traces_with_network_null(spark: Any, tmp_path: Path) -> None:
    res = Simulation(load_scenario(ROOT / "scenarios/raincore/fig13_crash.toml"), seed=1).run()
    table = res.table()
    assert table.schema.equals(SCHEMA)
    only_old = tmp_path / "old"
    only_old.mkdir()
    _version_1(table, only_old / "trace.parquet")
    df = load_traces(spark, [only_old])
    assert "network" in df.columns
    assert df.count() == table.num_rows
    assert df.where("network is not null").count() == 0
    assert {r.protocol for r in df.select("protocol").distinct().collect()} == {"raincore"}

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _version_1(table, mixed / "a.parquet")
    new = pa.Table.from_pylist(
        [
            {
                **{c: None for c in SCHEMA.names},
                "run": "r2",
                "node": "A",
                "t": 1,
                "i": 0,
                "kind": "send",
                "size": 4,
                "network": 1,
            }
        ],
        schema=SCHEMA,
    ).replace_schema_metadata({"ringcast.protocol": "raincore"})
    pq.write_table(new, mixed / "b.parquet")
    df = load_traces(spark, [mixed])
    assert df.count() == table.num_rows + 1
    assert [r.network for r in df.where("run = 'r2'").collect()] == [1]
    assert df.where("run != 'r2' and network is not null").count() == 0

    jsonl = tmp_path / "old.jsonl"
    rows = table.drop_columns(["network"]).slice(0, 5).to_pylist()
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    df = load_traces(spark, [jsonl], protocol="raincore")
    assert df.count() == 5 and df.where("network is not null").count() == 0


def test_many_json_lines_segments_load_as_one_relation(spark: Any, tmp_path: Path) -> None:
    """A real cluster writes its trace in dozens of small JSON Lines segments; they load
    as one DataFrame (each row once, in their order), not as a union of one a file,
    which every query of a check would plan, and run a task for, file by file."""
    res = Simulation(load_scenario(ROOT / "scenarios/raincore/fig13_crash.toml"), seed=1).run()
    rows = res.table().to_pylist()
    segments = tmp_path / "trace"
    segments.mkdir()
    per = max(1, len(rows) // 20)
    for k in range(0, len(rows), per):
        text = "".join(json.dumps(r) + "\n" for r in rows[k : k + per])
        (segments / f"A.1.{k // per:05d}.jsonl").write_text(text)
    assert len(list(segments.iterdir())) > 10
    df = load_traces(spark, [segments], protocol="raincore")
    assert df.rdd.getNumPartitions() <= spark.sparkContext.defaultParallelism
    got = [(r.run, r.node, r.i) for r in df.select("run", "node", "i").collect()]
    assert got == [(r["run"], r["node"], r["i"]) for r in rows]
