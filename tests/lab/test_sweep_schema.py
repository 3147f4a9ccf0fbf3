"""The sweep's Spark schema is the trace's Arrow schema (one source): the same columns,
types and nullability, and what a run's task hands Spark has those columns and types."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from ringcast.lab.grid import RunSpec
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
