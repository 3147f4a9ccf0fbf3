"""Shared sample traces for the trace tests."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from ringcast.trace import SCHEMA, Row


def sample_rows(count: int = 6, run: str = "scenario-1:seed-7") -> list[Row]:
    """``count`` rows cycling through the shapes a trace holds (nulls, lists, unicode)."""
    shapes = [
        lambda k: Row(
            run, "A", k, k, "view", view="3", members=["A", "B", "C"], transitional=False
        ),
        lambda k: Row(run, "B", k, k, "view", view="ring-4", members=[], transitional=True),
        lambda k: Row(run, "A", k, k, "submit", msg=f"A:{k}", order="agreed", size=k % 1000),
        lambda k: Row(
            run, "B", k, k, "deliver", msg=f"A:{k}", order="safe", size=12, detail='{"seq":3}'
        ),
        lambda k: Row(run, "C", k, k, "state", detail='{"from":"idle","to":"gather","é":"ü"}'),
        lambda k: Row(run, "C", k, k, "lock", detail='{"op":"granted"}'),
    ]
    return [shapes[k % len(shapes)](k) for k in range(count)]


def table_of(rows: list[Row]) -> pa.Table:
    """The rows as an Arrow table of the schema, built independently of the writers."""
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in SCHEMA]
    return pa.Table.from_arrays(
        [
            pa.array(list(values), type=field.type)
            for values, field in zip(columns, SCHEMA, strict=True)
        ],
        schema=SCHEMA,
    )


@pytest.fixture
def rows() -> list[Row]:
    return sample_rows()


@pytest.fixture
def make_rows() -> Callable[..., list[Row]]:
    return sample_rows


@pytest.fixture
def make_table() -> Callable[[list[Row]], pa.Table]:
    return table_of
