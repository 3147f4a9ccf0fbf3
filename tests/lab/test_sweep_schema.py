"""The sweep's schemas: its Spark schema is the trace's Arrow schema (one source), with
the same columns, types and nullability, and what a run's task hands Spark has those
columns and types; the sweep file's own keys are typed by a schema whose refusals name
the file, the key and what it should hold."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from ringcast.lab.errors import LabError
from ringcast.lab.grid import RunSpec, parse_sweep
from ringcast.lab.sweep import output_arrow_schema, output_schema, simulate
from ringcast.trace.schema import COLUMNS, NON_NULL, SCHEMA


def test_the_spark_schema_is_the_arrow_schema_and_two_columns() -> None:
    spark = output_schema()
    assert spark.names == [*COLUMNS, "protocol", "scenario"]
    for field in spark.fields:
        assert field.nullable == (field.name not in (*NON_NULL, "protocol", "scenario"))
    s = StringType()
    assert spark == StructType(
        [
            StructField("run", s, False),
            StructField("node", s, False),
            StructField("t", LongType(), False),
            StructField("i", LongType(), False),
            StructField("kind", s, False),
            StructField("msg", s),
            StructField("order", s),
            StructField("view", s),
            StructField("members", ArrayType(s)),
            StructField("transitional", BooleanType()),
            StructField("size", IntegerType()),
            StructField("detail", s),
            StructField("network", IntegerType()),
            StructField("protocol", s, False),
            StructField("scenario", s, False),
        ]
    )


def test_a_run_task_hands_spark_the_output_columns_and_types() -> None:
    document = {
        "name": "tiny",
        "protocol": "basic",
        "nodes": ["A", "B"],
        "duration": "50ms",
        "workload": [{"nodes": ["A"], "rate": 100}],
    }
    spec = RunSpec(
        run="tiny-1",
        protocol="basic",
        scenario="tiny",
        point="tiny",
        params="{}",
        seed=1,
        nodes=2,
        scenario_index=0,
    )
    table = simulate(spec, document)
    assert table.num_rows > 0
    assert "sim_error" not in table.column("kind").to_pylist()
    arrow = output_arrow_schema()
    assert table.schema.names == arrow.names
    assert [f.type for f in table.schema] == [f.type for f in arrow]
    assert arrow.field("network") == SCHEMA.field("network")


GENERATED = {"protocols": ["totem"], "seeds": 1, "generator": {"kind": "hostile"}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": 1}, "s.toml: colour: unknown key (known: "),
        ({"seeds": True}, "s.toml: seeds: expected a positive count or a list of integers >= 0"),
        ({"seeds": [1, -1]}, "s.toml: seeds: expected a positive count or a list of integers"),
        ({"partitions": -1}, "s.toml: partitions: expected an integer >= 0"),
        ({"grid": {"network.loss": []}}, "s.toml: grid: expected a table of non-empty lists"),
        ({"generator": 3}, "s.toml: generator: expected a table"),
        (
            {"generator": {"kind": "hostile", "garble": True}},
            "s.toml: generator.garble: expected a share of messages in [0, 1], got True",
        ),
        ({"generator": {}}, "s.toml: generator.kind: expected one of hostile"),
        ({"expect": [1]}, "s.toml: expect: expected [[expect]] tables"),
        (
            {"expect": [{"protocol": "totem", "violates": "fifo"}]},
            "s.toml: [[expect]] #1: why: missing",
        ),
    ],
)
def test_a_refused_sweep_key_is_named_with_what_it_should_hold(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(LabError) as e:
        parse_sweep({**GENERATED, **change}, "s.toml")
    assert str(e.value).startswith(message)
